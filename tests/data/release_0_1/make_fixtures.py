"""Write the saved-model fixtures of sparkps 0.1.0, run against release 0.1.0 itself (commit d29f080).

    git -C REPO worktree add /tmp/rel010 d29f080
    cd /tmp/rel010 && PYTHONPATH=/tmp/rel010:/tmp/rel010/tests SPARK_LOCAL_IP=127.0.0.1 \\
        python REPO/tests/data/release_0_1/make_fixtures.py REPO/tests/data/release_0_1
    git -C REPO worktree remove --force /tmp/rel010

Writes, under the output folder: ``feedforward/`` (a FeedForward checkpoint of a tiny MLP), ``spark_model/``
(``SparkModel.save``), ``classifier_pipeline/`` and ``ctr_pipeline/`` (fitted pyspark.ml PipelineModels of
``SparkpsClassifier`` and ``SparkpsCTRClassifier``), ``classifier_estimator_pipeline/`` and
``ctr_estimator_pipeline/`` (the same Pipelines before fitting), ``kvstore_checkpoint/`` (a parameter-server
checkpoint saved by 2 servers) and ``expected.json``: the inputs of a few rows and what 0.1.0 computed for them.
Spark's ``.crc`` and ``_SUCCESS`` files are removed (Spark reads the folders without them).
"""
import json
import os
import shutil
import sys

import numpy as np

import sparkps

PROBE = 5        # rows whose predictions are recorded


def digits(rows=200):
    from sklearn.datasets import load_digits
    data = load_digits()
    X = (data.data / 16.0).astype(np.float32)
    return X[:rows], data.target[:rows].astype(np.float32), X[rows:rows + PROBE]


def mlp():
    sym = sparkps.sym
    net = sym.Variable('data')
    net = sym.Activation(sym.FullyConnected(net, num_hidden=16, name='fc1'), act_type='relu', name='relu1')
    net = sym.FullyConnected(net, num_hidden=10, name='fc2')
    return sym.SoftmaxOutput(net, name='softmax')


def feedforward_and_spark_model(out, expected):
    from sparkps.spark.spark_model import SparkModel
    X, y, probe = digits()
    model = sparkps.FeedForward(mlp(), num_epoch=1, optimizer='sgd', learning_rate=0.1, numpy_batch_size=32,
                                seed=7)
    model.fit(X, y)
    os.makedirs(os.path.join(out, 'feedforward'))
    model.save(os.path.join(out, 'feedforward', 'mlp'), 1)
    expected['feedforward'] = {'prefix': 'feedforward/mlp', 'epoch': 1, 'inputs': probe.tolist(),
                               'outputs': model.predict(probe).astype(np.float64).tolist()}
    spark_model = SparkModel(model.symbol, model.arg_params, model.aux_params, input_shape=(64,), batch_size=16,
                             epoch=1, history=[{'epoch': 0, 'accuracy': 0.5}])
    spark_model.save(os.path.join(out, 'spark_model'))
    expected['spark_model'] = {'path': 'spark_model', 'inputs': probe.tolist(),
                               'outputs': spark_model.predict_numpy(probe).astype(np.float64).tolist()}


def spark_session():
    os.environ.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, OMP_NUM_THREADS='1')
    from pyspark.sql import SparkSession
    session = (SparkSession.builder.master('local[2]').appName('sparkps-0.1.0-fixtures')
               .config('spark.ui.enabled', 'false').config('spark.sql.shuffle.partitions', '2')
               .config('spark.default.parallelism', '2').config('spark.ui.showConsoleProgress', 'false')
               .getOrCreate())
    session.sparkContext.setLogLevel('ERROR')
    return session


def classifier_pipeline(spark, out, expected):
    from pyspark.ml import Pipeline
    from pyspark.ml.linalg import Vectors

    from sparkps.spark.ml import SparkpsClassifier
    X, y, probe = digits()
    train = spark.createDataFrame([(Vectors.dense(x), float(t)) for x, t in zip(X, y)], ['features', 'label'])
    classifier = SparkpsClassifier(layers=[64, 16, 10], numEpochs=1, batchSize=32, learningRate=0.1,
                                   numWorkers=2, numServers=1, seed=3)
    Pipeline(stages=[classifier]).write().overwrite().save(os.path.join(out, 'classifier_estimator_pipeline'))
    model = Pipeline(stages=[classifier]).fit(train.repartition(2))
    model.write().overwrite().save(os.path.join(out, 'classifier_pipeline'))
    rows = model.transform(spark.createDataFrame([(Vectors.dense(x),) for x in probe], ['features'])) \
        .select('probability', 'prediction').collect()
    expected['classifier_pipeline'] = {'path': 'classifier_pipeline', 'inputs': probe.tolist(),
                                       'probability': [r.probability.toArray().tolist() for r in rows],
                                       'prediction': [r.prediction for r in rows]}


def ctr_pipeline(spark, out, expected):
    from pyspark.ml import Pipeline

    from sparkps.spark.ctr import SparkpsCTRClassifier
    from sparkps.train.io.synthetic_ctr import planted_ctr
    data = planted_ctr(400 + PROBE, num_fields=3, num_numeric=1, vocab=8, zipf=1.3, seed=5, deep_scale=0.0)
    rows = [(float(label), str(cats[0]), str(cats[1]), int(rank[2]), None if np.isnan(num[0]) else float(num[0]))
            for label, cats, rank, num in zip(data.labels, data.categorical, data.ranks, data.numeric)]
    rows[-1] = (rows[-1][0], 'a value never seen', rows[-1][2], rows[-1][3], None)
    columns = ['click', 'site', 'app', 'hour', 'count']
    train = spark.createDataFrame(rows[:400], columns).repartition(2)
    classifier = SparkpsCTRClassifier(labelCol='click', categoricalCols=['site', 'app', 'hour'],
                                      numericCols=['count'], model='fm', embeddingDim=4, numEpochs=1,
                                      batchSize=64, learningRate=0.05, numWorkers=2, numServers=1, seed=3)
    Pipeline(stages=[classifier]).write().overwrite().save(os.path.join(out, 'ctr_estimator_pipeline'))
    model = Pipeline(stages=[classifier]).fit(train)
    model.write().overwrite().save(os.path.join(out, 'ctr_pipeline'))
    probe = rows[400:]
    scored = model.transform(spark.createDataFrame(probe, columns)).select('probability', 'prediction').collect()
    expected['ctr_pipeline'] = {'path': 'ctr_pipeline', 'columns': columns, 'rows': [list(r) for r in probe],
                                'probability': [r.probability.toArray().tolist() for r in scored],
                                'prediction': [r.prediction for r in scored]}


SHAPES = {0: (6, 5), 1: (5,), 2: (5, 3), 3: (3,)}


def kvstore_checkpoint(out, expected):
    """Adam on 2 servers, 3 steps, saved; then one more push+pull, whose answer a resumed store must repeat."""
    from cluster import PSCluster
    from sparkps.train import optimizer
    rng = np.random.default_rng(42)
    weights = {k: rng.standard_normal(s).astype(np.float32) for k, s in SHAPES.items()}
    grads = [[rng.standard_normal(SHAPES[k]).astype(np.float32) for k in sorted(SHAPES)] for _ in range(4)]
    keys = sorted(SHAPES)
    path = os.path.join(out, 'kvstore_checkpoint')

    def train_save_and_step(kv):
        kv.init(keys, [weights[k] for k in keys])
        kv.set_optimizer(optimizer.create('adam', learning_rate=0.01))
        saved = {k: np.zeros(SHAPES[k], np.float32) for k in keys}
        for step in range(3):
            kv.push(keys, grads[step])
            kv.pull(keys, out=[saved[k] for k in keys])
        kv.save_checkpoint(path)
        after = {k: np.zeros(SHAPES[k], np.float32) for k in keys}
        kv.pushpull(keys, grads[3], out=[after[k] for k in keys])
        kv.end_training()
        return saved, after

    with PSCluster(num_servers=2, num_workers=1) as cluster:
        ((saved, after),) = cluster.run_workers(train_save_and_step)
    expected['kvstore_checkpoint'] = {
        'path': 'kvstore_checkpoint', 'shapes': {str(k): list(s) for k, s in SHAPES.items()},
        'saved': {str(k): v.astype(np.float64).ravel().tolist() for k, v in saved.items()},
        'gradient': {str(k): g.astype(np.float64).ravel().tolist() for k, g in zip(keys, grads[3])},
        'after_step': {str(k): v.astype(np.float64).ravel().tolist() for k, v in after.items()}}


def drop_spark_extras(out):
    for root, _dirs, files in os.walk(out):
        for name in files:
            if name.endswith('.crc') or name == '_SUCCESS':
                os.remove(os.path.join(root, name))


def main(out):
    assert sparkps.__version__ == '0.1.0', 'run this against release 0.1.0 (commit d29f080)'
    for name in ('feedforward', 'spark_model', 'classifier_pipeline', 'ctr_pipeline', 'kvstore_checkpoint',
                 'classifier_estimator_pipeline', 'ctr_estimator_pipeline'):
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    expected = {'sparkps_version': sparkps.__version__}
    feedforward_and_spark_model(out, expected)
    kvstore_checkpoint(out, expected)
    spark = spark_session()
    try:
        classifier_pipeline(spark, out, expected)
        ctr_pipeline(spark, out, expected)
    finally:
        spark.stop()
    drop_spark_extras(out)
    with open(os.path.join(out, 'expected.json'), 'w', encoding='utf-8') as handle:
        json.dump(expected, handle, indent=1)
        handle.write('\n')


if __name__ == '__main__':
    main(os.path.abspath(sys.argv[1]))

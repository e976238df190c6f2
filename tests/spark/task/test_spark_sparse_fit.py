"""SparkTrainer on sparse models, real Spark local[2], dist_sync with 2 workers and 2 servers: an
``Embedding(sparse_grad=True)`` model and a ``contrib.HashEmbedding`` model over 64-bit ids train to the model
``FeedForward(kvstore='local')`` trains on the same rounds, the tables' statistics show in ``SparkTrainer.status()``
while the job runs, and the model predicts through the broadcast model (RDD rows, ids as they came).

Data: a documented generator — 64 samples of 3 ids from a vocabulary of 20 (numpy Generator seed 0), label =
parity of the id sum; the hashed model's ids are those 20 ids mapped to 64-bit values drawn from seed 1 (most
beyond 2^53, some negative: int64 with the same bits as uint64). ``parallelize(rows, 2)`` gives worker r rows
32r..32r+31.

The reference replays what the cluster computes: worker r's batches are those ``PartitionBatches`` makes of its
partition with seed r (the task's own batching), and round k of dist_sync applies the sum of both workers' k-th
batch gradients with ``rescale_grad = 1 / (8 * 2)``; the local model takes each round's 16 rows as one batch
(``rescale_grad = 1/16``), so every update is the same sum of the same per-sample gradients. They differ only in
the order float32 adds those 16 terms (one 16-row reduction against two 8-row ones summed on the server):
~1e-7 relative per step, hence 1e-5 after 8 steps of lr 0.5 (the same tolerance as the in-process cluster tests
of tests/worker/test_sparse_dist_fit.py).
"""
import threading

import numpy as np
import pytest

import sparkps.symbol as sym
from sparkps.errors import ClusterError, ConfigError, DataError
from sparkps.io import NDArrayIter
from sparkps.rows.values import RowSparse, initial_rows
from sparkps.spark import SparkTrainer
from sparkps.spark.common.batches import iter_batches
from sparkps.spark.task.local_copy import PartitionBatches
from sparkps.train.feedforward import FeedForward
from sparkps.worker.lifecycle import default_initializer

pytestmark = pytest.mark.spark

VOCAB, DIM, FIELDS, BATCH, EPOCHS, WORKERS = 20, 4, 3, 8, 2, 2
IDS = np.random.default_rng(0).integers(0, VOCAB, size=(64, FIELDS))
LABELS = (IDS.sum(axis=1) % 2).astype(np.float32)
HASHED = np.random.default_rng(1).integers(-2 ** 63, 2 ** 63 - 1, size=VOCAB, dtype=np.int64)
OPTIMIZER = {"learning_rate": 0.5}


def classifier(embedded):
    return sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(embedded), num_hidden=2, name="fc"), name="softmax")


def bounded_net():
    return classifier(sym.Embedding(sym.Variable("data"), input_dim=VOCAB, output_dim=DIM, sparse_grad=True,
                                    name="emb"))


def hashed_net():
    return classifier(sym.contrib.HashEmbedding(sym.Variable("data"), output_dim=DIM, name="emb"))


def rows_of(features):
    return [(f, float(label)) for f, label in zip(features, LABELS)]


def rounds(features):
    """(X, y) of every dist_sync round in order: worker 0's k-th batch, then worker 1's."""
    per_worker = []
    for rank in range(WORKERS):
        share = slice(rank * 32, (rank + 1) * 32)
        batches = PartitionBatches(iter(rows_of(features)[share]), BATCH, FIELDS, shuffle=True, seed=rank,
                                   dtype=features.dtype)
        per_worker.append([(X, y) for _ in range(EPOCHS) for X, y, _ in batches.epoch()])
    X = np.concatenate([np.concatenate([w[k][0] for w in per_worker]) for k in range(len(per_worker[0]))])
    y = np.concatenate([np.concatenate([w[k][1] for w in per_worker]) for k in range(len(per_worker[0]))])
    return X, y


def fit_locally(net, features):
    X, y = rounds(features)
    model = FeedForward(net, num_epoch=1, optimizer="sgd", initializer=default_initializer(), seed=0, **OPTIMIZER)
    model.fit(NDArrayIter({"data": X}, y, batch_size=BATCH * WORKERS, shuffle=False), kvstore="local")
    return model


def fit_on_spark(spark, net, features):
    """Fit with SparkTrainer while a driver thread polls ``status()``; returns (model, the statuses seen)."""
    trainer = SparkTrainer(net, (FIELDS,), batch_size=BATCH, num_epoch=EPOCHS, num_workers=WORKERS, num_servers=2,
                           kvstore="dist_sync", optimizer="sgd", optimizer_params=OPTIMIZER, seed=0, progress=False,
                           timeout=180)
    seen, done = [], threading.Event()

    def poll():
        while not done.wait(0.05):
            status = trainer.status()
            if status:
                seen.append(status)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        model = trainer.fit(spark.sparkContext.parallelize(rows_of(features), WORKERS))
    finally:
        done.set()
        poller.join(5)
    return model, seen


def assert_same_model(spark_model, local_model):
    table = spark_model.arg_params["emb_weight"]
    local = local_model.arg_params["emb_weight"]
    assert isinstance(table, RowSparse) and isinstance(local, RowSparse)
    np.testing.assert_array_equal(np.sort(table.ids), np.sort(local.ids))
    order, local_order = np.argsort(table.ids), np.argsort(local.ids)
    assert np.abs(table.rows - initial_rows("emb_weight", table.ids, DIM)).max() > 1e-3     # the rows did train
    np.testing.assert_allclose(table.rows[order], local.rows[local_order], atol=1e-5)
    for name in ("fc_weight", "fc_bias"):
        np.testing.assert_allclose(spark_model.arg_params[name], local_model.arg_params[name], atol=1e-5,
                                   err_msg=name)


def reported_tables(statuses):
    """The table statistics worker 0 reported, from the last status that carried them."""
    with_tables = [s for s in statuses if any("tables" in p for p in (s.get("progress") or {}).values())]
    assert with_tables, "no status() snapshot carried table statistics"
    progress = with_tables[-1]["progress"]
    return next(p["tables"] for p in progress.values() if "tables" in p)


@pytest.mark.parametrize("make_net,features", [(bounded_net, IDS.astype(np.float32)), (hashed_net, HASHED[IDS])],
                         ids=["Embedding(sparse_grad=True)", "contrib.HashEmbedding, 64-bit ids"])
def test_a_sparse_model_fit_on_spark_equals_the_local_model(spark, make_net, features):
    model, statuses = fit_on_spark(spark, make_net(), features)
    local = fit_locally(make_net(), features)
    assert_same_model(model, local)
    assert [h["epoch"] for h in model.history] == list(range(EPOCHS))

    tables = reported_tables(statuses)
    assert set(tables) == {"emb_weight"}
    assert tables["emb_weight"]["rows"] == np.unique(IDS).size == tables["emb_weight"]["admitted"]
    assert tables["emb_weight"]["evicted"] == 0 and tables["emb_weight"]["bytes"] > 0

    test = features[:10]
    predicted = np.stack(model.predict(spark.sparkContext.parallelize(list(test), 2)).collect())
    expected = local.predict({"data": test}) if features.dtype == np.int64 else local.predict(test)
    np.testing.assert_allclose(predicted, expected, atol=1e-5)
    np.testing.assert_allclose(model.predict_numpy(test), expected, atol=1e-5)
    from pyspark.ml.linalg import Vectors
    frame = spark.createDataFrame([(Vectors.dense(row.tolist()),) for row in test], ["features"])
    if features.dtype == np.float32:            # DataFrames carry float32 features: bounded tables only
        scored = np.stack([r.probability.toArray() for r in model.transform(frame).collect()])
        np.testing.assert_allclose(scored, expected, atol=1e-5)
    else:
        with pytest.raises(ConfigError, match="input 'data' holds the 64-bit ids of a hashed embedding table"):
            model.transform(frame)


def test_float_features_for_a_hashed_table_are_one_clear_error(spark):
    trainer = SparkTrainer(hashed_net(), (FIELDS,), batch_size=BATCH, num_epoch=1, num_workers=1, num_servers=1,
                           progress=False, timeout=120)
    rows = [(np.array([1.0, 2.0, 3.0]), 0.0), (np.array([4.0, 5.0, 6.0]), 1.0)]
    with pytest.raises(ClusterError, match=r"^worker 0 \(node \d+\) failed: DataError: row 0: features must be 3 "
                                           r"integer ids \(the network reads them into a hashed embedding table"):
        trainer.fit(spark.sparkContext.parallelize(rows, 1))
    frame = spark.createDataFrame([([1.0, 2.0, 3.0], 0.0), ([4.0, 5.5, 6.0], 1.0)], ["features", "label"])
    with pytest.raises(ClusterError, match=r"^worker 0 \(node \d+\) failed: DataError: column 'features', row 1: id "
                                           r"5\.5 is not an integer \(64-bit ids travel as bigint columns\)"):
        trainer.fit(frame)
    with pytest.raises(DataError, match="row 0: features must be 3 integer ids"):
        list(iter_batches(iter(rows), 2, FIELDS, dtype=np.int64))


def test_int64_ids_replay_bit_for_bit_from_memory_and_from_the_spill_file():
    """Later epochs replay the partition's local copy; 64-bit ids must come back exact in both of its forms."""
    features = HASHED[IDS]
    for spill_bytes in (1 << 30, 64):
        batches = PartitionBatches(iter(rows_of(features)), 16, FIELDS, shuffle=False, dtype=np.int64,
                                   spill_bytes=spill_bytes)
        first = np.concatenate([X for X, _, _ in batches.epoch()])
        replay = np.concatenate([X for X, _, _ in batches.epoch()])
        assert batches.copy.spilled == (spill_bytes == 64)
        assert first.dtype == replay.dtype == np.int64
        np.testing.assert_array_equal(first, features)
        np.testing.assert_array_equal(replay, features)
        batches.close()

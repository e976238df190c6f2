"""The DataFrame barrier stage (``mapInArrow(..., barrier=True)``) on real Spark local[2]: it trains as the RDD stage
does on the same rows (dense features; typed 64-bit ids), with the scheduler on the driver or inside the stage
(rank 0's task, the code path a remote Spark Connect session takes), its results in chunks; a bad id is one error
naming the column and row; the death of the task hosting the scheduler fails the fit and leaves no process."""
import numpy as np
import pytest

from sparkps.errors import ClusterError
from sparkps.spark import SparkTrainer, mlp_symbol
from sparkps.spark.driver.stage import FIT_ENV, processes_with_env

pytestmark = pytest.mark.spark

EDGE_IDS = np.array([2**53 + 1, -2, -(2**63), 2**63 - 1, 2**62 + 7, -(2**40)], np.int64)


def dense(**kw):
    return SparkTrainer(mlp_symbol([6, 8, 2]), (6,), batch_size=16, num_epoch=2, progress=False, timeout=180, seed=5,
                        optimizer_params={"learning_rate": 0.1}, **kw)


def same_params(a, b):
    assert sorted(a) == sorted(b)
    for name in a:
        x, y = a[name], b[name]
        if hasattr(x, "ids"):
            order_x, order_y = np.argsort(x.ids), np.argsort(y.ids)
            np.testing.assert_array_equal(x.ids[order_x], y.ids[order_y])
            x, y = x.rows[order_x], y.rows[order_y]
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-7, err_msg=name)


def test_a_dataframe_trains_as_its_rdd_does_with_the_scheduler_in_the_stage(spark):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(160, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.float32)
    sc = spark.sparkContext
    from_rdd = dense().fit(sc.parallelize([(X[i], float(y[i])) for i in range(len(X))], 2))
    df = spark.createDataFrame(sc.parallelize([(X[i].tolist(), float(y[i])) for i in range(len(X))], 2),
                               ["features", "label"])
    in_stage = dense(scheduler="stage", chunk_bytes=512)       # every result in many chunks
    model = in_stage.fit(df)
    assert in_stage.last_placement == "stage" and in_stage.scheduler_uri is None
    same_params(from_rdd.arg_params, model.arg_params)
    assert [h["epoch"] for h in model.history] == [0, 1]
    # the session still scores MLlib models that keep it in their training summary (a job tag on a classic
    # session made it unserialisable: "Task not serializable: SparkSession$$anon$1")
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.functions import array_to_vector
    frame = df.select(array_to_vector("features").alias("features"), "label")
    lr = LogisticRegression(maxIter=3).fit(frame)
    assert BinaryClassificationEvaluator().evaluate(lr.transform(frame)) > 0.8


def ctr_trainer(**kw):
    import sparkps.nets as nets
    from sparkps.nets.blocks import ctr_initializer
    from sparkps.spark.common.typed_inputs import TypedInputs
    spec = nets.FeatureSpec(categorical=["a", "b"], embedding_dim=4)
    return SparkTrainer(nets.build("fm", spec), None, inputs=TypedInputs(spec.input_parts()), batch_size=8,
                        num_epoch=2, label_name="ctr_label", optimizer="adam", optimizer_params={"learning_rate": 0.05},
                        initializer=ctr_initializer(), eval_metric="logloss", progress=False, timeout=180, seed=2, **kw)


def test_64_bit_ids_train_from_bigint_columns_exactly_as_from_an_rdd_of_typed_rows(spark):
    from sparkps.spark.common.typed_inputs import TypedInputs
    rng = np.random.default_rng(1)
    ids = EDGE_IDS[rng.integers(0, len(EDGE_IDS), size=(64, 2))]
    y = (ids[:, 0] < 0).astype(np.float32)
    sc = spark.sparkContext
    typed = TypedInputs([("ids", 2, "ids")])
    halves = [(typed.rows({"ids": ids[s]}).reshape(-1, 1), y[s]) for s in (slice(0, 32), slice(32, 64))]
    from_rdd = ctr_trainer().fit(sc.parallelize(halves, 2))
    rows = [(ids[i].tolist(), float(y[i])) for i in range(len(y))]
    df = spark.createDataFrame(sc.parallelize(rows, 2), "ids array<bigint>, label float")
    trainer = ctr_trainer()
    model = trainer.fit(df)
    assert trainer.last_placement == "driver"
    same_params(from_rdd.arg_params, model.arg_params)
    seen, counts = model.table_counts["embedding_weight"]
    assert sorted(seen.tolist()) == sorted(set(ids.reshape(-1).tolist()))     # every id exactly, none rounded
    # the servers' count of each id: its occurrences in the training rows, in each of the 2 epochs
    occurrences = dict(zip(*np.unique(ids, return_counts=True)))
    assert {int(v): int(n) for v, n in zip(seen.tolist(), counts.tolist())} == \
        {int(v): 2 * int(n) for v, n in occurrences.items()}
    assert counts.sum() == 2 * ids.size


def test_a_null_id_fails_the_fit_naming_the_column_and_row(spark):
    rows = [([1, 2], 0.0), ([3, 4], 1.0), ([5, None], 0.0), ([7, 8], 1.0)] * 4
    df = spark.createDataFrame(rows, "ids array<bigint>, label float").coalesce(1)
    with pytest.raises(ClusterError, match=r"worker 0 \(node 2\) failed: DataError: column 'ids', row 2: an id is nul"):
        ctr_trainer(num_workers=1).fit(df)


def test_the_death_of_the_task_hosting_the_scheduler_fails_the_fit_and_leaves_no_process(spark):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6)).astype(np.float32)
    df = spark.createDataFrame([(x.tolist(), float(x[0] > 0)) for x in X], ["features", "label"])
    trainer = dense(scheduler="stage")
    trainer.num_epoch = 20
    trainer.fault = {"kill": "worker", "rank": 0, "at_step": 5}
    with pytest.raises(ClusterError, match=r"worker 0 failed"):
        trainer.fit(df)
    assert processes_with_env(FIT_ENV, trainer.last_fit_id) == []


def test_with_checkpoints_the_death_of_the_scheduler_task_restarts_from_the_newest_checkpoint(spark, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6)).astype(np.float32)
    df = spark.createDataFrame([(x.tolist(), float(x[0] > 0)) for x in X], ["features", "label"])
    trainer = dense(scheduler="stage", checkpoint_dir=str(tmp_path), max_restarts=1)
    trainer.num_epoch = 3
    trainer.fault = {"kill": "worker", "rank": 0, "at_step": 20}       # epoch 2 of 3 (13 steps an epoch)
    model = trainer.fit(df)
    restarts = trainer.last_fit["restarts"]
    assert len(restarts) == 1 and restarts[0]["role"] == "worker 0", restarts
    assert restarts[0]["checkpoint"] is not None and restarts[0]["epoch"] >= 1, restarts
    assert [h["epoch"] for h in model.history] == [0, 1, 2]

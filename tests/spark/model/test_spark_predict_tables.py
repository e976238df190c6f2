"""A broadcast CTR model on real Spark (local[2]) builds the lookup store of its sparse tables once per Python
worker process, not per partition or per batch: through ``SparkModel.predict`` (RDD rows, 6 partitions in batches
of 16) and through ``transform`` (a pandas UDF fed Arrow batches of 16 rows). Each task reports, from the process
that predicted, how often that process's predictor built its store and how many calls it served.

Model and data: ``packed_fm`` (tests/packed_fm.py: planted FM clicks, an FM with two tables trained in one process).
"""
import os

import numpy as np
import pytest

from packed_fm import packed_fm

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def trained():
    """(SparkModel with the packed layout, packed training rows)."""
    return packed_fm()


def worker_report(model_id):
    """A function reporting (pid, store builds, calls) of its Python worker's predictor of ``model_id`` (None when
    that process has none); made here so that Spark ships it by value, not as this test module."""
    def report():
        from sparkps.spark.model.predictor import WORKER_PREDICTORS
        predictor = WORKER_PREDICTORS.cached(model_id)
        if predictor is None:
            return None
        return os.getpid(), predictor.table_stores_built, predictor.calls
    return report


def test_rdd_prediction_builds_the_store_once_per_process(spark, trained):
    spark_model, X = trained
    probe = worker_report(spark_model.model_id)
    rows = spark.sparkContext.parallelize([X[i] for i in range(600)], 6)

    def report(outputs):
        count = sum(1 for _ in outputs)        # the partition's predictions, made in this process
        yield count, probe()

    reports = spark_model.predict(rows, batch_size=16).mapPartitions(report).collect()
    assert sum(count for count, _ in reports) == 600
    by_process = {}
    for _, (pid, builds, calls) in reports:
        by_process[pid] = max(by_process.get(pid, (0, 0)), (builds, calls))
    assert all(builds == 1 for builds, _ in by_process.values()), by_process
    assert sum(calls for _, calls in by_process.values()) >= 600 // 16    # every batch went through one of them
    predicted = np.stack(spark_model.predict(rows, batch_size=16).collect())
    np.testing.assert_allclose(predicted, spark_model.predict_numpy(X[:600]), atol=1e-6)


def test_dataframe_transform_builds_the_store_once_per_process(spark, trained):
    from pyspark.ml.linalg import Vectors
    spark_model, X = trained
    frame = spark.createDataFrame([(Vectors.dense(row.tolist()),) for row in X[:200]], ["features"]).repartition(2)
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, "16")
    try:
        scored = spark_model.transform(frame).select("features", "probability").collect()
    finally:
        spark.conf.set(key, before)
    X_back = np.array([r.features.toArray() for r in scored], np.float32)
    np.testing.assert_allclose(np.array([r.probability.toArray() for r in scored]),
                               spark_model.predict_numpy(X_back), atol=1e-6)
    probe = worker_report(spark_model.model_id)
    reports = spark.sparkContext.parallelize(range(8), 8).map(lambda _: probe()).collect()
    seen = {r[0]: r[1:] for r in reports if r is not None}
    assert seen, "no Python worker that ran the transform was asked (Spark did not reuse its workers)"
    assert all(builds == 1 for builds, _ in seen.values()), seen
    assert max(calls for _, calls in seen.values()) > 1      # one store served several Arrow batches

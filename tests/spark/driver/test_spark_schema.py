"""Checks on the driver before any training task starts, in MLlib's words, with rows of the input."""
import logging

import numpy as np
import pytest

from sparkps.errors import ConfigError, DataError
from sparkps.spark import SparkTrainer, mlp_symbol
from sparkps.spark.driver.schema import checked_workers

pytestmark = pytest.mark.spark


def trainer(**kw):
    kw.setdefault("num_workers", 2)
    return SparkTrainer(mlp_symbol([64, 16, 10]), (64,), batch_size=32, num_epoch=1, progress=False,
                        timeout=120, optimizer_params={"learning_rate": 0.1}, **kw)


def frame(spark, X, labels, label_type="double"):
    from pyspark.ml.linalg import Vectors, VectorUDT
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType
    kind = StringType() if label_type == "string" else DoubleType()
    schema = StructType([StructField("features", VectorUDT()), StructField("label", kind)])
    labels = [v if v is None or isinstance(v, str) else float(v) for v in labels]
    return spark.createDataFrame([(Vectors.dense(x), label) for x, label in zip(X, labels)], schema)


class JobCounter:
    """Counts Spark jobs started between enter and exit (through the status tracker)."""

    def __init__(self, sc):
        self.sc = sc

    def __enter__(self):
        self.sc.setJobGroup("schema-check", "counted")
        return self

    def __exit__(self, *exc):
        self.jobs = self.sc.statusTracker().getJobIdsForGroup("schema-check")
        self.sc.setLocalProperty("spark.jobGroup.id", None)


def test_a_string_label_is_refused_in_mlllibs_words_before_any_spark_job(spark, digits):
    df = frame(spark, digits[0][:20], [str(int(v)) for v in digits[1][:20]], "string")
    with JobCounter(spark.sparkContext) as counter:
        with pytest.raises(ConfigError, match=r"Column label must be of type numeric but was actually of type "
                                              r"string\. .*StringIndexer"):
            trainer().fit(df)
    assert counter.jobs == []


def test_features_must_be_a_vector_or_numeric_array(spark):
    df = spark.createDataFrame([("a", 1.0), ("b", 0.0)], ["features", "label"])
    with pytest.raises(ConfigError, match=r"Column features must be of type vector or array<numeric> but was "
                                          r"actually of type string\. .*VectorAssembler"):
        trainer().fit(df)


def test_empty_input_is_refused(spark, digits):
    with pytest.raises(DataError, match="^the training data has no rows$"):
        trainer().fit(frame(spark, digits[0][:0], digits[1][:0]))
    with pytest.raises(DataError, match="^the training data has no rows$"):
        trainer().fit(spark.sparkContext.emptyRDD())


@pytest.mark.parametrize("bad, message", [
    (2.5, r"row 10: label 2\.5 is not a whole number \(1 such labels\) \(labels must be class indices 0\.\.9"),
    (12.0, r"row 10: label 12\.0 is outside \[0, 10\)"),
    (float("nan"), r"row 10: label nan is not a finite number"),
    (None, r"row 10: label None is null")])
def test_a_bad_label_is_named_by_its_row_of_the_input(spark, digits, bad, message):
    labels = [float(v) for v in digits[1][:40]]
    labels[10] = bad
    df = frame(spark, digits[0][:40], labels)
    with pytest.raises(DataError, match=message):
        trainer().fit(df)


def test_string_indexer_metadata_must_agree_with_the_network(spark, digits):
    from pyspark.ml.feature import StringIndexer
    names = ["odd" if v % 2 else "even" for v in digits[1][:30]]
    df = frame(spark, digits[0][:30], names, "string").withColumnRenamed("label", "name")
    indexed = StringIndexer(inputCol="name", outputCol="label").fit(df).transform(df)
    with pytest.raises(ConfigError, match=r"column label has 2 classes \(its StringIndexer metadata\) but the "
                                          r"network predicts 10"):
        trainer().fit(indexed)


def test_fewer_rows_than_workers_trains_fewer_workers_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="sparkps.spark"):
        assert checked_workers(1, 2, 2) == (1, 1)
        assert checked_workers(5, 2, 1) == (2, 1)
    assert "the training data has 1 rows, fewer than the 2 workers asked for" in caplog.text


def test_one_row_fits_with_one_worker(spark, digits):
    model = trainer().fit(frame(spark, digits[0][:1], digits[1][:1]))
    # the model's predictions are its network (64 -> relu 16 -> softmax 10) on the weights the fit returned
    params = {name: np.asarray(value, np.float64) for name, value in model.arg_params.items()}
    X = np.asarray(digits[0][:2], np.float64)
    hidden = np.maximum(X @ params["fc1_weight"].T + params["fc1_bias"], 0)
    logits = hidden @ params["fc2_weight"].T + params["fc2_bias"]
    want = np.exp(logits - logits.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.predict_numpy(digits[0][:2]), want, rtol=1e-4, atol=1e-6)


def test_nan_features_are_named_by_their_row_before_launch(spark, digits):
    X = digits[0][:30].copy()
    X[17, 5] = np.nan
    with pytest.raises(DataError, match=r"^row 17: features are null or hold NaN or infinity \(1 such rows\)"):
        trainer().fit(frame(spark, X, digits[1][:30]))


def test_a_failing_input_lineage_is_one_line_before_launch(spark, digits):
    from pyspark.sql import functions as F

    @F.udf("double")
    def broken(value):
        raise ValueError("the label service is down")

    df = frame(spark, digits[0][:20], digits[1][:20]).withColumn("label", broken("label"))
    with pytest.raises(DataError) as failure:
        trainer().fit(df)
    assert str(failure.value) == "reading the training data failed: ValueError: the label service is down"


def test_features_of_the_wrong_width_are_named_by_their_row_before_launch(spark, digits):
    from pyspark.ml.linalg import Vectors
    rows = [(Vectors.dense(x), float(v)) for x, v in zip(digits[0][:30], digits[1][:30])]
    rows[21] = (Vectors.dense(digits[0][21][:60]), rows[21][1])
    df = spark.createDataFrame(rows, ["features", "label"])
    with pytest.raises(DataError, match=r"^row 21: features hold 60 values but the network takes 64 "
                                        r"\(1 such rows\)$"):
        trainer().fit(df)

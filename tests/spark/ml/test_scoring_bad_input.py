"""Bad input while scoring, on both scoring paths of the same model (its tables inline, and its tables as shard
files, gathered through Spark): a missing model column, a column of another type, nulls, an empty frame.

- a column the model reads that the frame lacks, a numeric column that is not numeric, a multi-valued column that
  is neither an array nor a string, features that are not numbers: one DataError naming the column when
  ``transform`` is called, before any Spark job (never a Java stack);
- nulls follow the documented rule (docs/ctr.md, "Scoring"): a null categorical cell is the field's missing id, a
  null numeric cell is a missing value (standardised to 0, as NaN is), a null multi-valued cell holds no id; both
  paths give every row the same probability to 1e-6;
- a null row of a ``SparkModel``'s features column is one DataError naming the column, raised at the first batch
  that holds it;
- an empty frame scores to an empty frame with the output columns.

Model: a SparkpsCTRClassifier FM fitted on 600 generated rows (two categorical, one numeric, one multi-valued
column) with its tables kept as shard files; its inline twin holds the same rows read from those shards.
"""
import numpy as np
import pytest

from packed_fm import packed_fm
from sparkps.errors import DataError

pytestmark = pytest.mark.spark

COLUMNS = ["i", "click", "site", "app", "hour", "tags"]


def rows(count, seed):
    rng = np.random.default_rng(seed)
    return [(i, float(rng.random() < 0.3), "s%d" % rng.integers(30), "a%d" % rng.integers(20),
             float(rng.integers(0, 24)), ["t%d" % t for t in rng.integers(0, 12, rng.integers(0, 4))])
            for i in range(count)]


@pytest.fixture(scope="module")
def models(spark):
    """(CTR model whose tables are shard files, the same model with its tables inline)."""
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    from sparkps.spark.model.spark_model import SparkModel
    from sparkps.spark.model.table_rows import inline_rows
    frame = spark.createDataFrame(rows(600, 1), COLUMNS).repartition(2)
    sharded = SparkpsCTRClassifier(labelCol="click", categoricalCols=["site", "app"], numericCols=["hour"],
                                   multiValueCols=["tags"], model="fm", embeddingDim=4, numEpochs=1, batchSize=64,
                                   numWorkers=2, numServers=2, validationFraction=0.0, seed=2,
                                   inlineTablesMB=0.0).fit(frame)
    shards = sharded.spark_model
    assert shards.table_manifest
    tables, _ = inline_rows(shards.tables_folder, shards.table_manifest)
    twin = SparkModel(shards.symbol_json, {**shards.arg_params, **tables}, shards.aux_params, shards.input_shape,
                      shards.label_name, shards.batch_size, input_layout=shards.input_layout)
    inline = sharded.copy()
    inline.spark_model = twin
    return sharded, inline


def probabilities(model, frame):
    scored = model.transform(frame).select("i", "probability").collect()
    return np.array([r.probability[1] for r in sorted(scored, key=lambda r: r.i)])


def test_nulls_follow_the_documented_rule_on_both_paths(spark, models):
    sharded, inline = models
    cells = rows(40, 5)
    cells[1] = (1, 0.0, None, "a1", 3.0, ["t1"])            # categorical null: the field's missing id
    cells[2] = (2, 0.0, "s1", "a1", None, ["t1"])           # numeric null: a missing value ...
    cells[3] = (3, 0.0, "s1", "a1", float("nan"), ["t1"])   # ... as NaN is
    cells[4] = (4, 0.0, "s1", "a1", 3.0, None)              # multi-valued null: no id ...
    cells[5] = (5, 0.0, "s1", "a1", 3.0, [])                # ... as an empty list
    cells[6] = (6, 0.0, None, None, None, None)             # every cell null
    cells[7] = (7, 0.0, "s1", "a1", 3.0, ["t1"])            # row 1 with a site
    frame = spark.createDataFrame(cells, "i long, click double, site string, app string, hour double, "
                                         "tags array<string>").repartition(2)
    joined = probabilities(sharded, frame)
    assert joined.shape == (40,) and np.isfinite(joined).all()
    np.testing.assert_allclose(joined, probabilities(inline, frame), atol=1e-6)
    assert joined[2] == pytest.approx(joined[3], abs=1e-7) and joined[4] == pytest.approx(joined[5], abs=1e-7)
    assert joined[1] != pytest.approx(joined[7], abs=1e-9)       # the missing site is an id of its own


@pytest.mark.parametrize("path", ["sharded", "inline"])
@pytest.mark.parametrize("bad, message", [
    ("missing", r"no column\(s\) \['hour'\]"),
    ("numeric", r"numeric column 'hour' has type string"),
    ("multi", r"multi-valued column 'tags' must be an array or a string .* got int"),
])
def test_a_bad_column_is_one_error_naming_it_before_any_job(spark, models, path, bad, message):
    from pyspark.sql import functions as F
    model = dict(zip(["sharded", "inline"], models))[path]
    frame = spark.createDataFrame(rows(10, 7), COLUMNS)
    frame = {"missing": frame.drop("hour"), "numeric": frame.withColumn("hour", F.lit("noon")),
             "multi": frame.withColumn("tags", F.lit(3))}[bad]
    jobs = spark.sparkContext.statusTracker().getJobIdsForGroup()
    with pytest.raises(DataError, match=message):
        model.transform(frame)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup() == jobs      # refused before any Spark job


@pytest.mark.parametrize("path", ["sharded", "inline"])
def test_an_empty_frame_scores_to_an_empty_frame(spark, models, path):
    model = dict(zip(["sharded", "inline"], models))[path]
    frame = spark.createDataFrame([], "i long, click double, site string, app string, hour double, "
                                      "tags array<string>")
    scored = model.transform(frame)
    assert {"probability", "prediction", "rawPrediction"} <= set(scored.columns) and scored.collect() == []


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    """(SparkModel with its tables inline, the same model with its tables as shard files, packed rows)."""
    inline, X = packed_fm()
    return inline, inline.with_sharded_tables(str(tmp_path_factory.mktemp("packed") / "m")), X


def test_features_null_row_wrong_type_and_empty_frame_on_both_paths(spark, packed):
    from pyspark.ml.linalg import Vectors, VectorUDT
    from pyspark.sql.types import LongType, StructField, StructType
    inline, sharded, X = packed
    schema = StructType([StructField("i", LongType()), StructField("features", VectorUDT())])
    cells = [(i, Vectors.dense(row.tolist())) for i, row in enumerate(X[:20])] + [(20, None)]
    with_null = spark.createDataFrame(cells, schema).coalesce(1)
    words = spark.createDataFrame([(0, ["a", "b"])], "i long, features array<string>")
    empty = spark.createDataFrame([], schema)
    for model in (inline, sharded):
        with pytest.raises(Exception, match=r"features column 'features' holds a null row"):
            model.transform(with_null).collect()
        with pytest.raises(DataError, match=r"features column 'features' has type array<string>"):
            model.transform(words)
        scored = model.transform(empty)
        assert "probability" in scored.columns and scored.collect() == []

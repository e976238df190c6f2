"""A model whose tables are shard files scores a DataFrame through Spark SQL (ids exploded per row, joined with the
shards' rows, gathered back per row, the dense network in a pandas UDF): the same probabilities as the same model
with its tables inline, to 1e-6, with the broadcast join and with the shuffle join, for rows whose ids training saw
and rows with ids it never saw (their initial rows); on a classic local[2] session and after save/load; a shard
damaged after load is one DataError naming it and its table when ``transform`` is called, before any task runs.

Model and data: ``packed_fm`` (tests/packed_fm.py: planted FM clicks, an FM with two tables trained in one process).
"""
import numpy as np
import pytest

from packed_fm import PACKED, TABLES, packed_fm
from sparkps.errors import DataError
from sparkps.spark.model.spark_model import SparkModel

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def trained():
    """(inline SparkModel, 120 packed rows: 80 of training, 40 with ids training never saw)."""
    spark_model, X = packed_fm()
    inputs = PACKED.split(X[:40].copy())
    for name in inputs:
        if inputs[name].dtype == np.uint64:
            inputs[name] = inputs[name] + np.uint64(1 << 40)      # ids no table holds
    return spark_model, np.concatenate([X[:80], PACKED.pack(inputs)])


def probabilities(model, frame):
    rows = model.transform(frame).select("i", "probability").collect()
    return np.array([r.probability.toArray() for r in sorted(rows, key=lambda r: r.i)])


def frame_of(spark, X):
    from pyspark.ml.linalg import Vectors
    return spark.createDataFrame([(i, Vectors.dense(row.tolist())) for i, row in enumerate(X)],
                                 ["i", "features"]).repartition(2)


@pytest.mark.parametrize("broadcast_rows", [None, 0])
def test_the_join_path_scores_as_the_inline_path(spark, trained, tmp_path, broadcast_rows):
    spark_model, X = trained
    sharded = spark_model.with_sharded_tables(str(tmp_path / "m"))
    sharded.broadcast_table_rows = broadcast_rows
    frame = frame_of(spark, X)
    expected = probabilities(spark_model, frame)
    np.testing.assert_allclose(probabilities(sharded, frame), expected, atol=1e-6)
    loaded = SparkModel.load(str(tmp_path / "m"))
    np.testing.assert_allclose(probabilities(loaded, frame), expected, atol=1e-6)


def test_a_shard_damaged_after_load_fails_transform_naming_it(spark, trained, tmp_path):
    spark_model, X = trained
    sharded = spark_model.with_sharded_tables(str(tmp_path / "m"))
    shard = tmp_path / "m" / "tables" / TABLES[1] / "server-00000.parquet"
    shard.write_bytes(b"PAR1" + shard.read_bytes()[4:-8])
    with pytest.raises(DataError, match=r"(?s)(%s.*server-00000|server-00000.*%s)" % (TABLES[1], TABLES[1])):
        sharded.transform(frame_of(spark, X))


def executed_plan(frame):
    return frame._jdf.queryExecution().executedPlan().toString()


def test_a_large_table_is_looked_up_by_shard_and_a_store_folder_joins(spark, trained, tmp_path, monkeypatch):
    """Above the broadcast limit the shards are looked up in Python (no table scanned by Spark, so no table row is
    shuffled); where Python cannot open the folder (a Hadoop store) Spark's sort-merge join reads it instead; both
    score as the inline model."""
    from pyspark.sql import functions as F

    from sparkps.spark.model import join_scoring
    from sparkps.spark.model.shard_lookup import partition_keys, spark_int_hash
    hashes = [r[0] for r in spark.range(-3, 40).select(F.hash(F.col("id").cast("int"))).collect()]
    assert hashes == [spark_int_hash(v) for v in range(-3, 40)]       # each shard's pairs in a partition of its own
    assert [spark_int_hash(k) % 8 for k in partition_keys(8)] == list(range(8))
    spark_model, X = trained
    sharded = spark_model.with_sharded_tables(str(tmp_path / "m"))
    sharded.broadcast_table_rows = 0
    frame = frame_of(spark, X)
    expected = probabilities(spark_model, frame)
    looked_up = executed_plan(sharded.transform(frame))
    assert "MapInArrow" in looked_up and "FileScan parquet" not in looked_up
    monkeypatch.setattr(join_scoring, "lookup_by_shard", lambda folder, group: False)
    joined = executed_plan(sharded.transform(frame))
    assert "SortMergeJoin" in joined and "FileScan parquet" in joined
    np.testing.assert_allclose(probabilities(sharded, frame), expected, atol=1e-6)

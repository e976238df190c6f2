"""The data a fit's stage reads, shaped on the driver (sparkps.spark.driver.training_input): exactly one partition
per worker (a coalesced plan is dealt anew: Spark refuses a barrier stage over it), rows tagged with their input
place when a shuffle would lose it, the validation set collected into float32 arrays, and one clear error for data
that is neither an RDD nor a DataFrame. Spark jobs on the shared local[2] session; no training."""
import numpy as np
import pytest

from sparkps.errors import ConfigError, DataError
from sparkps.spark.driver.training_input import dealt, frame_input, partitioned, session_for, validation_arrays


def test_a_frame_is_dealt_unless_it_has_one_uncoalesced_partition_per_worker(spark):
    df = spark.range(40).repartition(2)
    assert dealt(df, 2) is df
    again = dealt(df, 3)
    assert again is not df and again.rdd.getNumPartitions() == 3
    coalesced = spark.range(40).repartition(4).coalesce(2)
    assert coalesced.rdd.getNumPartitions() == 2
    redealt = dealt(coalesced, 2)
    assert redealt is not coalesced and redealt.rdd.getNumPartitions() == 2
    assert sorted(r.id for r in redealt.collect()) == list(range(40))


def test_an_rdd_keeps_its_partitions_or_tags_rows_with_their_place_before_a_shuffle(spark):
    rdd = spark.sparkContext.parallelize(range(6), 2)
    assert partitioned(rdd, 2, tag=True) == (rdd, "partition")
    assert partitioned(rdd, 2) == (rdd, None)
    shuffled, places = partitioned(rdd, 3, tag=True)
    assert places == "tagged" and shuffled.getNumPartitions() == 3
    assert sorted(shuffled.collect()) == [((0, 0), 0), ((0, 1), 1), ((0, 2), 2), ((1, 0), 3), ((1, 1), 4),
                                          ((1, 2), 5)]
    plain, places = partitioned(rdd, 3)
    assert places is None and sorted(plain.collect()) == list(range(6))


def test_a_frame_of_typed_ids_keeps_its_ids_and_is_dealt(spark):
    df = spark.createDataFrame([([1, 2], 0.0, 9.0), ([3, 4], 1.0, 9.0)], "ids array<bigint>, label double, x double")
    frame, reader = frame_input(df, 1, "ids", "label", None, None, None, ids=True, num_features=2)
    assert frame.columns == ["ids", "label"] and frame.rdd.getNumPartitions() == 1
    assert [r.ids for r in frame.collect()] == [[1, 2], [3, 4]] and reader.ids
    with pytest.raises(ConfigError, match=r"no column 'w'"):
        frame_input(df, 1, "ids", "label", "w", None, None, ids=True, num_features=2)


def test_the_validation_set_is_collected_into_float32_arrays(spark):
    rows = [([0.5, 1.5], 1.0), ([2.0, 3.0], 0.0), ([4.0, 5.0], 1.0)]
    X, y = validation_arrays(spark.sparkContext.parallelize(rows, 2), "features", "label", None, None,
                             ids=False, num_features=2)
    np.testing.assert_array_equal(X, np.array([r[0] for r in rows], np.float32))
    np.testing.assert_array_equal(y, [1.0, 0.0, 1.0])
    df = spark.createDataFrame(rows, "features array<double>, label double")
    X, y = validation_arrays(df, "features", "label", None, None, ids=False, num_features=2)
    assert X.dtype == np.float32 and X.shape == (3, 2) and sorted(y.tolist()) == [0.0, 1.0, 1.0]
    with pytest.raises(DataError, match="the validation data has no rows"):
        validation_arrays(df.limit(0), "features", "label", None, None, ids=False, num_features=2)


def test_data_that_is_neither_an_rdd_nor_a_frame_is_one_config_error(spark):
    with pytest.raises(ConfigError, match=r"fit needs an RDD or a DataFrame, got list"):
        session_for([1, 2, 3])
    assert session_for(spark.range(1)) is not None


def test_with_an_order_seed_a_dealt_frame_reads_its_rows_in_an_order_of_the_seed(spark):
    from sparkps.spark.driver.input_rows import row_draw
    rows = [(i, i % 2) for i in range(60)]
    forward = spark.createDataFrame(rows, ["x", "label"]).repartition(3, "x")
    backward = spark.createDataFrame(rows[::-1], ["x", "label"]).repartition(3, "x")

    def parts(df, seed):
        return [[r.x for r in part] for part in dealt(df, 2, order_seed=seed).rdd.glom().collect()]
    first = parts(forward, 0)
    assert first == parts(backward, 0) and sorted(sum(first, [])) == list(range(60))
    draws = dict(spark.createDataFrame(rows, ["x", "label"]).select("x", row_draw(forward, 0, salt=1)).collect())
    assert all(part == sorted(part, key=draws.get) for part in first)
    assert first != parts(forward, 1)

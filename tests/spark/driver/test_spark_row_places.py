"""A bad row of an RDD is named by its place in the whole input, whichever worker reads it."""
import numpy as np
import pytest

from sparkps.errors import ClusterError, DataError
from sparkps.spark import SparkTrainer, mlp_symbol
from sparkps.spark.common.batches import iter_batches
from sparkps.spark.common.row_places import RowPlaces, in_input, tag_rows

pytestmark = pytest.mark.spark


def rows_with_nan_at(X, y, position):
    X = X.copy()
    X[position, 2] = np.nan
    return list(zip(X, y))


def test_a_task_names_a_row_by_its_input_partition_and_index():
    X, y = np.ones((20, 4), np.float32), np.zeros(20, np.float32)
    rows = rows_with_nan_at(X, y, 13)
    with pytest.raises(DataError, match=r"^row 13 of input partition 1: features contain NaN"):
        list(iter_batches(iter(rows), 8, 4, places=RowPlaces(partition=1)))
    shuffled = [tag for tag in tag_rows(2, rows)][::-1]               # arrives in another order
    with pytest.raises(DataError, match=r"^row 13 of input partition 2: features contain NaN"):
        list(iter_batches(iter(shuffled), 8, 4, places=RowPlaces(tagged=True)))
    block = [(X[:5], y[:5]), (np.ones((6, 4), np.float32), y[:6])]
    block[1][0][4, 0] = np.inf
    with pytest.raises(DataError, match=r"^row 4 of the block, element 1 of input partition 0: features"):
        list(iter_batches(iter(block), 4, 4, places=RowPlaces(partition=0)))
    with pytest.raises(DataError, match=r"^row 3: features of shape \(3,\)"):           # no place known
        list(iter_batches(iter([(X[0], 0), (X[1], 0), (X[2], 0), (X[3][:3], 0)]), 8, 4))


def test_the_driver_counts_the_partitions_before_the_failed_one(spark):
    rdd = spark.sparkContext.parallelize(range(30), 3)                 # 10 elements a partition
    assert in_input("worker 0 failed: row 4 of input partition 2: bad", rdd) == "worker 0 failed: row 24: bad"
    assert in_input("row 4 of the block, element 1 of input partition 1: x", rdd) == \
        "row 4 of the block, element 11: x"
    assert in_input("no place here", rdd) == "no place here"


@pytest.mark.parametrize("slices", [2, 3])          # 2: each worker reads one input partition; 3: a shuffle
def test_a_bad_rdd_row_is_named_by_its_input_position(spark, digits, slices):
    X, y = digits[0], digits[1]
    position = 1000                                                    # in the second half of the input
    rdd = spark.sparkContext.parallelize(rows_with_nan_at(X, y, position), slices)
    trainer = SparkTrainer(mlp_symbol([64, 16, 10]), (64,), batch_size=32, num_epoch=1, num_workers=2,
                           progress=False, timeout=120)
    with pytest.raises(ClusterError) as failure:
        trainer.fit(rdd)
    assert "row %d: features contain NaN or infinity" % position in str(failure.value), str(failure.value)
    assert "input partition" not in str(failure.value)

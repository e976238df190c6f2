"""Rows of every supported kind become the same float32 batches; the local copy replays later epochs."""
import numpy as np
import pytest

from sparkps.errors import ConfigError, DataError
from sparkps.spark.common.batches import iter_batches
from sparkps.spark.driver.checks import check_cluster, check_roles, count_task_slots
from sparkps.spark.task.local_copy import PartitionBatches


def _rows_of_every_kind(X, y):
    from pyspark.ml.linalg import Vectors as MLVectors
    from pyspark.mllib.linalg import Vectors as MLlibVectors
    from pyspark.mllib.regression import LabeledPoint
    rows = []
    for i, (x, label) in enumerate(zip(X, y)):
        nz = np.nonzero(x)[0]
        kind = i % 6
        if kind == 0:
            rows.append((x, label))
        elif kind == 1:
            rows.append((x.tolist(), int(label)))
        elif kind == 2:
            rows.append((MLVectors.dense(x), label))
        elif kind == 3:
            rows.append((MLVectors.sparse(len(x), nz, x[nz]), label))
        elif kind == 4:
            rows.append((MLlibVectors.sparse(len(x), nz, x[nz]), label))
        else:
            rows.append(LabeledPoint(label, MLlibVectors.dense(x)))
    return rows


def test_every_row_kind_streams_into_identical_batches_on_spark(spark, digits):
    X, y = digits[0][:300], digits[1][:300]
    rdd = spark.sparkContext.parallelize(_rows_of_every_kind(X, y), 2)

    def to_batches(rows):
        yield from iter_batches(rows, 32, 64)

    batches = rdd.mapPartitions(to_batches).collect()
    assert all(bx.dtype == np.float32 and len(bx) <= 32 for bx, _ in batches)
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), X)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), y)


def test_blocks_and_rows_mix_and_bad_rows_name_themselves(digits):
    X, y = digits[0][:100], digits[1][:100]
    rows = [(X[:45], y[:45]), (X[45], y[45]), (X[46:], y[46:])]
    out = list(iter_batches(iter(rows), 16, 64))
    assert [len(b[0]) for b in out] == [16] * 6 + [4]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in out]), X)
    with pytest.raises(DataError, match="row 2: features of shape"):
        list(iter_batches(iter([(X[0], 1), (X[1], 2), (X[2][:10], 3)]), 8, 64))
    bad = X[:3].copy()
    bad[1, 5] = np.nan
    with pytest.raises(DataError, match="row 1: features contain NaN"):
        list(iter_batches(iter(zip(bad, y)), 8, 64))
    with pytest.raises(DataError, match="row 0: label"):
        list(iter_batches(iter([(X[0], "seven")]), 8, 64))
    with pytest.raises(DataError, match="row 1: features are not numbers: str 'hello'"):
        list(iter_batches(iter([(X[0], 1), ("hello", 2)]), 8, 64))


@pytest.mark.parametrize("spill_bytes", [1 << 30, 4096])
def test_later_epochs_replay_the_local_copy_in_memory_or_memmap(digits, spill_bytes):
    X, y = digits[0][:150], digits[1][:150]
    data = PartitionBatches(iter(zip(X, y)), 64, 64, shuffle=True, seed=1, spill_bytes=spill_bytes)
    first = list(data.epoch())
    assert [pad for _, _, pad in first] == [0, 0, 42]
    second = list(data.epoch())
    assert data.copy.spilled == (spill_bytes == 4096)
    assert [pad for _, _, pad in second] == [0, 0, 42]
    for epoch in (first, second):
        rows = np.concatenate([bx[:64 - pad] for bx, _, pad in epoch])
        labels = np.concatenate([by[:64 - pad] for _, by, pad in epoch])
        order = np.lexsort(rows.T)
        np.testing.assert_array_equal(rows[order], X[np.lexsort(X.T)])
        np.testing.assert_array_equal(np.sort(labels), np.sort(y))
    data.close()
    empty = PartitionBatches(iter([]), 64, 64)
    assert list(empty.epoch()) == [] and list(empty.epoch()) == []


def test_slot_arithmetic_and_the_advice_it_gives():
    assert count_task_slots("local[2]", {}, 2) == 2
    assert count_task_slots("local[*]", {}, 8, cpu_count=4) == 4
    assert count_task_slots("local", {}, 1) == 1
    assert count_task_slots("local-cluster[2,1,1024]", {}, 2) == 2
    assert count_task_slots("spark://h:7077", {"spark.executor.instances": "3", "spark.executor.cores": "4",
                                               "spark.task.cpus": "2"}, 99) == 6
    assert count_task_slots("yarn", {}, 5) == 5
    with pytest.raises(ConfigError, match=r"needs 3 task slots for 3 workers but local\[2\] has 2: "
                                          r"use num_workers <= 2 or more executor cores"):
        check_cluster("local[2]", {}, 2, 3)
    with pytest.raises(ConfigError, match="spark.dynamicAllocation.enabled=false"):
        check_cluster("yarn", {"spark.dynamicAllocation.enabled": "true"}, 8, 2)
    with pytest.raises(ConfigError, match="num_servers=3 > num_workers=2"):
        check_roles(2, 3)


def test_dataframes_become_float32_blocks_or_rows_when_too_wide(spark, digits):
    from pyspark.ml.linalg import Vectors

    from sparkps.spark.common.feature_blocks import blocks_fit, frame_to_blocks
    X, y = digits[0][:500], digits[1][:500]
    df = spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X, y)], ["f", "l"]).repartition(2)
    blocks = frame_to_blocks(df, "f", "l", 64).collect()
    got_X, got_y = np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])
    order, expected = np.lexsort(got_X.T), np.lexsort(X.T)
    np.testing.assert_array_equal(got_X[order], X[expected])
    np.testing.assert_array_equal(got_y[order], y[expected])
    assert blocks_fit(df, 64) and not blocks_fit(df, 1 << 20)
    with pytest.raises(Exception, match="expected 30 per row"):
        frame_to_blocks(df, "f", "l", 30).collect()


def test_roles_bind_loopback_locally_and_the_driver_address_on_clusters():
    from sparkps.spark.driver.checks import is_local, scheduler_host
    assert is_local("local[2]") and is_local("local[*]") and not is_local("local-cluster[2,1,1024]")
    assert scheduler_host("local[2]", {"spark.driver.host": "10.1.2.3"}) == "127.0.0.1"
    assert scheduler_host("yarn", {"spark.driver.host": "localhost"}) == "127.0.0.1"
    with pytest.raises(ConfigError, match="cannot resolve the driver address 'no-such-host.invalid'"):
        scheduler_host("spark://master:7077", {"spark.driver.host": "no-such-host.invalid"})

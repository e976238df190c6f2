"""The row moves of a table's store (``rows/store.py``): a gather and a scatter by slots give what fancy indexing
gives, for float32 and float64 rows, into an ``out`` of another dtype or layout too."""
import numpy as np
import pytest

from sparkps.rows.store import gather_rows, scatter_rows
from sparkps.rows.values import sum_rows


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_gather_and_scatter_move_the_rows_fancy_indexing_moves(dtype):
    rng = np.random.default_rng(0)
    array = rng.normal(size=(50, 6)).astype(dtype)
    slots = rng.permutation(50)[:17].astype(np.int32)
    np.testing.assert_array_equal(gather_rows(array, slots), array[slots])
    out = np.zeros((17, 6), np.float64)[:, :6]
    assert gather_rows(array, slots, out) is out
    np.testing.assert_array_equal(out, array[slots].astype(np.float64))
    rows = rng.normal(size=(17, 6))
    expected = array.copy()
    expected[slots] = rows
    scatter_rows(array, slots, rows)
    np.testing.assert_array_equal(array, expected)
    column = np.asfortranarray(array)
    scatter_rows(column, slots, rows + 1)
    expected[slots] = rows + 1
    np.testing.assert_array_equal(column, expected)


def test_sum_rows_keeps_distinct_uint64_ids_sorted_as_int64_and_sums_repeats():
    ids = np.array([-9, -2, 4], np.int64).view(np.uint64)
    rows = np.ones((3, 2), np.float32)
    kept, same = sum_rows(ids, rows)
    assert kept is ids and same is rows
    merged, summed = sum_rows(np.array([4, 1, 4], np.uint64), np.ones((3, 2), np.float32))
    assert merged.tolist() == [1, 4] and summed.tolist() == [[1, 1], [2, 2]]

"""Row ids, the 64-bit mix, shard choice, row-sparse sums and the id -> slot indexes of sparse tables."""
import numpy as np
import pytest

from sparkps.errors import DataError
from sparkps.rows.ids import mix64, row_ids, shard_of, split_by_server
from sparkps.rows.index import HashRowIndex, SortedRowIndex
from sparkps.rows.values import RowSparse, sum_rows


def test_mix64_is_the_splitmix64_finaliser():
    # splitmix64 seeded with 0 first outputs mix64(0x9E3779B97F4A7C15) = 0xE220A8397B1DCDAF
    assert int(mix64(np.array([0x9E3779B97F4A7C15], np.uint64))[0]) == 0xE220A8397B1DCDAF


def test_the_compiled_index_buckets_by_mix64():
    from sparkps.rows.index import _bucket
    ids = np.array([0, 1, 2 ** 63, 2 ** 64 - 1, 0x9E3779B97F4A7C15], np.uint64)
    mask = np.uint64(2 ** 20 - 1)
    assert [int(_bucket(i, mask)) for i in ids] == (mix64(ids) & mask).astype(np.int64).tolist()


def test_signed_and_unsigned_ids_are_the_same_64_bits():
    signed = row_ids(np.array([-1, -2 ** 63, 5], np.int64), table='t')
    unsigned = row_ids([2 ** 64 - 1, 2 ** 63, 5], table='t')
    assert signed.dtype == np.uint64
    assert signed.tolist() == unsigned.tolist()
    assert row_ids(np.array([7], np.int32), table='t').tolist() == [7]


@pytest.mark.parametrize('ids, words', [
    (np.array([1.0, 2.0]), 'float64'),
    (np.array([1.0, np.nan]), 'NaN'),
    ([1, 2.5], 'float 2.5'),
    ([1, float('nan')], 'NaN'),
    (np.array([True, False]), 'bool'),
    ([2 ** 64], 'not a 64-bit integer'),
])
def test_non_integer_ids_name_the_table_and_field(ids, words):
    with pytest.raises(DataError, match=r"table 'user': field 'ids'.*" + words):
        row_ids(ids, table='user')


def test_bounded_table_refuses_ids_outside_input_dim():
    assert row_ids([0, 9], table='item', input_dim=10).tolist() == [0, 9]
    with pytest.raises(DataError, match=r"table 'item': field 'ids' holds 10, outside input_dim 10"):
        row_ids([3, 10], table='item', input_dim=10)
    with pytest.raises(DataError, match=r"holds -1, outside input_dim"):
        row_ids(np.array([-1]), table='item', input_dim=10)


def test_structured_ids_spread_evenly_over_servers():
    ids = np.arange(0, 3 * 30000, 3, dtype=np.uint64)         # all multiples of the server count
    counts = np.bincount(shard_of(ids, 3), minlength=3)
    assert counts.min() > 0.95 * counts.mean()
    assert np.bincount((ids % 3).astype(np.int64), minlength=3).tolist() == [30000, 0, 0]


def test_split_by_server_groups_every_id_once():
    ids = row_ids(np.arange(-50, 50), table='t')
    order, bounds = split_by_server(ids, 3)
    assert sorted(order.tolist()) == list(range(100))
    for s in range(3):
        assert (shard_of(ids[order[bounds[s]:bounds[s + 1]]], 3) == s).all()


def test_sum_rows_adds_duplicates():
    ids, grads = sum_rows(np.array([9, 4, 9], np.uint64), np.array([[1.0], [2.0], [3.0]], np.float32))
    assert ids.tolist() == [4, 9] and grads.ravel().tolist() == [2.0, 4.0]


def test_row_sparse_add_keeps_repeats_until_merged():
    a = RowSparse([7, 3], np.ones((2, 2), np.float32), (None, 2))
    b = RowSparse(np.array([3], np.uint64), np.full((1, 2), 2.0, np.float32), (None, 2))
    both = a.add(b)
    assert both.ids.tolist() == [7, 3, 3] and both.shape == (None, 2)
    merged = both.merged()
    assert merged.ids.tolist() == [3, 7] and merged.rows.tolist() == [[3.0, 3.0], [1.0, 1.0]]


@pytest.mark.parametrize('index_class', [HashRowIndex, SortedRowIndex])
def test_index_agrees_with_a_dict_through_inserts_removals_and_growth(index_class):
    rng = np.random.default_rng(1)
    index, expected = index_class(capacity=16), {}
    for step in range(40):
        high = 2 ** 64 if step % 2 else 3000
        ids = np.unique(rng.integers(0, high, size=400, dtype=np.uint64))
        found = index.lookup(ids)
        assert found.tolist() == [expected.get(int(i), -1) for i in ids]
        new = ids[found < 0]
        slots = np.arange(len(expected), len(expected) + new.size, dtype=np.int32) + 1000 * step
        index.insert(new, slots)
        expected.update(zip(new.tolist(), slots.tolist()))
        gone = ids[::5]
        assert index.remove(gone) == sum(expected.pop(int(i), None) is not None for i in gone)
        assert len(index) == len(expected)
    ids, slots = index.items()
    assert dict(zip(ids.tolist(), slots.tolist())) == expected

"""A table's id index starts numpy-only and moves to the compiled probes once it holds ``switch_at`` ids, keeping
every entry: lookups, re-inserts and removals answer the same before and after the move."""
import numpy as np

from sparkps.rows.index import GrowingRowIndex, HashRowIndex, SortedRowIndex


def test_the_index_moves_to_the_compiled_probes_at_switch_at_with_every_entry():
    rng = np.random.default_rng(3)
    ids = np.unique(rng.integers(0, 2**63, size=400, dtype=np.uint64) * np.uint64(2))[:300]
    rng.shuffle(ids)
    ids[0] = np.uint64(2**64 - 1)
    index = GrowingRowIndex(switch_at=200)
    index.insert(ids[:150], np.arange(150, dtype=np.int32))
    assert not index.compiled and isinstance(index._index, SortedRowIndex)
    assert index._warming is not None       # half way: the compiled probes load on a thread
    index._warming.join(120)
    assert index.remove(ids[:10]) == 10 and len(index) == 140
    index.insert(ids[150:260], np.arange(150, 260, dtype=np.int32))
    assert index.compiled and isinstance(index._index, HashRowIndex) and len(index) == 250
    expected = np.r_[np.full(10, -1), np.arange(10, 260), np.full(40, -1)].astype(np.int32)
    np.testing.assert_array_equal(index.lookup(ids), expected)
    index.insert(ids[:5], np.arange(900, 905, dtype=np.int32))          # re-inserted after removal
    assert index.remove(ids[250:]) == 10 and len(index) == 245
    held_ids, held_slots = index.items()
    assert dict(zip(held_ids.tolist(), held_slots.tolist())) == {
        **{int(i): s for i, s in zip(ids[10:250], range(10, 250))}, **{int(i): 900 + k for k, i in enumerate(ids[:5])}}

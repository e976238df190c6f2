"""The compiled probes of :class:`~sparkps.rows.index.HashRowIndex`: open addressing with linear probing
over two flat arrays (uint64 ids, int32 slots), compiled with numba (cached: ``kernel_cache``).

Imported only when a table's index grows large enough to use them (``rows.index.GrowingRowIndex``): loading numba
and these kernels costs a process 1-2 s of CPU even from the cache, which a server whose tables stay small never
pays. Not thread-safe, as the index.
"""
import numpy as np

from sparkps.rows.kernel_cache import kernel

EMPTY, DELETED = -1, -2


@kernel(inline='always')
def _bucket(key, mask):
    # sparkps.rows.ids.mix64 (splitmix64's finaliser) of one id, written out so numba compiles it into the probe
    # loops; tests/rows/test_sparse_rows.py checks that it equals mix64
    z = key
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z & mask)


@kernel()
def _lookup(keys, vals, ids, out):
    mask = np.uint64(keys.size - 1)
    for i in range(ids.size):
        key = ids[i]
        b = _bucket(key, mask)
        out[i] = EMPTY
        while vals[b] != EMPTY:
            if vals[b] != DELETED and keys[b] == key:
                out[i] = vals[b]
                break
            b = (b + 1) & np.int64(mask)


@kernel()
def _insert(keys, vals, ids, slots):
    """Set ``ids[i] -> slots[i]``; returns (ids that were new, tombstones reused)."""
    mask = np.uint64(keys.size - 1)
    added = 0
    reused = 0
    for i in range(ids.size):
        key = ids[i]
        b = _bucket(key, mask)
        free = -1
        while vals[b] != EMPTY:
            if vals[b] == DELETED:
                if free < 0:
                    free = b
            elif keys[b] == key:
                break
            b = (b + 1) & np.int64(mask)
        if vals[b] == EMPTY:
            added += 1
            if free >= 0:
                b = free
                reused += 1
        keys[b] = key
        vals[b] = slots[i]
    return added, reused


@kernel()
def _remove(keys, vals, ids):
    mask = np.uint64(keys.size - 1)
    removed = 0
    for i in range(ids.size):
        key = ids[i]
        b = _bucket(key, mask)
        while vals[b] != EMPTY:
            if vals[b] != DELETED and keys[b] == key:
                vals[b] = DELETED
                removed += 1
                break
            b = (b + 1) & np.int64(mask)
    return removed

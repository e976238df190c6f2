"""The batch-local re-index of a training step's ids as one compiled kernel (numba): the sorted unique ids of every
field reading a table, and each id's position among them, written as the executor's float positions.

    unique = batch_positions(ids, padding_id, positions)     # ids: flat int64; positions: float32, same size

It gives exactly what ``np.unique(ids[ids != padding], return_inverse=True)`` gives (unique ids sorted as int64,
the padding id at position -1), in one pass over the ids with an open-addressing hash of them and a sort of the
unique ids only (a batch of 256 rows x 26 fields holds a few thousand distinct ids among 6,656). numba is imported
when this module is (``SparseBatch`` imports it on its first pull) and the kernel read from its on-disk cache.
Nothing here blocks beyond the computation.
"""
import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _unique_positions(ids, padding, has_padding, positions):
    n = ids.size
    bits = 4
    while (1 << bits) < 2 * n:
        bits += 1
    capacity = 1 << bits
    shift = np.uint64(64 - bits)
    keys = np.empty(capacity, np.int64)
    slots = np.full(capacity, -1, np.int64)
    first = np.empty(n, np.int64)
    local = np.empty(n, np.int64)
    count = 0
    for i in range(n):
        v = ids[i]
        if has_padding and v == padding:
            local[i] = -1
            continue
        h = np.int64((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> shift)   # Fibonacci hashing
        while True:
            s = slots[h]
            if s < 0:
                slots[h] = count
                keys[h] = v
                first[count] = v
                local[i] = count
                count += 1
                break
            if keys[h] == v:
                local[i] = s
                break
            h = (h + 1) & (capacity - 1)
    distinct = first[:count]
    order = np.argsort(distinct)
    rank = np.empty(count, np.int64)
    for r in range(count):
        rank[order[r]] = r
    for i in range(n):
        positions[i] = -1 if local[i] < 0 else rank[local[i]]
    return distinct[order]


def batch_positions(ids, padding_id, positions):
    """The sorted distinct ``ids`` (flat int64) other than ``padding_id`` (None: no padding); writes each id's position
    among them into ``positions`` (flat, float32, as long as ``ids``), -1 for the padding id."""
    padding = np.int64(0) if padding_id is None else np.array(padding_id).astype(np.int64)
    return _unique_positions(ids, padding, padding_id is not None, positions)

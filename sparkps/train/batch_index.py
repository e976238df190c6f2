"""The batch-local re-index of a training step's ids as one compiled kernel (numba): the sorted unique ids of every
field reading a table, and each id's position among them, written as the executor's float positions; and the set
of every id a fit has pulled (``IdSet``: the rows its model keeps), added to each step without sorting anything.

    unique = batch_positions(ids, padding_id, positions)     # ids: flat int64; positions: float32, same size
    seen = IdSet(); seen.add(unique); seen.sorted()

It gives exactly what ``np.unique(ids[ids != padding], return_inverse=True)`` gives (unique ids sorted as int64,
the padding id at position -1), in one pass over the ids with an open-addressing hash of them and a radix sort of
the unique ids only (a batch of 256 rows x 26 fields holds a few thousand distinct ids among 6,656). numba is imported
when this module is (``SparseBatch`` imports it on its first pull) and the kernel read from its on-disk cache (the
folder ``rows.kernel_cache`` chooses; uncached where none can be written).
Nothing here blocks beyond the computation.
"""
import numpy as np

from sparkps.rows.kernel_cache import kernel


@kernel(nogil=True, inline="always")
def _slot(v, shift):
    return np.int64((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> shift)   # Fibonacci hashing


@kernel(nogil=True)
def _radix_order(values):
    """The order that sorts int64 ``values`` (a stable LSD radix sort over 8-bit digits, the sign bit flipped so the
    order is the signed one; a digit all values share is skipped): about twice as fast as a comparison sort for the
    few thousand distinct ids of a batch."""
    n = values.size
    keys = np.empty(n, np.uint64)
    for i in range(n):
        keys[i] = np.uint64(values[i]) ^ np.uint64(0x8000000000000000)
    order = np.arange(n)
    spare = np.empty(n, np.int64)
    count = np.empty(257, np.int64)
    for digit in range(8):
        shift = np.uint64(8 * digit)
        count[:] = 0
        for i in range(n):
            count[np.int64((keys[i] >> shift) & np.uint64(255)) + 1] += 1
        top = 0
        for b in range(257):
            top = max(top, count[b])
        if top == n:
            continue
        for b in range(1, 257):
            count[b] += count[b - 1]
        for i in range(n):
            k = order[i]
            d = np.int64((keys[k] >> shift) & np.uint64(255))
            spare[count[d]] = k
            count[d] += 1
        order, spare = spare, order
    return order


@kernel(nogil=True)
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
    order = _radix_order(distinct)
    rank = np.empty(count, np.int64)
    for r in range(count):
        rank[order[r]] = r
    for i in range(n):
        positions[i] = -1 if local[i] < 0 else rank[local[i]]
    return distinct[order]


@kernel(nogil=True)
def _insert(keys, used, shift, ids):
    """Insert ``ids`` into the open-addressing set (``keys``, ``used``); returns how many were new."""
    mask = keys.size - 1
    added = 0
    for i in range(ids.size):
        v = ids[i]
        h = _slot(v, shift)
        while used[h] and keys[h] != v:
            h = (h + 1) & mask
        if not used[h]:
            used[h] = True
            keys[h] = v
            added += 1
    return added


class IdSet:
    """A growing set of int64 ids (open addressing over flat arrays, at most half full): ``add`` costs the ids it is
    given, whatever the set holds; ``sorted()`` sorts once, when the ids are read. Not thread-safe."""

    def __init__(self, ids=None):
        self._keys, self._used, self._shift, self.size = np.empty(0, np.int64), np.zeros(0, np.bool_), 0, 0
        self._reserve(1024)
        if ids is not None:
            self.add(ids)

    def _reserve(self, count):
        if 2 * count <= self._keys.size:
            return
        bits = max(10, int(2 * count - 1).bit_length())
        held = self._keys[self._used]
        self._keys, self._used = np.empty(1 << bits, np.int64), np.zeros(1 << bits, np.bool_)
        self._shift = np.uint64(64 - bits)
        self.size = _insert(self._keys, self._used, self._shift, held)

    def add(self, ids):
        """Add the int64 ``ids`` (any shape, repeats allowed)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)
        self._reserve(self.size + ids.size)
        self.size += _insert(self._keys, self._used, self._shift, ids)

    def sorted(self):
        """The ids held, sorted (a new array)."""
        return np.sort(self._keys[self._used])


def batch_positions(ids, padding_id, positions):
    """The sorted distinct ``ids`` (flat int64) other than ``padding_id`` (None: no padding); writes each id's position
    among them into ``positions`` (flat, float32, as long as ``ids``), -1 for the padding id."""
    padding = 0 if padding_id is None else np.array(padding_id).astype(np.int64).item()
    return _unique_positions(ids, padding, padding_id is not None, positions)


def warm_up():
    """Load (or compile, the first time after an installation) this module's kernels now, for the types a training
    step calls them with."""
    positions = np.empty(2, np.float32)
    batch_positions(np.array([3, -1], np.int64), -1, positions)
    IdSet(np.array([3, 4], np.int64)).sorted()

"""The id -> slot index of a sparse table: which row of the table's arrays holds a 64-bit id.

Three implementations with one interface (``lookup``, ``insert``, ``remove``, ``items``, ``len``, ``nbytes``):

* :class:`HashRowIndex` — open addressing with linear probing over two flat arrays (uint64 ids, int32 slots),
  compiled with numba (``rows.kernels``); 12 bytes a bucket, kept at most 70 % full.
* :class:`SortedRowIndex` — numpy only: sorted ids + ``searchsorted``, new ids in a small sorted side array
  merged in when it grows past 1/8 of the main one.
* :class:`GrowingRowIndex` — the one tables use: a SortedRowIndex until it holds ``SWITCH_AT`` ids (2^18), then a
  HashRowIndex. Loading numba and the compiled probes costs a server process 1-2 s of CPU even from the on-disk
  cache (seconds more on a loaded machine, and a compilation the first time on a machine), which a job whose
  tables stay small (a CTR fit of a few hundred thousand distinct values) no longer pays as it starts.

``benchmarks/bench_sparse.py`` compares the first two (docs/benchmarks.md): at 10M ids the compiled table looks up
a batch's ids several times faster than ``searchsorted``, and inserting new ids does not re-merge the whole array,
which is why numba is a dependency. No index is thread-safe; the server calls it from one thread.

>>> index = GrowingRowIndex()
>>> index.insert(np.array([7, 2**64 - 1], np.uint64), np.array([0, 1], np.int32))
>>> index.lookup(np.array([2**64 - 1, 5], np.uint64)).tolist()
[1, -1]
"""
import threading

import numpy as np

EMPTY, DELETED = -1, -2
_MAX_LOAD = 0.7
SWITCH_AT = 1 << 18     # ids a GrowingRowIndex holds before it moves to the compiled probes


def __getattr__(name):
    """The compiled probes (``_bucket``, ``_lookup``, ``_insert``, ``_remove``) live in ``rows.kernels``, imported on
    first use."""
    if name in ("_bucket", "_lookup", "_insert", "_remove"):
        from sparkps.rows import kernels as row_kernels
        return getattr(row_kernels, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def _as_ids(ids):
    return np.ascontiguousarray(ids, dtype=np.uint64)


def warm():
    """Load the compiled index functions now (from the kernel cache, :mod:`~sparkps.rows.kernel_cache`;
    compiled once per machine), so that the 1-2 s numba takes to load them (more to compile them the first time)
    does not hold up a request. Blocks until they are loaded; :class:`GrowingRowIndex` calls it on a thread of its
    own when a table is half way to ``SWITCH_AT`` ids."""
    index = HashRowIndex(4)
    ids = np.array([1, 2], np.uint64)
    index.insert(ids, np.array([0, 1], np.int32))
    index.lookup(ids)
    index.remove(ids[:1])


class HashRowIndex:
    """Open-addressing id -> slot map over flat arrays (numba-compiled probes); see the module docstring."""

    def __init__(self, capacity=1024):
        from sparkps.rows import kernels as row_kernels
        self._kernels = row_kernels
        buckets = 1 << max(4, int(np.ceil(np.log2(max(capacity, 1) / _MAX_LOAD))))
        self._keys = np.zeros(buckets, np.uint64)
        self._vals = np.full(buckets, EMPTY, np.int32)
        self._size = 0
        self._used = 0  # live entries + tombstones: what probing sees

    def __len__(self):
        return self._size

    @property
    def nbytes(self):
        """Bytes held by the index arrays."""
        return self._keys.nbytes + self._vals.nbytes

    def lookup(self, ids):
        """Slot of each id, -1 where the id is absent (int32 array)."""
        ids = _as_ids(ids)
        out = np.empty(ids.size, np.int32)
        self._kernels._lookup(self._keys, self._vals, ids, out)
        return out

    def insert(self, ids, slots):
        """Map ``ids[i]`` to ``slots[i]`` (an id already present gets the new slot). Ids must be distinct."""
        ids = _as_ids(ids)
        self._reserve(ids.size)
        added, reused = self._kernels._insert(self._keys, self._vals, ids,
                                              np.ascontiguousarray(slots, dtype=np.int32))
        self._size += added
        self._used += added - reused

    def remove(self, ids):
        """Forget ``ids`` (absent ids are ignored); returns how many were present."""
        removed = self._kernels._remove(self._keys, self._vals, _as_ids(ids))
        self._size -= removed
        return removed

    def items(self):
        """``(ids, slots)`` of every entry, in bucket order (new arrays)."""
        live = self._vals >= 0
        return self._keys[live].copy(), self._vals[live].copy()

    def _reserve(self, extra):
        if self._used + extra <= _MAX_LOAD * self._keys.size:
            return
        buckets = self._keys.size
        while (self._size + extra) > _MAX_LOAD * buckets:
            buckets *= 2
        ids, slots = self.items()
        self._keys = np.zeros(buckets, np.uint64)
        self._vals = np.full(buckets, EMPTY, np.int32)
        self._kernels._insert(self._keys, self._vals, ids, slots)
        self._used = self._size = ids.size


class SortedRowIndex:
    """numpy-only id -> slot map: sorted ids + ``searchsorted``, with a side array merged in periodically."""

    def __init__(self, capacity=0):
        self._ids = np.zeros(0, np.uint64)
        self._slots = np.zeros(0, np.int32)
        self._new_ids = np.zeros(0, np.uint64)
        self._new_slots = np.zeros(0, np.int32)
        self._size = 0

    def __len__(self):
        return self._size

    @property
    def nbytes(self):
        """Bytes held by the index arrays."""
        return self._ids.nbytes + self._slots.nbytes + self._new_ids.nbytes + self._new_slots.nbytes

    @staticmethod
    def _find(sorted_ids, ids):
        pos = np.searchsorted(sorted_ids, ids)
        pos[pos == sorted_ids.size] = 0
        hit = sorted_ids[pos] == ids if sorted_ids.size else np.zeros(ids.size, bool)
        return pos, hit

    def lookup(self, ids):
        """Slot of each id, -1 where the id is absent (int32 array)."""
        ids = _as_ids(ids)
        out = np.full(ids.size, EMPTY, np.int32)
        pos, hit = self._find(self._ids, ids)
        out[hit] = self._slots[pos[hit]]
        if self._new_ids.size and not hit.all():   # an id is in one array only: the side array holds the rest
            miss = np.flatnonzero(~hit)
            pos, hit = self._find(self._new_ids, ids[miss])
            out[miss[hit]] = self._new_slots[pos[hit]]
        out[out < 0] = EMPTY
        return out

    def insert(self, ids, slots):
        """Map ``ids[i]`` to ``slots[i]`` (an id already present gets the new slot). Ids must be distinct."""
        ids, slots = _as_ids(ids), np.asarray(slots, dtype=np.int32)
        for sorted_ids, table in ((self._ids, self._slots), (self._new_ids, self._new_slots)):
            pos, hit = self._find(sorted_ids, ids)
            self._size += int(np.count_nonzero(hit & (table[pos] < 0))) if hit.any() else 0
            table[pos[hit]] = slots[hit]
            ids, slots = ids[~hit], slots[~hit]
        self._size += ids.size
        merged_ids = np.concatenate([self._new_ids, ids])
        order = np.argsort(merged_ids, kind='stable')
        self._new_ids = merged_ids[order]
        self._new_slots = np.concatenate([self._new_slots, slots])[order]
        if self._new_ids.size > max(4096, self._ids.size // 8):
            self._merge()

    def _merge(self):
        # both arrays are sorted and share no id (insert reuses an id's entry where it is): one linear merge
        live, new_live = self._slots >= 0, self._new_slots >= 0
        ids, slots = self._ids[live], self._slots[live]
        new_ids, new_slots = self._new_ids[new_live], self._new_slots[new_live]
        where = np.searchsorted(ids, new_ids)
        self._ids, self._slots = np.insert(ids, where, new_ids), np.insert(slots, where, new_slots)
        self._new_ids, self._new_slots = np.zeros(0, np.uint64), np.zeros(0, np.int32)

    def remove(self, ids):
        """Forget ``ids`` (absent ids are ignored); returns how many were present."""
        ids = _as_ids(ids)
        removed = 0
        for sorted_ids, slots in ((self._ids, self._slots), (self._new_ids, self._new_slots)):
            if not sorted_ids.size:
                continue
            pos, hit = self._find(sorted_ids, ids)
            hit &= slots[pos] >= 0
            slots[pos[hit]] = DELETED
            removed += int(np.count_nonzero(hit))
        self._size -= removed
        return removed

    def items(self):
        """``(ids, slots)`` of every entry (new arrays)."""
        ids = np.concatenate([self._ids, self._new_ids])
        slots = np.concatenate([self._slots, self._new_slots])
        live = slots >= 0
        return ids[live], slots[live]


class GrowingRowIndex:
    """A :class:`SortedRowIndex` until it holds ``switch_at`` ids, then a :class:`HashRowIndex` holding the same
    entries (see the module docstring); at half of ``switch_at`` the compiled probes start loading on a thread, so
    the switch rarely waits for them. ``compiled`` tells which one it is now."""

    def __init__(self, capacity=0, switch_at=SWITCH_AT):
        self.switch_at = switch_at
        self._index = SortedRowIndex(capacity)
        self.compiled = False
        self._warming = None      # the thread loading the compiled probes, started at half of switch_at

    def __len__(self):
        return len(self._index)

    @property
    def nbytes(self):
        """Bytes held by the index arrays."""
        return self._index.nbytes

    def lookup(self, ids):
        """Slot of each id, -1 where the id is absent (int32 array)."""
        return self._index.lookup(ids)

    def insert(self, ids, slots):
        """Map ``ids[i]`` to ``slots[i]`` (an id already present gets the new slot). Ids must be distinct."""
        self._index.insert(ids, slots)
        if self.compiled:
            return
        if len(self._index) >= self.switch_at:
            held_ids, held_slots = self._index.items()
            index = HashRowIndex(2 * held_ids.size)
            index.insert(held_ids, held_slots)
            self._index, self.compiled = index, True
        elif len(self._index) >= self.switch_at // 2 and self._warming is None:
            self._warming = threading.Thread(target=warm, name="sparkps-warm-row-index", daemon=True)
            self._warming.start()

    def remove(self, ids):
        """Forget ``ids`` (absent ids are ignored); returns how many were present."""
        return self._index.remove(ids)

    def items(self):
        """``(ids, slots)`` of every entry (new arrays)."""
        return self._index.items()

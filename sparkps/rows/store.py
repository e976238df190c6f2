"""The arrays of a sparse table: rows, optimizer state and per-row counters, indexed by slot.

Every per-row quantity is one array with a row per slot, never an object per row (docs/architecture.md, decision 13).
Capacity grows in chunks of ``chunk_rows`` (or 1/8 of what is held, whichever is larger) with
``ndarray.resize``, which large allocations on Linux extend by remapping pages rather than copying. Freed
slots (evicted rows) are reused before the arrays grow.

Per slot: ``ids`` (uint64), ``values`` and each ``states[k]`` (float32 unless the table says otherwise, dim
wide), ``updates`` (uint32: how often the optimizer changed the row; adam's step count), ``seen`` (float32:
occurrences, the table's one count of them, decayed to ``last_seen`` when the table decays counts),
``last_seen`` (int32: the table step of the last pull that named it) and ``changed`` (bool: changed since the
last save).

>>> store = RowStore(dim=4, num_states=1, chunk_rows=8)
>>> slots = store.allocate(3)
>>> slots.tolist(), store.values.shape
([0, 1, 2], (8, 4))
"""
import numpy as np

COLUMNS = ('ids', 'updates', 'seen', 'last_seen', 'changed')
_DTYPES = {'ids': np.uint64, 'updates': np.uint32, 'seen': np.float32, 'last_seen': np.int32,
           'changed': np.bool_}


def gather_rows(array, slots, out=None):
    """The rows of ``array`` at ``slots`` (valid slots: a table's own), into ``out`` when given: ``np.take`` along
    the rows, a third of the time of ``array[slots]`` (``mode='clip'``, which writes into ``out`` unbuffered)."""
    if out is None or (out.dtype == array.dtype and out.flags.c_contiguous
                       and out.shape == (len(slots),) + array.shape[1:]):
        return np.take(array, slots, axis=0, out=out, mode='clip')
    out[...] = np.take(array, slots, axis=0, mode='clip')
    return out


def scatter_rows(array, slots, rows):
    """``array[slots] = rows`` for distinct ``slots`` of a C-contiguous (n, dim) ``array``: each row moved as one
    item (a void view of its bytes), which numpy scatters in about half the time of a row of floats."""
    rows = np.ascontiguousarray(rows, dtype=array.dtype)
    if array.ndim != 2 or not array.flags.c_contiguous or rows.shape[1:] != array.shape[1:]:
        array[slots] = rows
        return
    item = np.dtype((np.void, array.shape[1] * array.itemsize))
    array.view(item).reshape(-1)[slots] = rows.view(item).reshape(-1)


class RowStore:
    """The slot-indexed arrays of one table (rows, optimizer state, per-row counters); its one role is storage:
    which id a slot holds is the index's business, what a row means is the table's. ``dtype`` is the rows' and
    states' (float32 on a server; a local table keeps the dtype of the rows it was given). Not thread-safe."""

    def __init__(self, dim, num_states, chunk_rows=1024, dtype=np.float32):
        self.dim = int(dim)
        self.chunk_rows = int(chunk_rows)
        self.values = np.zeros((0, self.dim), dtype)
        self.states = [np.zeros((0, self.dim), dtype) for _ in range(num_states)]
        for column in COLUMNS:
            setattr(self, column, np.zeros(0, _DTYPES[column]))
        self._top = 0                          # slots [0, top) have been handed out at least once
        self._free = np.zeros(0, np.int32)     # released slots below top

    @property
    def capacity(self):
        """Slots the arrays hold now."""
        return self.values.shape[0]

    @property
    def rows(self):
        """Rows held (slots handed out and not released)."""
        return self._top - self._free.size

    @property
    def high_water(self):
        """Slots handed out at least once: slots in use are below it."""
        return self._top

    @property
    def nbytes(self):
        """Bytes of every array (allocated capacity, not only rows in use)."""
        total = self.values.nbytes + sum(s.nbytes for s in self.states) + self._free.nbytes
        return total + sum(getattr(self, c).nbytes for c in COLUMNS)

    def allocate(self, n):
        """Hand out ``n`` slots (freed ones first), zeroed; returns an int32 array. Grows the arrays if needed."""
        reuse = min(n, self._free.size)
        slots = np.empty(n, np.int32)
        slots[:reuse] = self._free[self._free.size - reuse:]
        self._free = self._free[:self._free.size - reuse]
        fresh = n - reuse
        if self._top + fresh > self.capacity:
            self._grow(self._top + fresh)
        slots[reuse:] = np.arange(self._top, self._top + fresh, dtype=np.int32)
        self._top += fresh
        self.clear(slots[:reuse])          # slots never used before are still zero from the resize
        return slots

    def reserve(self, rows):
        """Make room for ``rows`` rows in all (one resize instead of many when the count is known)."""
        if rows > self.capacity:
            self._grow(rows, exact=True)

    def clear(self, slots):
        """Zero every array at ``slots``."""
        self.values[slots] = 0.0
        for state in self.states:
            state[slots] = 0.0
        for column in COLUMNS:
            getattr(self, column)[slots] = 0

    def release(self, slots):
        """Give ``slots`` back for reuse (their contents are cleared on the next ``allocate``)."""
        self._free = np.concatenate([self._free, np.asarray(slots, np.int32)])

    def live_slots(self):
        """Slots in use, ascending (int32)."""
        used = np.ones(self._top, bool)
        used[self._free] = False
        return np.flatnonzero(used).astype(np.int32)

    def _grow(self, need, exact=False):
        step = max(self.chunk_rows, self.capacity // 8)
        new = need if exact else max(need, self.capacity + step)
        new = -(-new // self.chunk_rows) * self.chunk_rows
        self.values.resize((new, self.dim), refcheck=False)
        for state in self.states:
            state.resize((new, self.dim), refcheck=False)
        for column in COLUMNS:
            getattr(self, column).resize(new, refcheck=False)

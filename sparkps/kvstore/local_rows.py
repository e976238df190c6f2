"""RowTable: a row-sparse key of the local kvstore — sorted 64-bit ids, their rows and optimizer state rows.

A bounded table (``Embedding(input_dim=...)``) is usually initialised with all its rows; a hashed table starts
empty and creates a row on the first pull that names it, from the one row initializer (``sparkps.rows.init``, the
servers' too), so the first value of a row depends only on (table, id) and the table's ``init``. Lookups are
``searchsorted`` over the sorted ids; a batch's new ids are merged into that index at once, their rows appended to
arrays that grow in chunks; never one Python object per row.

Updates are lazy, as MXNet's and TensorFlow's sparse updates: only the rows a gradient names change, each with
its own optimizer state rows and its own update count. They run through the per-row kernels the servers' tables
use (``sparkps/optimizer/rowwise.py``), so adam's bias correction counts a row's own updates, not the
table's pushes, and the optimizers a table takes are the servers' (others: ConfigError naming the table).
Ids are checked once where they enter (``row_sparse_pull``, and a pushed gradient's bounds); the table's
methods take the checked int64 ids. Nothing here blocks.

    table = RowTable('user', RowSparse(ids=[], rows=np.empty((0, 8), np.float32), shape=(None, 8)))
    rows = table.pull(np.array([12, 99999999999]))       # created on first pull
    table.push(RowSparse([12], grad_rows, (None, 8)), optimizer)
"""
import numpy as np

from sparkps.errors import ConfigError, ShapeError
from sparkps.optimizer.finite import check_pushed
from sparkps.optimizer.rowwise import RowOptimizer, follow_job_scaling
from sparkps.rows.config import TableConfig, table_config
from sparkps.rows.ids import in_bounds, row_ids
from sparkps.rows.init import RowInitializer
from sparkps.rows.values import RowSparse


class RowTable:
    """The rows of one table held in this process. ``shape`` is (rows or None, dim); ``config`` its TableConfig
    (the initializer of the rows created on first pull, and its own optimizer, if any).

    Rows (and optimizer state rows) sit in arrays that double their capacity when full, a new row at the end;
    the id index is the sorted ids with each one's slot, merged with a batch's new ids in one ``np.insert``
    (16 bytes a held row move, never the rows themselves). Each row also keeps its optimizer update count."""

    def __init__(self, key, value, config=None):
        merged = value.merged()
        self.key, self.shape = key, value.shape
        self.configure(config or TableConfig(key, dim=value.dim, input_dim=value.shape[0]))
        self.checked_bounds(merged.ids)
        self._sorted_ids = merged.ids.copy()
        self._sorted_slots = np.arange(merged.ids.size, dtype=np.int64)
        self._rows = np.array(merged.rows, copy=True)
        self._count = merged.ids.size
        self.state = None          # None until the first optimizer push; then a tuple of row-aligned arrays
        self._updates = np.zeros(self._rows.shape[0], np.int64)
        self._optimizer = None     # the optimizer the state belongs to, and its per-row form
        self._rowwise = None
        self.read_only = False     # a prediction's table: unseen ids read their initial rows, never stored

    def configure(self, config):
        """Take ``config`` (a TableConfig): its row initializer and its own optimizer, used instead of the job's."""
        from sparkps.optimizer.base import from_config
        self.config = config
        self.init = RowInitializer.from_config(config.init)
        self.own_optimizer = None if config.optimizer is None else from_config(config.optimizer)
        self.own_clip = None if self.own_optimizer is None else self.own_optimizer.clip_gradient

    @property
    def dim(self):
        return self.shape[1]

    @property
    def rows(self):
        """The held rows, in slot order (a view)."""
        return self._rows[:self._count]

    def __len__(self):
        return int(self._count)

    def checked_bounds(self, ids):
        """Checked int64 ``ids`` when a bounded table holds them all; DataError naming the table otherwise."""
        return in_bounds(ids, self.shape[0], f"table {self.key!r}")

    def checked_ids(self, ids):
        """``ids`` where they enter (a pull): flat int64 (uint64 taken bit for bit); DataError naming this table and
        the field ``'ids'`` for float (NaN included) or other non-integer ids, which are refused, never truncated,
        and for ids outside a bounded table."""
        return self.checked_bounds(row_ids(ids, self.key).view(np.int64))

    def slots(self, ids):
        """Row slots of checked ``ids`` (int64, may repeat), creating the rows not held yet."""
        pos = np.searchsorted(self._sorted_ids, ids)
        found = pos < self._sorted_ids.size
        found[found] = self._sorted_ids[pos[found]] == ids[found]
        if not found.all():
            self._create(np.unique(ids[~found]))
            pos = np.searchsorted(self._sorted_ids, ids)
        return self._sorted_slots[pos]

    def _create(self, new_ids):
        first, count = self._count, new_ids.size
        self._reserve(first + count)
        new_rows = self.init.rows(self.key, new_ids, self.dim, self._rows.dtype)
        self._rows[first:first + count] = new_rows
        for full in self.state or ():
            full[first:first + count] = 0
        self._updates[first:first + count] = 0
        where = np.searchsorted(self._sorted_ids, new_ids)
        self._sorted_ids = np.insert(self._sorted_ids, where, new_ids)
        self._sorted_slots = np.insert(self._sorted_slots, where, np.arange(first, first + count, dtype=np.int64))
        self._count = first + count

    def _reserve(self, needed):
        capacity = self._rows.shape[0]
        if needed <= capacity:
            return
        capacity = max(needed, 2 * capacity, 1024)
        self._rows = _grown(self._rows, capacity, self._count)
        self._updates = _grown(self._updates, capacity, self._count)
        if self.state:
            self.state = tuple(_grown(s, capacity, self._count) for s in self.state)

    def _read(self, ids):
        """The rows of checked ``ids`` without creating any: a held row, else the row the id would be created with."""
        held = self._sorted_ids.size
        pos = np.searchsorted(self._sorted_ids, ids)
        found = pos < held
        found[found] = self._sorted_ids[pos[found]] == ids[found]
        rows = np.empty((ids.size, self.dim), self._rows.dtype)
        rows[found] = self._rows[self._sorted_slots[pos[found]]]
        if not found.all():
            rows[~found] = self.init.rows(self.key, ids[~found], self.dim, self._rows.dtype)
        return rows

    def pull(self, ids, out=None):
        """The rows of checked ``ids`` in their order (created on first pull, unless the table is ``read_only``), copied
        into ``out`` when given."""
        if self.read_only:
            rows = self._read(ids)
            if out is None:
                return rows
            if tuple(out.shape) != rows.shape:
                raise ShapeError(f"row_sparse_pull: table {self.key!r} gives {rows.shape[0]} rows of width "
                                 f"{self.dim}, out has shape {tuple(out.shape)}")
            out[...] = rows
            return out
        slots = self.slots(ids)
        if out is None:
            return self._rows[slots]
        if tuple(out.shape) != (slots.size, self.dim):
            raise ShapeError(f"row_sparse_pull: table {self.key!r} gives {slots.size} rows of width {self.dim}, "
                             f"out has shape {tuple(out.shape)}")
        if out.dtype == self._rows.dtype and out.flags.c_contiguous:
            np.take(self._rows, slots, axis=0, out=out)
        else:
            out[...] = self._rows[slots]
        return out

    def push(self, grad, optimizer=None):
        """Apply a row-sparse gradient (repeated ids summed first): ``optimizer``'s per-row update on the named rows,
        their state and update counts, or, without an optimizer, replace those rows by ``grad``'s. A new optimizer
        starts every row's state and count afresh."""
        if self.read_only:
            raise ConfigError(f"table {self.key!r} is read-only (a prediction's table); it takes no pushes")
        if grad.dim != self.dim:
            raise ShapeError(f"table {self.key!r} has rows of width {self.dim}, the gradient has width {grad.dim}")
        grad = grad.merged()
        if grad.ids.size == 0:
            return
        self.checked_bounds(grad.ids)
        slots = self.slots(grad.ids)
        if optimizer is None:
            self._rows[slots] = grad.rows
            return
        if self.state is None or self._optimizer is not optimizer:
            self._rowwise = RowOptimizer(optimizer, table=self.key)
            self.state = tuple(self._rowwise.create_state(*self._rows.shape, dtype=self._rows.dtype))
            self._updates[:] = 0
            self._optimizer = optimizer
        weight = self._rows[slots]
        state = [s[slots] for s in self.state]
        updates = self._updates[slots]
        self._rowwise.update(weight, np.asarray(grad.rows, dtype=weight.dtype), state, updates)
        self._rows[slots] = weight
        self._updates[slots] = updates
        for full, part in zip(self.state, state):
            full[slots] = part

    def to_dense(self):
        """The full (input_dim, dim) array of a bounded table (rows never pulled take their initial value)."""
        if self.shape[0] is None:
            raise ConfigError(f"table {self.key!r} is hashed (no row bound): read it with row_sparse_pull")
        return self.pull(np.arange(self.shape[0], dtype=np.int64))

    def value(self):
        """Every held row as a RowSparse (sorted ids; copies)."""
        return RowSparse(self._sorted_ids.copy(), self._rows[self._sorted_slots], self.shape)


def _grown(array, capacity, used):
    """A copy of ``array`` with ``capacity`` rows, its first ``used`` rows kept."""
    grown = np.empty((capacity,) + array.shape[1:], dtype=array.dtype)
    grown[:used] = array[:used]
    return grown


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


class RowSparseKeys:
    """The row-sparse side of the local kvstore (capability ``'row_sparse'``; mixed into LocalKVStore, whose
    ``_store`` maps a row-sparse key to its RowTable and whose ``_stored(key, what)`` finds it). Nothing here
    blocks."""

    def init_table(self, key, value, options=None):
        """``init`` row-sparse ``key`` with table ``options`` (a map of declared options, or a TableConfig;
        sparkps/rows/config.py). This store honours the row initializer (``init_scale``, ``init``) and a table's own
        ``optimizer``; admission, eviction and capacity belong to the parameter server's tables: ConfigError naming
        them (and naming unknown options)."""
        config = table_config(key, options)
        server_only = sorted(set(config.options) - {'init', 'optimizer'})
        if server_only:
            raise ConfigError(f"table {key!r}: the local kvstore does not implement table option(s) {server_only} "
                              f"(the parameter server's tables do: kvstore 'dist_sync' or 'dist_async')")
        if not isinstance(value, RowSparse):
            raise ConfigError(f"kvstore init_table: table {key!r} takes a RowSparse value, got {type(value).__name__}")
        self.init(key, value)
        self._store[key].configure(config.replace(dim=value.dim, input_dim=value.shape[0]))

    def freeze_tables(self):
        """Make every row-sparse key read-only, as prediction wants: a pull of an id a table does not hold gives
        the row it would be created with (its row initializer, ``sparkps.rows.init``) without storing it, so scoring
        a stream of unseen ids keeps the store at the model's size; a push is a ConfigError naming the table."""
        for table in self._store.values():
            if isinstance(table, RowTable):
                table.read_only = True

    def _push_rows(self, key, table, grads, updater):
        if not isinstance(table, RowTable) or not all(isinstance(g, RowSparse) for g in grads):
            raise ConfigError(f"kvstore push: key {key!r} mixes row-sparse and dense values; init a row-sparse "
                              f"key with a RowSparse value and push RowSparse gradients to it")
        merged = grads[0]
        for grad in grads[1:]:
            merged = merged.add(grad)
        check_pushed(key, merged.rows, merged.ids)
        if table.own_optimizer is not None:
            if updater is not None and hasattr(updater, 'optimizer'):   # the job's gradient scaling, as on a server
                follow_job_scaling(table.own_optimizer, updater.optimizer, table.own_clip)
            table.push(merged, table.own_optimizer)
            return
        if updater is not None and not hasattr(updater, 'optimizer'):
            raise ConfigError(f"kvstore push: row-sparse key {key!r} needs set_optimizer (a custom updater "
                              f"cannot keep per-row state)")
        table.push(merged, None if updater is None else updater.optimizer)

    def row_sparse_pull(self, key, out=None, row_ids=None, priority=0):
        """Copy the rows ``row_ids`` of row-sparse ``key`` into ``out``: a (len(row_ids), dim) array (rows in
        ``row_ids`` order), or a RowSparse whose ids and rows are replaced. Rows of a hashed table are created on
        first pull. Lists of keys take lists of outs and row_ids. Returns ``out``."""
        if out is None or row_ids is None:
            raise ConfigError("kvstore row_sparse_pull needs out= and row_ids=")
        many = isinstance(key, (list, tuple))
        for k, target, ids in zip(*(_as_list(v) if many else [v] for v in (key, out, row_ids))):
            table = self._stored(k, 'row_sparse_pull')
            if not isinstance(table, RowTable):
                raise ConfigError(f"kvstore row_sparse_pull: key {k!r} is dense; init it with a RowSparse value")
            ids = table.checked_ids(ids)
            if isinstance(target, RowSparse):
                target.ids, target.rows, target.shape = ids, table.pull(ids), table.shape
            else:
                table.pull(ids, out=target)
        return out

    def table_value(self, key):
        """Every row held for row-sparse ``key`` as a RowSparse (copies, sorted ids)."""
        table = self._stored(key, 'table_value')
        if not isinstance(table, RowTable):
            raise ConfigError(f"kvstore table_value: key {key!r} is dense")
        return table.value()

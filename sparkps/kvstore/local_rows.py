"""RowTable: a row-sparse key of the local kvstore, a thin adapter over the one sparse table
(:class:`sparkps.rows.table.SparseTable`: its id index, rows, optimizer state and occurrence counts).

A bounded table (``Embedding(input_dim=...)``) is usually initialised with all its rows; a hashed table starts
empty and creates a row on the first pull that names it, from the one row initializer (``sparkps.rows.init``, the
servers' too), so the first value of a row depends only on (table, id) and the table's ``init``.

Updates are lazy, as MXNet's and TensorFlow's sparse updates: only the rows a gradient names change, each with
its own optimizer state rows and its own update count. They run through the per-row kernels the servers' tables
use (``sparkps/optimizer/rowwise.py``), so adam's bias correction counts a row's own updates, not the
table's pushes, and the optimizers a table takes are the servers' (others: ConfigError naming the table).
Ids are checked once where they enter (``row_sparse_pull``, and a pushed gradient's bounds) unless they come
checked (``sparkps.rows.ids.CheckedIds``: a training batch's); the table's methods take the checked int64 ids.
Nothing here blocks.

    table = RowTable('user', RowSparse(ids=[], rows=np.empty((0, 8), np.float32), shape=(None, 8)))
    rows = table.pull(np.array([12, 99999999999]))       # created on first pull
    table.push(RowSparse([12], grad_rows, (None, 8)), optimizer)
"""
import numpy as np

from sparkps.errors import ConfigError, ShapeError
from sparkps.optimizer.finite import check_pushed
from sparkps.optimizer.updater import Updater
from sparkps.rows.config import TableConfig, table_config
from sparkps.rows.ids import in_bounds, pull_counts, row_ids, trusted
from sparkps.rows.table import SparseTable
from sparkps.rows.values import RowSparse


class RowTable:
    """A row-sparse key of the local kvstore: what the kvstore API adds to a :class:`SparseTable` (int64 ids checked
    against the key's shape, ``out=`` arrays, the job's Optimizer object given at each push, a bounded table read
    whole). ``shape`` is (rows or None, dim); ``config`` its TableConfig (the initializer of the rows created on
    first pull, and its own optimizer, if any). ``table`` holds the rows; ``read_only`` is its ``frozen`` mode."""

    def __init__(self, key, value, config=None):
        merged = value.merged()
        self.key, self.shape = key, value.shape
        self.config = config or TableConfig(key, dim=value.dim, input_dim=value.shape[0])
        self.table = SparseTable(self.config, dtype=np.asarray(merged.rows).dtype)
        self._optimizer = None     # the job's Optimizer the table's state belongs to
        self.checked_bounds(merged.ids)
        self.table.store.reserve(merged.ids.size)
        self.table.put_rows(merged.ids.view(np.uint64), merged.rows)

    @property
    def own_optimizer(self):
        """True when the table's config names an optimizer of its own (used instead of the job's)."""
        return self.table.own_optimizer

    @property
    def read_only(self):
        """A prediction's table: unseen ids read their initial rows, never stored; a push is a ConfigError."""
        return self.table.frozen

    @read_only.setter
    def read_only(self, value):
        self.table.frozen = bool(value)

    @property
    def dim(self):
        return self.shape[1]

    def __len__(self):
        return int(self.table.store.rows)

    def checked_bounds(self, ids):
        """Checked int64 ``ids`` when a bounded table holds them all (CheckedIds within its bound: as they are);
        DataError naming the table otherwise."""
        known = trusted(ids, self.shape[0])
        if known is not None:
            return known.view(np.int64)
        return in_bounds(ids, self.shape[0], f"table {self.key!r}")

    def checked_ids(self, ids):
        """``ids`` where they enter (a pull): flat int64 (uint64 taken bit for bit); DataError naming this table and
        the field ``'ids'`` for float (NaN included) or other non-integer ids, which are refused, never truncated,
        and for ids outside a bounded table. CheckedIds within the table's bound are taken as they are."""
        known = trusted(ids, self.shape[0])
        if known is not None:
            return known.view(np.int64)
        return self.checked_bounds(row_ids(ids, self.key).view(np.int64))

    def pull(self, ids, out=None, counts=None, peek=False):
        """The rows of checked ``ids`` in their order (created on first pull and counted ``counts[i]`` times, once
        each without counts, unless the table is ``read_only``), copied into ``out`` when given. ``peek``: read them
        as they are, counting nothing and storing no row (held rows, else initial rows)."""
        if out is not None and tuple(out.shape) != (ids.size, self.dim):
            raise ShapeError(f"row_sparse_pull: table {self.key!r} gives {ids.size} rows of width "
                             f"{self.dim}, out has shape {tuple(out.shape)}")
        if peek:
            return self.table.peek(ids.view(np.uint64), out)
        counts = None if counts is None else pull_counts(counts, ids.size, self.key)
        return self.table.pull_checked(ids.view(np.uint64), counts, out=out)

    def push(self, grad, optimizer=None):
        """Apply a row-sparse gradient (repeated ids summed first): the job's ``optimizer``'s per-row update (the
        table's own when it has one) on the named rows, their state and update counts, or, without an optimizer,
        replace those rows by ``grad``'s. A new job optimizer starts every row's state and count afresh."""
        if self.read_only:
            raise ConfigError(f"table {self.key!r} is read-only (a prediction's table); it takes no pushes")
        if grad.dim != self.dim:
            raise ShapeError(f"table {self.key!r} has rows of width {self.dim}, the gradient has width {grad.dim}")
        grad = grad.merged()
        if grad.ids.size == 0:
            return
        ids = self.checked_bounds(grad.ids).view(np.uint64)
        if optimizer is None and not self.own_optimizer:
            self.table.put_rows(ids, grad.rows)
            return
        if not self.own_optimizer and self._optimizer is not optimizer:
            self.table.restart_optimizer(optimizer)
            self._optimizer = optimizer
        self.table.push_checked(ids, np.asarray(grad.rows, dtype=self.table.store.values.dtype), create=True)

    def follow(self, job):
        """A table with its own optimizer takes the job optimizer ``job``'s gradient scaling, as on a server."""
        self.table.optimizer.follow(job)

    def to_dense(self):
        """The full (input_dim, dim) array of a bounded table (rows never pulled take their initial value)."""
        if self.shape[0] is None:
            raise ConfigError(f"table {self.key!r} is hashed (no row bound): read it with row_sparse_pull")
        ids = np.arange(self.shape[0], dtype=np.uint64)
        if self.read_only:
            return self.table.peek(ids)
        return self.table.store.values[self.table.hold(ids)]

    def value(self):
        """Every held row as a RowSparse (sorted ids; copies)."""
        store = self.table.store
        slots = store.live_slots()
        ids = store.ids[slots].view(np.int64)
        order = np.argsort(ids, kind='stable')
        return RowSparse(ids[order], store.values[slots[order]], self.shape)


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
        self._init_rows(key, value, config.replace(dim=value.dim, input_dim=value.shape[0]))

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
        if table.own_optimizer:
            if isinstance(updater, Updater):   # the job's gradient scaling, as on a server
                table.follow(updater.optimizer)
            table.push(merged)
            return
        if updater is not None and not isinstance(updater, Updater):
            raise ConfigError(f"kvstore push: row-sparse key {key!r} needs set_optimizer (a custom updater "
                              f"cannot keep per-row state)")
        table.push(merged, None if updater is None else updater.optimizer)

    def row_sparse_pull(self, key, out=None, row_ids=None, priority=0, counts=None, peek=False):
        """Copy the rows ``row_ids`` of row-sparse ``key`` into ``out``: a (len(row_ids), dim) array (rows in
        ``row_ids`` order), or a RowSparse whose ids and rows are replaced. Rows of a hashed table are created on
        first pull and each id counted ``counts[i]`` times (a training batch's occurrences of it; None: once each),
        as on the servers; ``peek`` reads the rows without counting or storing any (an epoch end's validation
        rows). Lists of keys take lists of outs, row_ids and counts. Returns ``out``."""
        if out is None or row_ids is None:
            raise ConfigError("kvstore row_sparse_pull needs out= and row_ids=")
        if counts is not None and peek:
            raise ConfigError(f"kvstore row_sparse_pull: key {key!r}: a peek counts nothing; give counts or peek")
        many = isinstance(key, (list, tuple))
        if counts is None:
            counts = [None] * len(key) if many else None
        for k, target, ids, n in zip(*(_as_list(v) if many else [v] for v in (key, out, row_ids, counts))):
            table = self._stored(k, 'row_sparse_pull')
            if not isinstance(table, RowTable):
                raise ConfigError(f"kvstore row_sparse_pull: key {k!r} is dense; init it with a RowSparse value")
            ids = table.checked_ids(ids)
            if isinstance(target, RowSparse):
                target.ids, target.rows, target.shape = ids, table.pull(ids, counts=n, peek=peek), table.shape
            else:
                table.pull(ids, out=target, counts=n, peek=peek)
        return out

    def table_value(self, key):
        """Every row held for row-sparse ``key`` as a RowSparse (copies, sorted ids)."""
        table = self._stored(key, 'table_value')
        if not isinstance(table, RowTable):
            raise ConfigError(f"kvstore table_value: key {key!r} is dense")
        return table.value()

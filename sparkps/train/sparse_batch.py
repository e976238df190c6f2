"""Batch-local re-indexing: how a training step reads and updates the sparse embedding tables of a network.

For every table (``sparkps.symbol.ops.embedding.sparse_tables``) the executor's ``weight`` is bound once to a
small local matrix of ``capacity`` rows (the most unique ids one batch can hold: the ids of every field reading
the table, at most ``input_dim``). Each step:

1. ``pull(kv, inputs)``: checks the raw ids of each field (``sparkps.rows.ids.batch_ids``, naming the table and
   the field: the one check of an id in a worker), takes the sorted unique ids as ``CheckedIds`` (the kvstore and
   the ``RowSparse`` gradient take them without checking again), the sorted unique ids
   of the batch and each id's position among them in one compiled pass (``batch_index``; a padding id marks
   absent entries), pulls those rows once with
   ``kv.row_sparse_pull`` into the top of the local matrix (the rest stays zero) and gives the executor the local
   positions instead of the ids — 64-bit ids never reach float32 inputs. The pull carries how often the batch's
   rows (its padding rows aside) use each unique id, so the store's occurrence count of an id is how often the
   training data used it, summed over the epochs;
2. the executor runs an ordinary gather on the local matrix, and its backward pass sums the output gradients per
   local row: that gradient, cut to the unique ids, *is* the row-sparse gradient;
3. ``push(kv)`` sends it as a ``RowSparse`` for the unique ids only.

Shapes never change between batches, so nothing is re-bound. A kvstore holds the tables (``is_capable
('row_sparse')``); the worker never allocates ``input_dim x dim``. ``pull`` and ``push`` block as the kvstore's
``row_sparse_pull`` and ``push`` do (nothing, for the local store).
"""
import numpy as np

from sparkps import backend
from sparkps.errors import ConfigError, DataError
from sparkps.param_group import bound_arrays
from sparkps.rows.ids import batch_ids, checked
from sparkps.rows.values import RowSparse


def _size(shape):
    return int(np.prod(shape, dtype=np.int64))


class SparseBatch:
    """The sparse tables of one bound network and the unique ids of the current batch.

        sparse = SparseBatch.for_symbol(net, input_shapes)     # None when the network has no sparse table
        shapes.update(sparse.table_shapes)                      # bind the tables as small local matrices
        sparse.attach(exe); sparse.init_tables(kv)
        exe.forward(is_train=True, **sparse.pull(kv, inputs)); exe.backward(); sparse.push(kv)
    """

    def __init__(self, tables, input_shapes):
        self.tables = dict(tables)     # {name: TableConfig}
        self.table_shapes = {}
        for name, spec in self.tables.items():
            missing = [f for f in spec.fields if f not in input_shapes]
            if missing:
                raise ConfigError(f"table {name!r}: its ids {missing} are not inputs of the data iterator "
                                  f"(inputs: {sorted(input_shapes)})")
            capacity = sum(_size(input_shapes[f]) for f in spec.fields)
            if spec.input_dim is not None:
                capacity = min(capacity, spec.input_dim)
            self.table_shapes[name] = (max(capacity, 1), spec.dim)
        self._weights, self._grads, self._unique = {}, {}, {}
        from sparkps.train.batch_index import IdSet, batch_positions  # numba: loaded by the first network with tables
        self._id_set, self._positions = IdSet, batch_positions
        # ids given or pulled, the rows the model keeps: one set for the tables that read the same fields
        sets = {}
        self._seen = {name: sets.setdefault((spec.fields, spec.padding_id), IdSet())
                      for name, spec in self.tables.items()}
        # False when the tables stay on the store (a fit whose servers write them): the ids a batch pulls are not
        # remembered, so ``table_values`` reads only the rows given and those ``keep_rows_of`` named
        self.remember_batches = True

    @classmethod
    def for_symbol(cls, symbol, input_shapes):
        """A SparseBatch for ``symbol``'s sparse tables, or None when it has none."""
        from sparkps.symbol.ops.embedding import sparse_tables
        tables = sparse_tables(symbol)
        return cls(tables, input_shapes) if tables else None

    def full_shape(self, name):
        spec = self.tables[name]
        return (spec.input_dim, spec.dim)

    # ----- setting up -----------------------------------------------------------------------------
    def attach(self, exe):
        """Use ``exe``'s local table matrices (and their gradients, when it has them)."""
        self._weights = {n: exe.arg_dict[n] for n in self.tables}
        self._grads = {n: exe.grad_dict[n] for n in self.tables if n in exe.grad_dict}

    @staticmethod
    def check_store(kv):
        """ConfigError unless ``kv`` can hold row-sparse tables."""
        if not kv.is_capable('row_sparse'):
            raise ConfigError(f"kvstore {kv.type!r} cannot hold sparse embedding tables "
                              f"(is_capable('row_sparse') is False); use kvstore='local', or on the parameter "
                              f"server a strategy that trains on the servers (dist_sync, dist_async, "
                              f"dist_sync_replicas)")

    def init_tables(self, kv, given=None, dtype=np.float32):
        """``kv.init`` every table: from ``given[name]`` (a dense (input_dim, dim) array or a RowSparse), else
        empty, its rows created on first pull by the table's row initializer (``sparkps.rows.init``); a table with
        options goes through ``kv.init_table`` with its declared options (ConfigError if ``kv`` has none)."""
        self.check_store(kv)
        empty = {}          # the tables given no rows that read the same fields keep one set of ids
        for name, spec in self.tables.items():
            value = (given or {}).get(name)
            if value is None:
                dim = self.tables[name].dim
                value = RowSparse(np.empty(0, np.int64), np.empty((0, dim), dtype), self.full_shape(name))
            elif not isinstance(value, RowSparse):
                value = self._dense_value(name, value)
            self._seen[name] = self._id_set(value.ids) if value.ids.size else \
                empty.setdefault((spec.fields, spec.padding_id), self._id_set())
            options = self.tables[name].options
            if not options:
                kv.init(name, value)
            elif kv.is_capable('table_options'):
                kv.init_table(name, value, options)
            else:
                raise ConfigError(f"table {name!r}: its table options {sorted(options)} are served by the parameter "
                                  f"server's tables (kvstore 'dist_sync' or 'dist_async'); kvstore "
                                  f"{kv.type!r} does not hold them")

    def _dense_value(self, name, array):
        array = np.asarray(array)
        if self.tables[name].input_dim is None or tuple(array.shape) != self.full_shape(name):
            raise DataError(f"table {name!r} needs shape {self.full_shape(name)} but the given parameter has "
                            f"{tuple(array.shape)}")
        return RowSparse.from_dense(array)

    # ----- each step ------------------------------------------------------------------------------
    def pull(self, kv, inputs, exchange=None, pad=0):
        """Pull the batch's unique rows of every table into the local matrices; return ``inputs`` with each
        table's id fields replaced by local row positions (-1 for absent entries). ``exchange(rows)``, when
        given, fetches the rows of every table in one call (``rows``: {table: (unique ids, out, counts)});
        otherwise each table is read with ``kv.row_sparse_pull``. ``counts``: how often the batch's rows use
        each unique id (uint32), its last ``pad`` rows (filler repeating earlier rows) left out. The unique ids
        and positions of one table's fields are one compiled pass (``batch_index``); tables that read the same
        fields (a field's embedding and its first-order weight) share it."""
        raw, inputs = inputs, dict(inputs)
        pulls, reader, done, remembered = {}, {}, {}, set()
        for name, spec in self.tables.items():
            key = (spec.fields, spec.padding_id)
            if key not in done:
                fields = [self._checked_ids(spec, f, raw[f]) for f in spec.fields]
                flat = fields[0].reshape(-1) if len(fields) == 1 else \
                    np.concatenate([ids.reshape(-1) for ids in fields])
                positions = np.empty(flat.size, np.float32)
                unique = checked(self._positions(flat, spec.padding_id, positions), spec.input_dim)
                local, start = [], 0
                for ids in fields:
                    local.append(positions[start:start + ids.size].reshape(ids.shape))
                    start += ids.size
                done[key] = (unique, local, _occurrences(local, unique.size, pad))
            unique, local, counts = done[key]
            pulls[name] = (unique, counts)
            self._unique[name] = unique
            if self.remember_batches and (id(self._seen[name]), id(unique)) not in remembered:   # shared sets
                remembered.add((id(self._seen[name]), id(unique)))
                self._remember(name, unique)
            for field, positions in zip(spec.fields, local):
                self._share_positions(inputs, reader, field, positions, name)
        self._pull_rows(kv, pulls, exchange)
        return inputs

    @staticmethod
    def _share_positions(inputs, reader, field, local, table):
        """Give the executor ``field``'s local positions in ``table``. Tables may share an id input (a field's
        embedding and its first-order weight) when they read the same fields: the positions are then equal."""
        if field in reader and inputs[field] is not local and not np.array_equal(inputs[field], local):
            raise ConfigError(f"tables {reader[field]!r} and {table!r} read id input {field!r} together with "
                              f"different other inputs; give each table its own id input")
        inputs[field], reader[field] = local, table

    def _pull_rows(self, kv, pulls, exchange):
        """The rows of each table's unique ids into the top of its local matrix, zeros below (through host memory
        when the executor runs on a GPU: the tables live on the host)."""
        targets, copies = {}, []
        for name, (unique, counts) in pulls.items():
            weight = self._weights[name]
            if isinstance(weight, np.ndarray):
                weight[unique.size:] = 0
                target = weight[:unique.size]
            else:
                rows = np.zeros(weight.shape, dtype=weight.dtype)
                target = rows[:unique.size]
                copies.append((weight, rows))
            if unique.size:
                targets[name] = (unique, target, counts)
        if exchange is not None:
            exchange(targets)
        else:
            for name, (unique, target, counts) in targets.items():
                kv.row_sparse_pull(name, out=target, row_ids=unique, counts=counts)
        for weight, rows in copies:
            backend.copy_into(weight, rows)

    def push(self, kv):
        """Push each table's gradient rows of the batch's unique ids (one RowSparse per table)."""
        for name, unique in self._unique.items():
            rows = backend.asnumpy(self._grads[name][:unique.size])
            kv.push(name, RowSparse(unique, rows, self.full_shape(name)))

    @staticmethod
    def _checked_ids(spec, field, ids):
        """The raw ids of ``field`` checked as they enter (``sparkps.rows.ids.batch_ids``): int64."""
        return batch_ids(ids, spec.name, field, spec.input_dim)

    def keep_rows_of(self, inputs):
        """Add the ids of ``inputs`` (named arrays, e.g. evaluation data's) to the rows :meth:`table_values` reads,
        without pulling them now: the values a later evaluation reads are then the store's rows of its ids (rows
        other workers trained too), not initial values for the rows this worker never pulled."""
        for name, spec in self.tables.items():
            fields = [self._checked_ids(spec, f, inputs[f]) for f in spec.fields]
            flat = np.concatenate([ids[ids != spec.padding_id] if spec.padding_id is not None else ids.reshape(-1)
                                   for ids in fields])
            self._remember(name, np.unique(flat))

    # ----- results --------------------------------------------------------------------------------
    def _remember(self, name, unique):
        self._seen[name].add(unique)

    def table_values(self, kv):
        """{name: RowSparse} of the rows each table holds for this model: the rows it was given, those of
        ``keep_rows_of`` and (with ``remember_batches``) every row a batch pulled (``.to_dense()`` gives MXNet's
        dense weight of a bounded table). The rows are peeked (``kv.row_sparse_pull(..., peek=True)``): this read
        counts no occurrence and stores no row (an id the store does not hold reads its initial row). Blocks as
        ``kv.row_sparse_pull`` (in pieces under the frame limit on the parameter server); nothing of size
        ``input_dim x dim`` is made here."""
        values = {}
        for name in self.tables:
            ids = self._seen[name].sorted()
            rows = np.empty((ids.size, self.tables[name].dim), dtype=self._weights[name].dtype)
            if ids.size:
                kv.row_sparse_pull(name, out=rows, row_ids=ids, peek=True)
            values[name] = RowSparse(ids, rows, self.full_shape(name))
        return values


def _occurrences(local, size, pad=0):
    """How often the batch uses each of its ``size`` unique ids (uint32): ``local`` holds each field's positions
    (batch rows first, -1 for absent entries), of which the last ``pad`` rows are filler and not counted."""
    used = [p[:p.shape[0] - pad] if pad and p.ndim else p for p in local]
    flat = used[0].reshape(-1) if len(used) == 1 else np.concatenate([p.reshape(-1) for p in used])
    flat = flat[flat >= 0].astype(np.int64)
    return np.bincount(flat, minlength=size).astype(np.uint32)


def warm_kernels():
    """Start loading the compiled kernels a CTR step runs (the re-index, the fused ops) on a daemon thread, so that
    a fit's first step finds them loaded: reading them from numba's cache takes a second or two in a new process.
    Returns the thread; nothing waits for it (a step that needs a kernel first waits on numba's own lock)."""
    import threading

    def load():
        from sparkps.symbol.ops import fused_kernels
        from sparkps.train import batch_index
        batch_index.warm_up()
        fused_kernels.warm_up()

    thread = threading.Thread(target=load, name="sparkps-kernels", daemon=True)
    thread.start()
    return thread


def with_sparse_push(step, sparse, kv):
    """``step`` preceded by the push of the batch's row-sparse table gradients."""
    def sparse_step():
        sparse.push(kv)
        step()
    return sparse_step


class QueuedStep:
    """The step of a network with sparse tables on a kvstore that has ``pull_step`` (the parameter server):
    ``step()`` queues the dense gradients and each table's row gradients; the next batch's pull of rows carries
    them (``exchange``), so a step is one request per server; ``finish()`` sends what is queued and takes the
    weights (blocks as ``kv.pull``)."""

    def __init__(self, exe, param_names, sparse, kv):
        self.weights = bound_arrays(exe.arg_group, exe.arg_dict, param_names)
        self.grads = bound_arrays(exe.grad_group, exe.grad_dict, param_names)
        self.keys = list(range(len(param_names)))
        self.sparse, self.kv, self.queued = sparse, kv, False

    def __call__(self):
        """Queue this batch's gradients (returns at once)."""
        self.kv.push(self.keys, self.grads)   # dense first: a dense push sends row pushes queued before it
        self.sparse.push(self.kv)
        self.queued = True

    def exchange(self, rows):
        if self.queued:
            self.queued = False
            self.kv.pull_step(self.keys, out=self.weights, rows=rows)
        else:
            for name, (ids, target, counts) in rows.items():
                self.kv.row_sparse_pull(name, out=target, row_ids=ids, counts=counts)

    def finish(self):
        if self.queued:
            self.queued = False
            self.kv.pull_step(self.keys, out=self.weights, rows={})

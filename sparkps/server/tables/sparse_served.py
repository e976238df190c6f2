"""The server's ``'sparse'`` table kind: a :class:`~sparkps.rows.table.SparseTable` behind the request
interface of :mod:`sparkps.server.tables`, holding one shard of the table's rows.

The server routes a data request to the table its ``table`` field names and consults its round policy; this module
checks each request's ids once, as the request enters the table (the parse gave a uint64 (n,) frame; here the
table's ``input_dim`` and this server's shard), and hands them on as ``CheckedIds``, which the table, the gradient
``RowSparse`` and a round's sums take as they are. Wire form (kept simple, one request per server per step
carries each table's part):

=========  ================================================  ===============================================
request    fields                                            arrays
=========  ================================================  ===============================================
INIT       ``table``, ``options`` (``TableConfig.to_dict``)  —
           and ``shard``: [rank, count]
PULL       ``table``, ``round`` (sync)                       ids: uint64 (n,)  -> rows: float32 (n, dim)
           ``counts`` (a training pull)                      ids, counts: uint32 (n,) (added to each id's count)
           ``peek`` (an epoch end's validation rows)         ids: held rows, or initial rows never stored
PUSH       ``table``, ``round`` (sync)                       ids: uint64 (n,), grads: float32 (n, dim) or flat
=========  ================================================  ===============================================

A push becomes a ``RowSparse`` gradient; a sync round sums the workers' gradients with ``add`` (concatenation:
ids repeat across workers) and the table applies the round once, summing per id (docs/architecture.md, decision
6). In async mode every push is applied on arrival. The table's step advances by one per applied update, so
``ttl`` counts rounds in sync mode and pushes in async mode.

>>> table = SparseTable('user', dim=2, optimizer={'name': 'sgd', 'params': {'learning_rate': 1.0}})
>>> ids = np.array([4, 9], np.uint64)
>>> rows = table.read_rows(ids)
>>> update = table.gradient_rows(ids, np.ones((2, 2), np.float32))
>>> table.apply(update.add(update))                  # two workers pushed the same gradient
>>> np.round(table.read_rows(ids) - rows, 6).tolist()
[[-2.0, -2.0], [-2.0, -2.0]]
"""
import os

import numpy as np

from sparkps.comm.manifest import MANIFEST, next_table_generation, read_manifest
from sparkps.errors import DataError
from sparkps.optimizer.finite import check_rows
from sparkps.rows.ids import checked, shard_of
from sparkps.rows.table import SparseTable
from sparkps.server.tables import sparse_checkpoint


def _shard(name, value):
    if (not isinstance(value, (list, tuple)) or len(value) != 2 or not all(type(v) is int for v in value)
            or not 0 <= value[0] < value[1]):
        raise DataError(f"table {name!r}: field 'shard' of INIT must be [server rank, server count], got {value!r}")
    return tuple(value)


class ServedTable:
    """The server's ``'sparse'`` table kind (:mod:`sparkps.server.tables`): made empty by the registry,
    given its :class:`SparseTable` by the first INIT (``options`` + ``shard``: [rank, count]).

    Every request's ids are checked against the shard: an id this server does not own is refused with an
    error naming the table and the server it belongs to (a worker routing rows differently from
    :func:`sparkps.rows.ids.shard_of` would otherwise train rows twice). Saves go to ``directory`` as a new
    base, or as a delta when the previous save of this table went to the same directory.
    """
    kind = 'sparse'

    def __init__(self):
        self.table = None
        self.shard = (0, 1)
        self._options = None
        self._job_optimizer = None
        self._saved_to = None
        self._start_ids = None      # the sorted ids a warm start loaded (None: a cold start)

    def _held(self):
        if self.table is None:
            raise DataError("a sparse table was used before its INIT")
        return self.table

    def init(self, request):
        """INIT: create the table from ``request.options`` (a repeated INIT must carry the same options)."""
        options = dict(request.options or {})
        shard = _shard(request.table, options.pop('shard', [0, 1]))
        if self.table is not None:
            if (options, shard) != (self._options, self.shard):
                raise DataError(f"table {request.table!r}: INIT again with other options or shard "
                                f"({options}, {list(shard)}) than the table has ({self._options}, "
                                f"{list(self.shard)})")
            return
        self.table = SparseTable.from_init(request.table, options)
        self._options, self.shard = options, shard
        if self._job_optimizer is not None:
            self.table.set_optimizer(self._job_optimizer)

    def _ids(self, ids):
        table = self._held()
        ids = table.ids(ids)
        rank, count = self.shard
        if count > 1:
            owners = shard_of(ids, count)
            wrong = owners != rank
            if wrong.any():
                first = int(np.argmax(wrong))
                raise DataError(f"table {table.name!r}: field 'ids' holds {int(ids[first])}, which belongs to "
                                f"server {int(owners[first])} of {count}, not to this server ({rank})")
        return checked(ids, table.input_dim)

    def gradient(self, request):
        """PUSH of rows: a RowSparse gradient of ``request.ids`` and ``request.values`` (the grads); NonFinite
        naming the row on a NaN or infinity (:func:`sparkps.optimizer.finite.check_rows`)."""
        ids = self._ids(request.ids)
        check_rows(self._held().name, ids, request.values)
        return self._held().row_gradient(ids, request.values)

    def apply(self, update, scale=1.0):
        """Apply a round's (or one push's) summed RowSparse gradient once."""
        self._held().apply(update, scale)

    def read(self, request):
        """PULL of rows: float32 (n, dim), rows created on first pull, each id counted ``request.counts[i]``
        times (once without counts: a training pull's counts are its batch's occurrences of the ids); a
        ``request.peek`` reads held rows and the initial rows of the others, counting and storing nothing.
        The array is new and marked read-only, so the server sends it without another copy."""
        ids = np.asarray(self._ids(request.ids))
        if request.peek:
            rows = self._held().peek(ids)
        else:
            rows = self._held().pull_checked(ids, request.counts)
        rows.flags.writeable = False
        return rows

    def set_optimizer(self, config):
        """The job's optimizer (kept for a table made later; a table with its own optimizer keeps it)."""
        self._job_optimizer = config
        if self.table is not None:
            self.table.set_optimizer(config)

    def set_learning_rate(self, lr):
        """A new base learning rate for the table's optimizer."""
        self._held().set_learning_rate(lr)

    def stats(self):
        """The table's statistics (rows, bytes, admitted, evicted, ...), or {} before INIT."""
        return self.table.stats() if self.table is not None else {}

    def save(self, directory):
        """Write this server's rows; returns ``{"tables": [description]}`` for the worker's manifest."""
        table = self._held()
        earlier = read_manifest(directory) if os.path.exists(os.path.join(directory, MANIFEST)) else {}
        generation, may_delta = next_table_generation(earlier, table.name)
        delta = may_delta and self._saved_to == os.path.abspath(directory)
        described = sparse_checkpoint.save_table(directory, table, self.shard[0], generation, delta)
        self._saved_to = os.path.abspath(directory)
        return {"tables": [described]}

    def write_shard(self, folder, forget=None):
        """COMMAND write_tables: write this server's rows of the table into ``folder`` as its shard file
        (:func:`sparkps.rows.shards.write_shard`: id, vector, count = the table's own occurrence count, the sum of the
        training pulls' counts: how often the training data used the id, over every epoch; last_step;
        atomically). With ``forget`` (steps), the rows unseen for more than that many steps are left out (the table
        itself keeps them: a best epoch's snapshot does not change training). Returns ``{"dim", "dtype", "options",
        "shard": {path, server, rows, sha256, ids}}`` for the manifest the asking worker writes; ``ids``:
        {added, kept, dropped}, the ids written that the model the fit started from lacked, those of that model
        written again, and those of it not written (forgotten or evicted). Blocks on the write (a row group at a time
        from the table's arrays, never a copy of the whole table unless ``forget`` leaves rows out)."""
        from sparkps.rows.shards import write_shard
        from sparkps.server.tables.sparse_start import forgotten, id_changes
        table = self._held()
        arrays = table.export_rows()
        columns = [arrays['ids'], arrays['values'], arrays['seen'], arrays['last_seen']]
        if forget is not None:
            gone = forgotten(arrays['last_seen'], table.step, forget)
            if gone.any():
                columns = [column[~gone] for column in columns]
        shard = write_shard(folder, table.name, self.shard[0], *columns)
        shard["ids"] = id_changes(columns[0], self._start_ids)
        return {"dim": int(table.dim), "dtype": "float32", "options": table.options(), "shard": shard}

    def load_start(self, folder, manifest):
        """COMMAND load_tables: load this server's rows of the table from the shard files of the model the fit starts
        from (``folder``, ``manifest`` its checked manifest: :mod:`sparkps.server.tables.sparse_start`), with their
        counts and last-seen steps and fresh optimizer state. Returns how many rows it loaded. Blocks on reading the
        files."""
        from sparkps.server.tables.sparse_start import load_start_rows
        loaded, self._start_ids = load_start_rows(self._held(), folder, manifest, *self.shard)
        return loaded

    def compact(self, directory, manifest):
        """COMMAND compact: merge this table's base and deltas in ``directory`` into one new base generation,
        this server writing the rows of its own shard (read from the files, not from memory: the base equals the
        saves it replaces even when training went on since). Returns ``{"tables": [description]}`` (the worker
        writes the manifest, then removes the replaced files); ``{}`` when the table is one base already.
        The rows are loaded into a second table while it runs (this server's shard, once more in memory).
        Blocks on file I/O."""
        table = self._held()
        generations = manifest.get('tables', {}).get(table.name, {}).get('generations', [])
        if len(generations) == 1 and len(generations[0]['files']) == self.shard[1]:
            return {}
        loaded = sparse_checkpoint.load_table(directory, manifest, table.name, *self.shard)
        generation = generations[-1]['generation'] + 1
        return {"tables": [sparse_checkpoint.save_table(directory, loaded, self.shard[0], generation)]}

    def load(self, directory, manifest):
        """Replace the table by its rows in the checkpoint, re-routed to this server's shard."""
        table = self._held()
        own = table.own_optimizer
        self.table = sparse_checkpoint.load_table(directory, manifest, table.name, *self.shard)
        self.table.own_optimizer = own
        self._saved_to = None

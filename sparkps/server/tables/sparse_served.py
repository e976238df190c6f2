"""A sparse table as the server's request handlers see it: decoded requests in, rows and updates out.

The server routes a data request to the table its ``table`` field names and consults its round policy
(:mod:`sparkps.server.tables`); this module gives :class:`SparseTable` that interface. Wire form (kept
simple, one request per server per step carries each table's part):

=========  =============================================  ==================================================
request    fields                                          arrays
=========  =============================================  ==================================================
INIT       ``table``, ``options`` (SparseTable.options())  —
PULL       ``table``, ``round`` (sync)                     ids: uint64 (n,)  -> rows: float32 (n, dim)
PUSH       ``table``, ``round`` (sync)                     ids: uint64 (n,), grads: float32 (n, dim) or flat
=========  =============================================  ==================================================

A push becomes a :class:`RowGradient`; a sync round sums the workers' gradients with ``add`` (concatenation:
ids repeat across workers) and the table applies the round once, summing per id (DESIGN decision 6). In
async mode every push is applied on arrival. The table's step advances by one per applied update, so
``ttl`` counts rounds in sync mode and pushes in async mode.

>>> table = ServedSparseTable('user', dim=2, optimizer={'name': 'sgd', 'params': {'learning_rate': 1.0}})
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
from sparkps.optimizer.rowwise import RowOptimizer
from sparkps.rows.ids import shard_of
from sparkps.server.tables import sparse_checkpoint
from sparkps.server.tables.sparse import SparseTable


class RowGradient:
    """A pushed row gradient: ``ids`` (uint64) and ``grads`` (float32, (n, dim)); ids may repeat."""
    __slots__ = ('grads', 'ids')

    def __init__(self, ids, grads):
        self.ids, self.grads = ids, grads

    def add(self, other):
        """The sum of this gradient and ``other`` (rows concatenated; the table sums per id on apply)."""
        return RowGradient(np.concatenate([self.ids, other.ids]), np.concatenate([self.grads, other.grads]))


class ServedSparseTable(SparseTable):
    """A :class:`SparseTable` with the server's table interface (``gradient``, ``apply``, ``read``, ...).

    ``own_optimizer``: the table keeps the optimizer it was created with when the job's SET_OPTIMIZER
    arrives (a table may use a different optimizer from the dense parameters); otherwise it follows it.
    """
    kind = 'sparse'

    def __init__(self, name, dim, own_optimizer=None, **options):
        super().__init__(name, dim, **options)
        self.own_optimizer = bool(options.get('optimizer') is not None if own_optimizer is None
                                  else own_optimizer)

    @classmethod
    def from_init(cls, name, options):
        """Build the table an INIT describes (``options``: ``SparseTable.options()`` form; the name is
        INIT's ``table`` field). Unknown options -> ConfigError naming them."""
        if not isinstance(options, dict):
            raise DataError(f"table {name!r}: field 'options' of INIT must be a map, got {options!r}")
        return cls.from_options({**options, 'name': name})

    # ---- requests ---------------------------------------------------------------------------------
    def read_rows(self, ids):
        """PULL: the rows of ``ids`` (float32, (n, dim)), created on first pull."""
        return self.pull(ids)

    def gradient_rows(self, ids, grads):
        """PUSH: check ``ids`` and ``grads`` (a flat array is taken as (n, dim)) into a RowGradient."""
        ids = self.ids(ids)
        grads = np.asarray(grads)
        if grads.ndim == 1 and ids.size and grads.size == ids.size * self.dim:
            grads = grads.reshape(ids.size, self.dim)
        elif grads.ndim == 1 and grads.size == 0 and ids.size == 0:
            grads = grads.reshape(0, self.dim)
        ids, grads = self.checked_grads(ids, grads)
        return RowGradient(ids, grads)

    def apply(self, update, scale=1.0):
        """Apply a (summed) RowGradient once, times ``scale``, then advance the table's step."""
        grads = update.grads if scale == 1.0 else update.grads * np.float32(scale)
        self.push(update.ids, grads)
        self.tick()

    def set_optimizer(self, config):
        """The job's optimizer config: taken unless the table has its own (states restart if taken), which then
        takes the job's gradient scaling (``rescale_grad``, and ``clip_gradient`` unless it declared one)."""
        if self.own_optimizer:
            self.optimizer.follow(config)
            return
        self.optimizer = RowOptimizer(config, table=self.name)
        self.store.states = [np.zeros_like(self.store.values) for _ in range(self.optimizer.num_states)]
        self.store.updates[:] = 0

    # ---- checkpoints ------------------------------------------------------------------------------
    def save(self, directory, rank, generation, delta=False):
        """Write this server's rows (all, or changed since the last save); returns the description the
        manifest's ``tables`` section merges (:func:`sparkps.comm.manifest.add_table_generation`)."""
        return sparse_checkpoint.save_table(directory, self, rank, generation, delta)

    @classmethod
    def load(cls, directory, manifest, name, rank, num_servers):
        """The table ``name`` as server ``rank`` of ``num_servers`` holds it after loading the checkpoint."""
        return sparse_checkpoint.load_table(directory, manifest, name, rank, num_servers, table_class=cls)


def _shard(name, value):
    if (not isinstance(value, (list, tuple)) or len(value) != 2 or not all(type(v) is int for v in value)
            or not 0 <= value[0] < value[1]):
        raise DataError(f"table {name!r}: field 'shard' of INIT must be [server rank, server count], got {value!r}")
    return tuple(value)


class SparseRows:
    """The server's ``'sparse'`` table kind (:mod:`sparkps.server.tables`): made empty by the registry,
    given its :class:`ServedSparseTable` by the first INIT (``options`` + ``shard``: [rank, count]).

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
        self.table = ServedSparseTable.from_init(request.table, options)
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
        return ids

    def gradient(self, request):
        """PUSH of rows: a RowGradient of ``request.ids`` and ``request.values`` (the grads)."""
        return self._held().gradient_rows(self._ids(request.ids), request.values)

    def apply(self, update, scale=1.0):
        """Apply a round's (or one push's) summed RowGradient once."""
        self._held().apply(update, scale)

    def read(self, request):
        """PULL of rows: float32 (n, dim), rows created on first pull. The array is new and marked read-only,
        so the server sends it without another copy."""
        rows = self._held().read_rows(self._ids(request.ids))
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
        described = table.save(directory, self.shard[0], generation, delta)
        self._saved_to = os.path.abspath(directory)
        return {"tables": [described]}

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
        self.table = ServedSparseTable.load(directory, manifest, table.name, self.shard[0], self.shard[1])
        self.table.own_optimizer = own
        self._saved_to = None

"""A sparse table as the server's request handlers see it: decoded requests in, rows and updates out.

The server routes a data request to the table its ``table`` field names and consults its round policy
(:mod:`sparkps.ps.server.tables`); this module gives :class:`SparseTable` that interface. Wire form (kept
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
import numpy as np

from sparkps.errors import DataError
from sparkps.ps.server.tables import sparse_checkpoint
from sparkps.ps.server.tables.sparse import SparseTable
from sparkps.train.optimizer.rowwise import RowOptimizer


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
        """The job's optimizer config: taken unless the table has its own (states restart if taken)."""
        if self.own_optimizer:
            return
        self.optimizer = RowOptimizer(config)
        self.store.states = [np.zeros_like(self.store.values) for _ in range(self.optimizer.num_states)]
        self.store.updates[:] = 0

    # ---- checkpoints ------------------------------------------------------------------------------
    def save(self, directory, rank, generation, delta=False):
        """Write this server's rows (all, or changed since the last save); returns the description the
        manifest's ``tables`` section merges (:func:`sparse_checkpoint.add_generation`)."""
        return sparse_checkpoint.save_table(directory, self, rank, generation, delta)

    @classmethod
    def load(cls, directory, manifest, name, rank, num_servers):
        """The table ``name`` as server ``rank`` of ``num_servers`` holds it after loading the checkpoint."""
        return sparse_checkpoint.load_table(directory, manifest, name, rank, num_servers, table_class=cls)

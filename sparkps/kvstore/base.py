"""KVStoreBase: the interface every key-value store shares, and what a caller may ask it (``is_capable``).

As in MXNet (``python/mxnet/kvstore/base.py``), a caller asks a store what it can do instead of probing its type
name or its attributes:

=====================  ======================================================================================
capability             meaning
=====================  ======================================================================================
``'optimizer'``        ``set_optimizer`` runs the optimizer inside the store (pushes are gradients)
``'sync'``             every worker's pushes of one step are summed into one update (``dist_sync``): a worker
                       scales its gradient by ``1 / num_workers`` as well as by its batch
``'progress'``         ``report_progress`` reaches a cluster status (the scheduler); elsewhere it is a no-op
``'checkpoint'``       ``save_checkpoint`` / ``load_checkpoint`` write and read the store's weights and
                       optimizer state
``'row_sparse'``       ``row_sparse_pull`` of selected rows (``counts=``: how often a training batch used each id,
                       the tables' occurrence counts; ``peek=True``: a read that counts nothing and stores no
                       row), ``push`` of RowSparse gradients (sparse embeddings)
``'table_options'``    ``init_table(key, value, options)``: a sparse table with options of its own (its optimizer,
                       admission, eviction; see :mod:`sparkps.rows.config`)
``'pull_step'``        ``pull_step(keys, out, rows)``: the pushes of a step ride with the next batch's pull, one
                       request per server a step (the parameter server's sparse step)
=====================  ======================================================================================

A subclass lists its capabilities in ``CAPABILITIES``; ``is_capable`` of a name outside the table above is a
ConfigError (a misspelt capability must not read as "not capable"). Methods a store may not have raise
ConfigError naming the store type; ``pushpull`` defaults to ``push`` then ``pull``; ``end_training`` and
``report_progress`` default to no-ops, so a training loop calls them on any store.

Keys and values are normalised by :func:`key_value_lists` (one key with one value, or equally long lists; a
per-device list of arrays is one value).

>>> from sparkps import kvstore
>>> kv = kvstore.create('local')
>>> kv.is_capable('optimizer'), kv.is_capable('sync')
(True, False)
"""
from sparkps.errors import ConfigError
from sparkps.param_group import ParameterGroup

OPTIMIZER, SYNC, PROGRESS, CHECKPOINT, ROW_SPARSE = 'optimizer', 'sync', 'progress', 'checkpoint', 'row_sparse'
TABLE_OPTIONS, PULL_STEP = 'table_options', 'pull_step'
KNOWN_CAPABILITIES = (OPTIMIZER, SYNC, PROGRESS, CHECKPOINT, ROW_SPARSE, TABLE_OPTIONS, PULL_STEP)


def key_value_lists(keys, values, what, values_name='values'):
    """``(keys, values)`` as two equally long lists: one key with one value, or lists of both.

    A list given for a single key is that key's (per-device) value. A ParameterGroup stands for its arrays
    and is returned as it is (a store may send it as one block). Raises ConfigError naming the call ``what``
    when the lengths differ.
    """
    if not isinstance(keys, (list, tuple)):
        return [keys], [values]
    if not isinstance(values, (list, tuple, ParameterGroup)) or len(values) != len(keys):
        count = len(values) if isinstance(values, (list, tuple, ParameterGroup)) else 1
        raise ConfigError(f"kvstore {what}: {len(keys)} keys but {count} {values_name}")
    return list(keys), values if isinstance(values, ParameterGroup) else list(values)


def key_kind(kind, keys, what):
    """The kind of dense keys ('str' or 'int') a store holds after a call ``what`` with ``keys``; ``kind`` is the
    kind it held (None before its first call). Row-sparse tables are exempt: sparkps names them by string beside
    the int keys of dense parameters. A store keyed by ints refuses a string key and vice versa, as
    MXNet's (test_kvstore.py::test_invalid_pull): ConfigError naming the key. Blocks on nothing."""
    for key in (keys if isinstance(keys, (list, tuple)) else [keys]):
        this = 'str' if isinstance(key, str) else 'int'
        if kind is not None and this != kind:
            raise ConfigError(f"kvstore {what}: key {key!r} is {'a string' if this == 'str' else 'not a string'}"
                              f" but this store is keyed by {'strings' if kind == 'str' else 'ints'}")
        kind = this
    return kind


class KVStoreBase:
    """A key-value store with MXNet's KVStore methods; subclasses are created by ``sparkps.kvstore.create``.

    ``type`` is the type name asked for (``create('device').type == 'device'``). What each method blocks on
    is documented by the subclass.
    """
    CAPABILITIES = frozenset()
    OPTIMIZER, SYNC, PROGRESS, CHECKPOINT, ROW_SPARSE = OPTIMIZER, SYNC, PROGRESS, CHECKPOINT, ROW_SPARSE
    TABLE_OPTIONS, PULL_STEP = TABLE_OPTIONS, PULL_STEP

    def __init__(self, type_name):
        self._type = type_name

    @property
    def type(self):
        """The type name this store was created with."""
        return self._type

    @property
    def rank(self):
        """This worker's rank, 0 .. num_workers - 1."""
        return 0

    @property
    def num_workers(self):
        """Number of workers sharing the store."""
        return 1

    def is_capable(self, capability):
        """Whether this store has ``capability`` (one of the names in this module's table)."""
        if capability not in KNOWN_CAPABILITIES:
            raise ConfigError(f"unknown kvstore capability {capability!r} (known: {', '.join(KNOWN_CAPABILITIES)})")
        return capability in self.CAPABILITIES

    def _unsupported(self, what):
        return ConfigError(f"kvstore type {self.type!r} does not support {what}")

    def init(self, keys, values):
        """Store the initial values of ``keys``."""
        raise self._unsupported('init')

    def push(self, keys, values, priority=0):
        """Push values (gradients, with an optimizer set) of ``keys``."""
        raise self._unsupported('push')

    def pull(self, keys, out=None, priority=0):
        """Fill ``out`` with the stored values of ``keys``."""
        raise self._unsupported('pull')

    def pushpull(self, keys, values, out=None, priority=0):
        """``push(keys, values)`` then ``pull(keys, out)`` (``out`` defaults to ``values``)."""
        self.push(keys, values, priority)
        self.pull(keys, out=values if out is None else out, priority=priority)

    def broadcast(self, keys, values, out, priority=0):
        """``init(keys, values)`` then ``pull(keys, out)``: every worker gets rank 0's values."""
        self.init(keys, values)
        self.pull(keys, out=out, priority=priority)

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` inside the store on every later push (capability ``'optimizer'``)."""
        raise self._unsupported('set_optimizer')

    def _set_updater(self, updater):
        """Use ``updater(key, merged_grad, stored_weight)`` on every later push (MXNet's private API)."""
        raise self._unsupported('an updater function (use set_optimizer)')

    def report_progress(self, epoch=None, nbatch=None, samples=None, metrics=None, force=False, stopped=False):
        """Tell the cluster how far this worker is (capability ``'progress'``); a no-op elsewhere."""

    def end_training(self):
        """This worker pushes no more; a no-op unless the store keeps rounds across workers."""

    def save_checkpoint(self, path):
        """Write weights and optimizer state into directory ``path`` (capability ``'checkpoint'``)."""
        raise self._unsupported('checkpoints')

    def load_checkpoint(self, path):
        """Replace weights and optimizer state with the checkpoint in ``path`` (capability ``'checkpoint'``)."""
        raise self._unsupported('checkpoints')

    def barrier(self):
        """Wait for every worker; a no-op for a single worker."""

    def close(self):
        """Release what the store holds (idempotent)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

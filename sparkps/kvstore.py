"""Key-value stores with MXNet's interface: ``create('local'|'dist_sync'|'dist_async')``, LocalKVStore.

    kv = sparkps.kvstore.create('local')
    kv.init([0, 1], [w0, w1])
    kv.set_optimizer(sparkps.train.optimizer.create('sgd', learning_rate=0.1))
    kv.push([0, 1], [g0, g1])            # applies the optimizer to the stored weights
    kv.pull([0, 1], out=[w0, w1])        # copies the stored weights into w0, w1

Row-sparse keys (sparse embedding tables) are initialised with a ``sparkps.sparse.RowSparse`` (all rows of a
bounded table, or none of a hashed one), read with ``row_sparse_pull`` and updated by pushing RowSparse gradients:

    kv.init('emb', RowSparse.from_dense(table))
    kv.row_sparse_pull('emb', out=rows, row_ids=ids)       # rows[i] = table row ids[i]
    kv.push('emb', RowSparse(ids, grad_rows, table.shape))   # lazy update of those rows only

The dist types live in ``sparkps.ps.worker`` and are imported only when asked for, so local training never
loads the parameter-server code.
"""
from sparkps.errors import ConfigError, ShapeError
from sparkps.sparse import RowSparse
from sparkps.train.optimizer import get_updater
from sparkps.train.row_table import RowSparseKeys, RowTable

DIST_TYPES = ('dist_sync', 'dist_async', 'dist_sync_device', 'dist_async_device')


def create(name='local', **kwargs):
    """Return a KVStore: ``'local'`` (or ``'device'``) -> LocalKVStore; ``'dist_sync'``/``'dist_async'`` ->
    ``sparkps.ps.worker.create_dist_kvstore(name, **kwargs)`` (which blocks until the worker registered with
    the scheduler, up to its register timeout). Unknown types -> ConfigError."""
    if not isinstance(name, str):
        return name
    if name in ('local', 'device', 'local_update_cpu', 'local_allreduce_cpu'):
        if kwargs:
            raise ConfigError(f"kvstore 'local' takes no options, got {sorted(kwargs)}")
        return LocalKVStore()
    if name in DIST_TYPES:
        import sparkps.ps.worker as worker
        return worker.create_dist_kvstore(name.replace('_device', ''), **kwargs)
    raise ConfigError(f"unknown kvstore type {name!r}; use 'local', 'dist_sync' or 'dist_async'")


def _pairs(keys, values, what):
    """Pair keys with values: a single key with one value, or equally long lists."""
    if isinstance(keys, (list, tuple)):
        if not isinstance(values, (list, tuple)) or len(values) != len(keys):
            count = len(values) if isinstance(values, (list, tuple)) else 1
            raise ConfigError(f"kvstore {what}: {len(keys)} keys but {count} values")
        return list(zip(keys, values))
    return [(keys, values)]


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


class LocalKVStore(RowSparseKeys):
    """An in-process store (type ``'local'``): rank 0 of 1 worker. Nothing here blocks.

    ``push`` sums the values given for a key (a list of arrays per key, as MXNet's several devices) and,
    with an optimizer set, applies ``optimizer.update`` to the stored weight; without one it stores the sum.
    Stored arrays stay on the backend (numpy or CuPy) of the values given to ``init``.
    """
    type = 'local'

    def __init__(self):
        self._store = {}
        self._updater = None

    rank = property(lambda self: 0, doc="This worker's rank: always 0.")
    num_workers = property(lambda self: 1, doc="Number of workers: always 1.")

    def init(self, keys, values):
        """Store copies of the initial values; a key can be initialised once."""
        for key, value in _pairs(keys, values, 'init'):
            if key in self._store:
                raise ConfigError(f"kvstore key {key!r} is already initialised")
            value = _as_list(value)[0]
            self._store[key] = RowTable(key, value) if isinstance(value, RowSparse) else value.copy()

    def _stored(self, key, what):
        try:
            return self._store[key]
        except KeyError:
            raise ConfigError(f"kvstore {what}: key {key!r} was never initialised") from None

    def push(self, keys, values, priority=0):
        """Sum the values of each key and update (or replace) the stored value."""
        for key, value in _pairs(keys, values, 'push'):
            stored = self._stored(key, 'push')
            grads = _as_list(value)
            if isinstance(stored, RowTable) or isinstance(grads[0], RowSparse):
                self._push_rows(key, stored, grads, self._updater)
                continue
            for grad in grads:
                if tuple(grad.shape) != tuple(stored.shape):
                    raise ShapeError(f"kvstore push: key {key!r} holds shape {tuple(stored.shape)}, "
                                     f"got {tuple(grad.shape)}")
            merged = grads[0] if len(grads) == 1 else sum(grads[1:], grads[0].copy())
            if self._updater is not None:
                self._updater(key, merged, stored)
            else:
                stored[...] = merged

    def pull(self, keys, out=None, priority=0):
        """Copy the stored value of each key into ``out`` (an array, or a list of arrays per key)."""
        if out is None:
            raise ConfigError("kvstore pull needs out= arrays to fill")
        for key, targets in _pairs(keys, out, 'pull'):
            stored = self._stored(key, 'pull')
            stored = stored.to_dense() if isinstance(stored, RowTable) else stored
            for target in _as_list(targets):
                if tuple(target.shape) != tuple(stored.shape):
                    raise ShapeError(f"kvstore pull: key {key!r} holds shape {tuple(stored.shape)}, "
                                     f"out has {tuple(target.shape)}")
                target[...] = stored

    def set_optimizer(self, optimizer):
        """Apply ``optimizer`` on every later push (state kept per key)."""
        self._updater = get_updater(optimizer)

    def set_updater(self, updater):
        """Use ``updater(key, merged_grad, stored_weight)`` on every later push."""
        self._updater = updater

    def barrier(self):
        """No-op: a single worker has nobody to wait for."""

    def close(self):
        """Release the stored arrays."""
        self._store.clear()

    def __repr__(self):
        return f'LocalKVStore(keys={sorted(self._store, key=str)})'

"""LocalKVStore: an in-process store for one worker (types ``local``, ``device``, ``local_allreduce_*``).

    kv = sparkps.kvstore.create('local')
    kv.init([0, 1], [w0, w1])
    kv.set_optimizer(sparkps.optimizer.create('sgd', learning_rate=0.1))
    kv.push([0, 1], [g0, g1])            # applies the optimizer to the stored weights
    kv.pull([0, 1], out=[w0, w1])        # copies the stored weights into w0, w1

Row-sparse keys (sparse embedding tables) are initialised with a ``sparkps.rows.values.RowSparse`` (all rows of a
bounded table, or none of a hashed one), read with ``row_sparse_pull`` and updated by pushing RowSparse gradients:

    kv.init('emb', RowSparse.from_dense(table))
    kv.row_sparse_pull('emb', out=rows, row_ids=ids)       # rows[i] = table row ids[i]
    kv.push('emb', RowSparse(ids, grad_rows, table.shape))   # lazy update of those rows only
"""
from sparkps.errors import ConfigError, ShapeError
from sparkps.kvstore.base import OPTIMIZER, ROW_SPARSE, TABLE_OPTIONS, KVStoreBase, key_kind, key_value_lists
from sparkps.kvstore.local_rows import RowSparseKeys, RowTable
from sparkps.optimizer import get_updater
from sparkps.optimizer.finite import check_pushed
from sparkps.rows.values import RowSparse


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


class LocalKVStore(RowSparseKeys, KVStoreBase):
    """An in-process store: rank 0 of 1 worker. Nothing here blocks.

    ``push`` sums the values given for a key (a list of arrays per key, as MXNet's several devices) and,
    with an optimizer set, applies ``optimizer.update`` to the stored weight; without one it stores the sum.
    Stored arrays stay on the backend (numpy or CuPy) of the values given to ``init``.
    """
    CAPABILITIES = frozenset((OPTIMIZER, ROW_SPARSE, TABLE_OPTIONS))

    def __init__(self, type_name='local'):
        super().__init__(type_name)
        self._store = {}
        self._updater = None
        self._key_kind = None

    def init(self, keys, values):
        """Store copies of the initial values; a key can be initialised once."""
        for key, value in zip(*key_value_lists(keys, values, 'init')):
            if key in self._store:
                raise ConfigError(f"kvstore key {key!r} is already initialised")
            value = _as_list(value)[0]
            if isinstance(value, RowSparse):     # row-sparse tables go by name beside int dense keys
                self._init_rows(key, value)
                continue
            self._key_kind = key_kind(self._key_kind, key, 'init')
            self._store[key] = value.copy()

    def _init_rows(self, key, value, config=None):
        """Hold row-sparse ``key`` as a RowTable of ``value``'s rows (``config``: its TableConfig)."""
        if key in self._store:
            raise ConfigError(f"kvstore key {key!r} is already initialised")
        self._store[key] = RowTable(key, value, config)

    def _stored(self, key, what):
        stored = self._store.get(key)
        if not isinstance(stored, RowTable):
            self._key_kind = key_kind(self._key_kind, key, what)
        if stored is None:
            raise ConfigError(f"kvstore {what}: key {key!r} was never initialised")
        return stored

    def push(self, keys, values, priority=0):
        """Sum the values of each key and update (or replace) the stored value."""
        for key, value in zip(*key_value_lists(keys, values, 'push')):
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
            check_pushed(key, merged)
            if self._updater is not None:
                self._updater(key, merged, stored)
            else:
                stored[...] = merged

    def pull(self, keys, out=None, priority=0):
        """Copy the stored value of each key into ``out`` (an array, or a list of arrays per key)."""
        if out is None:
            raise ConfigError("kvstore pull needs out= arrays to fill")
        for key, targets in zip(*key_value_lists(keys, out, 'pull', 'out arrays')):
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

    def _set_updater(self, updater):
        """Use ``updater(key, merged_grad, stored_weight)`` on every later push."""
        self._updater = updater

    def close(self):
        """Release the stored arrays."""
        self._store.clear()

    def __repr__(self):
        return f'LocalKVStore(type={self.type!r}, keys={sorted(self._store, key=str)})'

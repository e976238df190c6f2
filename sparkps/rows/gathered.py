"""GatheredRows: the rows of one scoring batch's ids, gathered from a model's shard files (a Spark join), read as a
prediction reads a frozen table of the local kvstore: a held row as it is, an id the gathering lacks (unseen in
training) its initial row from the table's initializer (:mod:`sparkps.rows.init`), nothing stored or counted.

It answers ``row_sparse_pull`` only, what ``sparkps.train.sparse_batch.SparseBatch.pull`` asks of a store, so a
network bound once reads each batch's rows straight from the gathered arrays: no kvstore, table or id index is built
per batch (a sorted search over the gathered ids). Nothing here blocks.

    rows = GatheredRows({'user': RowSparse(ids, vectors, (None, 8))}, {'user': user_config})
    rows.row_sparse_pull('user', out=target, row_ids=unique_ids)
"""
import numpy as np

from sparkps.errors import ConfigError, ShapeError
from sparkps.rows.ids import table_seed
from sparkps.rows.init import RowInitializer


class GatheredRows:
    """The gathered rows of tables ``configs`` ({name: TableConfig}: width, initializer) from ``rows`` ({name:
    RowSparse}, each id once; a table absent from it reads initial rows only)."""

    def __init__(self, rows, configs):
        self._tables = {}
        for name, config in configs.items():
            value = rows.get(name)
            ids = np.empty(0, np.int64) if value is None else np.asarray(value.ids, np.int64)
            vectors = np.empty((0, config.dim), np.float32) if value is None else np.asarray(value.rows, np.float32)
            if vectors.shape != (ids.size, config.dim):
                raise ShapeError("table %r: gathered rows of shape %s for %d ids of width %d"
                                 % (name, vectors.shape, ids.size, config.dim))
            if ids.size > 1 and not (ids[1:] > ids[:-1]).all():
                order = np.argsort(ids, kind="stable")
                ids, vectors = ids[order], vectors[order]
            self._tables[name] = (ids, vectors, table_seed(name), RowInitializer.from_config(config.init), config.dim)

    @staticmethod
    def is_capable(capability):
        """Only ``'row_sparse'``: it holds the rows of sparse tables, read-only."""
        return capability == "row_sparse"

    def row_sparse_pull(self, key, out=None, row_ids=None, priority=0, counts=None, peek=False):
        """Copy the rows of distinct int64 ``row_ids`` of table ``key`` into ``out`` ((len(row_ids), dim)): the
        gathered row, else the id's initial row. ``counts`` and ``peek`` change nothing (a read-only source).
        Returns ``out``."""
        if key not in self._tables:
            raise ConfigError("gathered rows: no table %r (tables: %s)" % (key, sorted(self._tables)))
        ids, vectors, seed, init, dim = self._tables[key]
        wanted = np.asarray(row_ids).view(np.int64).reshape(-1)
        if out is None or tuple(out.shape) != (wanted.size, dim):
            raise ShapeError("row_sparse_pull: table %r gives %d rows of width %d, out has shape %s"
                             % (key, wanted.size, dim, None if out is None else tuple(out.shape)))
        hit = np.zeros(wanted.size, bool)
        if ids.size:
            at = np.minimum(np.searchsorted(ids, wanted), ids.size - 1)
            hit = ids[at] == wanted
            out[hit] = vectors[at[hit]]
        if not hit.all():
            out[~hit] = init(seed, wanted[~hit].view(np.uint64), dim, out.dtype)
        return out

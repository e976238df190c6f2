"""Row-sparse values: the ids of some rows of a table, those rows, and the table's full shape.

A row-sparse gradient is what a sparse embedding produces: only the rows a batch touched, one per id
(MXNet's ``RowSparseNDArray``). The symbol, training and parameter-server layers all pass it around, so it
lives here, importing only numpy.

    grad = RowSparse(ids=[7, 3], rows=np.ones((2, 4), np.float32), shape=(None, 4))   # an unbounded table
    grad = grad.merged()              # sorted unique ids, rows of repeated ids summed
    kv.push('user_emb', grad)

Ids are 64-bit integers (``int64``; ``uint64`` ids are taken bit for bit). ``shape[0]`` is the table's row
count (``input_dim``) or None for a hashed table with no bound. Nothing here blocks.
"""
import hashlib

import numpy as np

from sparkps.errors import DataError, ShapeError

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class RowSparse:
    """Rows of a 2-D table picked by 64-bit ids: ``ids`` (n,), ``rows`` (n, dim), ``shape`` (rows or None, dim).

    ``ids`` may repeat until ``merged()`` sums them; every consumer that applies rows (a kvstore push)
    merges first, so repeats are never applied twice.
    """

    __slots__ = ("ids", "rows", "shape")

    def __init__(self, ids, rows, shape):
        self.ids = as_ids(ids)
        self.rows = rows
        self.shape = (None if shape[0] is None else int(shape[0]), int(shape[1]))
        if rows.ndim != 2 or rows.shape[0] != self.ids.size or rows.shape[1] != self.shape[1]:
            raise ShapeError(f"RowSparse: {self.ids.size} ids need rows of shape ({self.ids.size}, "
                             f"{self.shape[1]}), got {tuple(rows.shape)}")

    stype = "row_sparse"

    @property
    def dim(self):
        """The row width."""
        return self.shape[1]

    @classmethod
    def from_dense(cls, array):
        """Every row of a dense (rows, dim) array, ids 0..rows-1."""
        return cls(np.arange(array.shape[0], dtype=np.int64), array, array.shape)

    def merged(self):
        """The same value with sorted unique ids, the rows of repeated ids summed."""
        if self.ids.size < 2 or bool(np.all(self.ids[1:] > self.ids[:-1])):
            return self       # already sorted and unique (what np.unique gave the batch)
        uniq, inverse = np.unique(self.ids, return_inverse=True)
        if uniq.size == self.ids.size:
            order = np.argsort(self.ids, kind="stable")
            return RowSparse(self.ids[order], self.rows[order], self.shape)
        rows = np.zeros((uniq.size, self.dim), dtype=self.rows.dtype)
        np.add.at(rows, inverse.reshape(-1), self.rows)
        return RowSparse(uniq, rows, self.shape)

    def to_dense(self):
        """The full (rows, dim) array, zeros where no id names a row; a bounded table only."""
        if self.shape[0] is None:
            raise ShapeError("RowSparse.to_dense: the table has no row bound (a hashed table)")
        out = np.zeros(self.shape, dtype=self.rows.dtype)
        np.add.at(out, self.ids, self.rows)
        return out

    def __repr__(self):
        return f"RowSparse({self.ids.size} rows of shape {self.shape})"


def as_ids(ids):
    """``ids`` as a flat int64 array; uint64 ids are reinterpreted bit for bit, other dtypes must be integer."""
    ids = np.asarray(ids)
    if ids.dtype == np.uint64:
        return ids.reshape(-1).view(np.int64)
    if ids.size == 0:
        return ids.reshape(-1).astype(np.int64)
    if ids.dtype.kind not in "iu":
        raise DataError(f"ids must be integers, got dtype {ids.dtype}")
    return ids.reshape(-1).astype(np.int64, copy=False)


def table_seed(table):
    """A stable 64-bit number for a table name (blake2b; never Python's per-process ``hash()``)."""
    digest = hashlib.blake2b(str(table).encode("utf-8"), digest_size=8).digest()
    return np.uint64(int.from_bytes(digest, "little"))


def _mix(z):
    """splitmix64's finaliser over a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def initial_rows(table, ids, dim, scale=0.01, dtype=np.float32):
    """The initial rows of ``ids`` in ``table``: uniform in [-scale, scale), a function of (table, id, column)
    only, so a row starts the same whichever process or server creates it, and in whatever order. The bits are
    splitmix64(splitmix64(splitmix64(id ^ seed)) + column * golden), seed = blake2b-64 of the table name."""
    ids = as_ids(ids).view(np.uint64)
    with np.errstate(over="ignore"):
        base = _mix(_mix(ids ^ table_seed(table)))[:, None]   # the servers' stream-0 formula (one mix per stream)
        cols = (np.arange(1, dim + 1, dtype=np.uint64) * _GOLDEN)[None, :]
        bits = _mix(base + cols) >> np.uint64(11)
    unit = bits.astype(np.float64) * (1.0 / (1 << 53))
    return ((2.0 * unit - 1.0) * scale).astype(dtype)

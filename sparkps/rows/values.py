"""Row-sparse values: the ids of some rows of a table, those rows, and the table's full shape.

A row-sparse gradient is what a sparse embedding produces: only the rows a batch touched, one per id
(MXNet's ``RowSparseNDArray``). The symbol, training and parameter-server layers all pass it around, so it
lives here, below all of them.

    grad = RowSparse(ids=[7, 3], rows=np.ones((2, 4), np.float32), shape=(None, 4))   # an unbounded table
    grad = grad.merged()              # sorted unique ids, rows of repeated ids summed
    kv.push('user_emb', grad)

Ids are 64-bit integers (``int64``; ``uint64`` ids are taken bit for bit), checked once by
``sparkps.rows.ids.value_ids`` when the value is made of raw ids (``CheckedIds`` are taken as they are), never
again for the values ``merged`` and ``add`` make of checked ones. ``shape[0]`` is the table's row
count (``input_dim``) or None for a hashed table with no bound. Nothing here blocks.
"""
import numpy as np

from sparkps.errors import ShapeError
from sparkps.optimizer.sparse import RowSparseValue
from sparkps.rows.ids import checked, joint_bound, value_ids
from sparkps.rows.init import initial_rows  # noqa: F401 (a row's initial value, long imported from here)


class RowSparse(RowSparseValue):
    """Rows of a 2-D table picked by 64-bit ids: ``ids`` (n,), ``rows`` (n, dim), ``shape`` (rows or None, dim).

    ``ids`` may repeat until ``merged()`` sums them; every consumer that applies rows (a kvstore push)
    merges first, so repeats are never applied twice.
    """

    __slots__ = ("ids", "rows", "shape")

    def __init__(self, ids, rows, shape):
        self._made(value_ids(ids), rows, shape)

    @classmethod
    def _of_checked(cls, ids, rows, shape):
        """A value of int64 ``ids`` taken from values' checked ones (``merged``, ``add``): not checked again."""
        value = cls.__new__(cls)
        value._made(ids, rows, shape)
        return value

    def _made(self, ids, rows, shape):
        self.ids = ids
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
        plain = np.asarray(self.ids)      # CheckedIds or not: compared and summed as a plain array
        if plain.size < 2 or bool((plain[1:] > plain[:-1]).all()):
            return self       # already sorted and unique (what np.unique gave the batch)
        ids, rows = sum_rows(plain, self.rows)
        bound = joint_bound(self.ids)
        return RowSparse._of_checked(ids if bound is False else checked(ids, bound), rows, self.shape)

    def add(self, other):
        """This value and ``other`` (of the same table) together: the ids and rows of both, repeats kept (``merged``
        sums them). A sync round on a server sums the workers' pushes of a table with it."""
        ids, bound = np.concatenate([np.asarray(self.ids), np.asarray(other.ids)]), joint_bound(self.ids, other.ids)
        return RowSparse._of_checked(ids if bound is False else checked(ids, bound),
                                     np.concatenate([self.rows, other.rows]), self.shape)

    def to_dense(self):
        """The full (rows, dim) array, zeros where no id names a row; a bounded table only."""
        if self.shape[0] is None:
            raise ShapeError("RowSparse.to_dense: the table has no row bound (a hashed table)")
        out = np.zeros(self.shape, dtype=self.rows.dtype)
        np.add.at(out, self.ids, self.rows)
        return out

    def __repr__(self):
        return f"RowSparse({self.ids.size} rows of shape {self.shape})"


def sum_rows(ids, rows):
    """Sum the rows that share an id: returns ``(sorted distinct ids, their summed rows)`` (distinct uint64 ids
    sorted as their int64 view come back as they are: a table's push of a batch's unique ids). The one segment sum
    of row-sparse values (a ``RowSparse`` merging repeats, a server table applying a round): a stable sort and one
    ``np.add.reduceat`` over the runs of equal ids, so each id's rows are added in the order they came."""
    if _distinct_sorted(ids):
        return ids, rows          # distinct and sorted already (a merged value, a batch's unique ids)
    uniq, inverse = np.unique(ids, return_inverse=True)
    inverse = inverse.reshape(-1)
    if uniq.size == ids.size:
        order = np.argsort(ids, kind="stable")
        return ids[order], rows[order]
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(uniq.size))
    return uniq, np.add.reduceat(rows[order], starts, axis=0)


def _distinct_sorted(ids):
    """Whether ``ids`` are strictly increasing; uint64 ids also when their int64 view is (a batch's unique ids,
    sorted as int64, reach a table as their uint64 view: distinct all the same)."""
    if ids.size < 2 or bool((ids[1:] > ids[:-1]).all()):
        return True
    if ids.dtype != np.uint64:
        return False
    signed = ids.view(np.int64)
    return bool((signed[1:] > signed[:-1]).all())

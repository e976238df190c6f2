"""``Optimizer.update`` with row-sparse weights or gradients (``sparkps.rows.values.RowSparse``), as MXNet 1.x's
row_sparse updates (python/mxnet/optimizer/optimizer.py, src/operator/optimizer_op.cc):

- lazy (optimizers capable of ``'lazy_rows'``, :mod:`sparkps.optimizer.abilities`: SGD and Adam with
  ``lazy_update=True``, their default; AdaGrad and FTRL always): only the rows the gradient names change, weight
  decay and momentum included. The rows and their state are gathered, the dense update runs on that block (the
  same math as :class:`sparkps.optimizer.rowwise.RowOptimizer`, with the parameter's own update count, as MXNet's
  Adam) and they are scattered back.
- standard (``lazy_update=False``, and every optimizer without a row-sparse kernel in MXNet): the gradient is
  densified (absent rows are zero) and the dense update runs on every row.

A RowSparse weight holds some rows of a table (its ``ids``); its state is shaped like its ``rows``; a gradient row
whose id the weight does not hold is a DataError naming it. Nothing here blocks.
"""
from abc import ABC

import numpy as np

from sparkps.backend import get_array_module
from sparkps.errors import DataError
from sparkps.optimizer.abilities import LAZY_ROWS


class RowSparseValue(ABC):  # noqa: B024 (a type to check against: it has no abstract method to declare)
    """What an update asks of a row-sparse weight or gradient: ``ids`` (n,), ``rows`` (n, dim) and ``merged()``
    (repeated ids summed). ``sparkps.rows.values.RowSparse`` derives from it; this layer imports nothing above
    it, so the class is declared here and checked by type."""

    __slots__ = ()


def is_row_sparse(value):
    """True for a row-sparse value (a :class:`RowSparseValue`)."""
    return isinstance(value, RowSparseValue)


def dense_part(value):
    """The array an update changes: a RowSparse weight's rows, else the array itself."""
    return value.rows if is_row_sparse(value) else value


def positions(opt, index, weight, grad):
    """Where each of ``grad``'s ids lies in ``weight``'s rows (the id itself for a dense weight)."""
    ids = np.asarray(grad.ids)
    if is_row_sparse(weight):
        held = np.asarray(weight.ids)
        order = np.argsort(held, kind='stable')
        found = np.searchsorted(held, ids, sorter=order)
        found = np.minimum(found, len(held) - 1) if len(held) else found
        pos = order[found] if len(held) else found
        missing = ids[held[pos] != ids] if len(held) else ids
    else:
        pos, missing = ids, ids[(ids < 0) | (ids >= weight.shape[0])]
    if missing.size:
        raise DataError(f"optimizer {opt.name!r}: the gradient of parameter {index} names row {int(missing[0])}, "
                        f"which its weight does not hold")
    return pos


def sparse_update(opt, index, weight, grad, state):
    """Update ``weight`` (dense or RowSparse) from ``grad`` (dense or RowSparse) and ``state``, in place."""
    target = dense_part(weight)
    if not is_row_sparse(grad):
        opt.update(index, target, grad, state)
        return
    grad = grad.merged()
    rows = grad.rows if isinstance(target, np.ndarray) else _device(target, grad.rows)
    pos = positions(opt, index, weight, grad)
    if not opt.is_capable(LAZY_ROWS):
        dense = np.zeros_like(target)
        dense[_device(target, pos)] = rows
        opt.update(index, target, dense, state)
        return
    where = _device(target, pos)
    block = target[where]
    gathered = None if state is None else tuple(s[where] for s in state)
    opt.update(index, block, rows.astype(target.dtype, copy=False), gathered)
    target[where] = block
    for whole, part in zip(state or (), gathered or ()):
        whole[where] = part


def _device(like, array):
    """``array`` on ``like``'s backend (numpy or CuPy)."""
    return np.asarray(array) if isinstance(like, np.ndarray) else get_array_module(like).asarray(array)

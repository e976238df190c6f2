"""Checks on user arrays before training starts, and host/backend copies.

Bad input is reported here with a message naming the array, row and value, instead of surfacing as a
traceback from deep inside numpy or the executor.
"""
import numpy as np

from sparkps.backend import asnumpy as host  # the one host-copy function, under the name callers use
from sparkps.errors import DataError, ShapeError


def copy_into(target, source):
    """Copy ``source`` (numpy or CuPy) into ``target`` in place; shapes must match."""
    if tuple(np.shape(source)) != tuple(target.shape):
        raise ShapeError(f"cannot copy an array of shape {tuple(np.shape(source))} into {tuple(target.shape)}")
    if isinstance(target, np.ndarray):
        target[...] = host(source)
    elif isinstance(source, np.ndarray):
        target.set(np.ascontiguousarray(source, dtype=target.dtype))
    else:
        target[...] = source


def _finite(array, role):
    bad = ~np.isfinite(array)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise DataError(f"{role} holds {array[where]} at index {where}: NaN and infinity are not allowed")


def _numeric(array, role):
    try:
        array = np.asarray(host(array), dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{role} is not a numeric array: {exc}") from None
    if array.ndim == 0 or array.shape[0] == 0:
        raise DataError(f"{role} has no rows (shape {array.shape})")
    return array


def checked_arrays(X, y=None, need_label=False):
    """Return (X, y) as float32 arrays after checking rows, NaN/inf and that y exists when needed."""
    X = _numeric(X, 'X')
    _finite(X, 'X')
    if y is None:
        if need_label:
            raise DataError("labels y are required when X is a numpy array")
        return X, None
    y = _numeric(y, 'y')
    if y.shape[0] != X.shape[0]:
        raise DataError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    _finite(y, 'y')
    return X, y


def check_labels_fit(labels, symbol, shapes):
    """Class labels (1-D ``labels`` for an output of shape (batch, classes)) must be integers in range.

    ``labels``: [(label name, array)]; ``shapes``: the bound input shapes, used to infer the outputs.
    """
    _, out_shapes, _ = symbol.infer_shape(**shapes)
    if len(labels) != len(out_shapes):
        return
    for (name, y), out_shape in zip(labels, out_shapes):
        if y.ndim != 1 or len(out_shape) != 2 or out_shape[1] < 2:
            continue
        classes = out_shape[1]
        bad = (y != np.round(y)) | (y < 0) | (y >= classes)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(f"label {name!r} holds {y[row]:g} at row {row}, but the network predicts "
                            f"{classes} classes (labels must be integers in [0, {classes}))")


def named_inputs(X, y, is_train):
    """A dict of named input arrays and its labels, checked: integer arrays (ids) keep their dtype, the others
    become float32 without NaN/inf; every array has y's row count."""
    if not X:
        raise DataError("X is an empty dict: name at least one input array")
    arrays = {}
    for name, value in X.items():
        value = np.asarray(value)
        arrays[name] = value if value.dtype.kind in 'iu' else checked_arrays(value)[0]
    if y is None:
        if is_train:
            raise DataError("labels y are required when X is a dict of arrays")
        return arrays, None
    rows = np.zeros((np.shape(y)[0] if np.ndim(y) else 0, 1), np.float32)   # y's own checks; NDArrayIter matches rows
    return arrays, checked_arrays(rows, y)[1]

"""The guard against NaN and infinity: a pushed gradient with a non-finite value is refused before it reaches
the weights, naming the key (dense) or the table row (sparse). The servers' tables check every push
(:mod:`sparkps.server.tables`) and the server names the worker (:class:`~sparkps.server.kvserver.KVServer`); with
the server setting ``nonfinite='skip'`` (``SPARKPS_NONFINITE=skip``) the push is dropped and counted instead, a
sync round completing without it. The local kvstore checks its pushes the same way.

The check is one dot product of the pushed values with themselves (NaN or infinity make it non-finite; a device
array is summed instead); only a non-finite result (or one that overflowed, values above ~1e19) is searched
element by element for the culprit.

>>> check_dense([0, 1], [2, 2], np.array([0, 1, np.nan, 3], np.float32))
Traceback (most recent call last):
...
sparkps.optimizer.finite.NonFinite: a non-finite gradient value (nan) for key 1 (element 0 of its piece)
"""
import math
import os

import numpy as np

from sparkps.errors import ConfigError, DataError

MODES = ("fail", "skip")


class NonFinite(DataError):
    """A pushed gradient holds NaN or infinity; the message names the key or the table row."""


def nonfinite_mode(value=None):
    """The server setting ``nonfinite``: ``value``, else ``$SPARKPS_NONFINITE``, else ``'fail'``; ConfigError
    naming the setting for anything but ``'fail'`` or ``'skip'``."""
    value = value if value is not None else os.environ.get("SPARKPS_NONFINITE") or "fail"
    if value not in MODES:
        raise ConfigError("nonfinite must be 'fail' or 'skip', got %r (SPARKPS_NONFINITE)" % (value,))
    return value


def first_nonfinite(values):
    """The flat index of the first NaN or infinity of ``values``, or None when every value is finite.
    One sum over the values when they are all finite."""
    flat = values.reshape(-1)
    if flat.size == 0:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        if isinstance(flat, np.ndarray) and flat.dtype.kind == "f":
            total = np.dot(flat, flat)      # BLAS: one read, about twice as fast as a float32 sum here
        else:
            total = flat.sum()              # a device array
        if math.isfinite(float(total)):
            return None
    flat = flat.get() if hasattr(flat, "get") else np.asarray(flat)    # a device array: search on the host
    bad = ~np.isfinite(flat)
    return int(np.argmax(bad)) if bad.any() else None      # a sum of large finite values may overflow


def check_dense(keys, sizes, flat):
    """NonFinite naming the key and element of the first non-finite value of a dense gradient (the flat
    values of ``keys``' pieces of ``sizes`` elements, in order)."""
    at = first_nonfinite(flat)
    if at is None:
        return
    flat = flat.get() if hasattr(flat, "get") else np.asarray(flat)
    offset = 0
    for key, size in zip(keys, sizes):
        if at < offset + size:
            raise NonFinite("a non-finite gradient value (%s) for key %s (element %d of its piece)"
                            % (flat.reshape(-1)[at], key, at - offset))
        offset += size
    raise NonFinite("a non-finite gradient value (%s) at element %d" % (flat.reshape(-1)[at], at))


def check_rows(table, ids, grads):
    """NonFinite naming the table and the row id of the first non-finite value of a row gradient."""
    at = first_nonfinite(grads)
    if at is None:
        return
    grads = grads.get() if hasattr(grads, "get") else np.asarray(grads)
    ids = np.asarray(ids).reshape(-1)
    dim = grads.size // max(ids.size, 1)
    row = at // max(dim, 1)
    rid = int(ids[row]) if row < ids.size else row
    raise NonFinite("a non-finite gradient value (%s) for row %d of table %r"
                    % (grads.reshape(-1)[at], rid, table))


def check_pushed(key, values, ids=None):
    """The local kvstore's check of a push to ``key`` (dense ``values``, or the rows ``values`` of ``ids``):
    NonFinite naming the key, and the row, on a NaN or infinity."""
    try:
        if ids is None:
            check_dense([key], [values.size], values)
        else:
            check_rows(key, ids, values)
    except NonFinite as exc:
        raise NonFinite("kvstore push: %s" % exc) from None

"""Sparse row ids: validation where ids enter, the stable 64-bit mix, a table's seed and which server holds a row.

Ids are any 64-bit integers, signed or unsigned, taken as their 64 bits (``-1`` and ``2**64 - 1`` are the same
id). They are checked once where they enter a process (a training batch, a server's request, a kvstore's
``row_sparse_pull`` and ``push`` called with raw ids, a ``RowSparse`` made of them), by one of the functions
here, each with the message its callers have always given. What a check passes travels as :class:`CheckedIds`
(the same array, typed: "checked, each id in ``[0, bound)`` when ``bound`` is set"), which the layers below take
without checking again (:func:`trusted`); a plain array reaching a public entry is checked there.

=================  ===========================================================================================
:func:`row_ids`    ids of a request (worker and server): uint64, ``input_dim`` bounds as ``holds N, outside ...``
:func:`checked`    ids a check passed (or values taken from such ids) as :class:`CheckedIds`
:func:`trusted`    ``ids`` as uint64 when they are CheckedIds within a table's bound, else None (check them)
:func:`value_ids`  the ids of a ``RowSparse``: int64 (uint64 taken bit for bit)
:func:`batch_ids`  the ids of a training batch's field: int64; floats only for a bounded table, whole numbers
:func:`in_bounds`  a bounded table's ``[0, input_dim)`` check of checked ids, ``id N is outside [0, input_dim)``
=================  ===========================================================================================

A row lives on server ``mix64(id) % num_servers``, where ``mix64`` is the splitmix64 finaliser: structured ids
(multiples of the server count, field-prefixed hashes) spread evenly, which ``id % num_servers`` does not. The mix
is fixed here for good: checkpoints are re-routed with it on load, and a row's initial value
(:mod:`sparkps.rows.init`) is drawn with it from the table's seed (:func:`table_seed`).

>>> ids = row_ids([3, -1, 2**63], table='user')
>>> ids.dtype, int(ids[1]) == 2**64 - 1
(dtype('uint64'), True)
>>> shard_of(ids, 2).tolist()
[0, 1, 0]
"""
import hashlib
import math

import numpy as np

from sparkps.errors import DataError

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def mix64(ids):
    """The splitmix64 finaliser of every uint64 in ``ids`` (a bijection on 64-bit words; new array)."""
    z = np.array(ids, dtype=np.uint64, copy=True)
    with np.errstate(over='ignore'):
        z ^= z >> _S30
        z *= _M1
        z ^= z >> _S27
        z *= _M2
        z ^= z >> _S31
    return z


def table_seed(name):
    """A stable 64-bit seed (a Python int) for a table name: blake2b-64 of its UTF-8 bytes, little-endian (never
    Python's per-process ``hash``). A row's initial value is drawn from it (:mod:`sparkps.rows.init`)."""
    return int.from_bytes(hashlib.blake2b(str(name).encode('utf-8'), digest_size=8).digest(), 'little')


# ---- where ids enter ---------------------------------------------------------------------------------------
def _from_sequence(ids, table):
    try:
        values = [int(v) if not isinstance(v, (bool, float)) else _not_integer(v, table) for v in ids]
    except TypeError:
        raise DataError(f"table {table!r}: field 'ids' must hold integers, got {type(ids).__name__} "
                        f"of non-integers") from None
    bad = [v for v in values if v < -2 ** 63 or v >= 2 ** 64]
    if bad:
        raise DataError(f"table {table!r}: field 'ids' holds {bad[0]}, which is not a 64-bit integer")
    return np.array([v & 0xFFFFFFFFFFFFFFFF for v in values], dtype=np.uint64)


def _not_integer(value, table):
    what = 'NaN' if isinstance(value, float) and math.isnan(value) else repr(value)
    raise DataError(f"table {table!r}: field 'ids' must hold integers, got {type(value).__name__} {what}")


def row_ids(ids, table='?', input_dim=None):
    """Return ``ids`` as a flat uint64 array; raises DataError naming ``table`` and the field ``'ids'``.

    Integer arrays of any width are taken as their 64 bits (signed ones sign-extended). Float ids (NaN
    included), booleans and non-numbers are refused, never truncated. With ``input_dim`` (a bounded table,
    as ``Embedding(input_dim=...)``) every id must lie in ``[0, input_dim)``.
    """
    if isinstance(ids, np.ndarray):
        arr = ids
    elif isinstance(ids, (list, tuple)):
        arr = np.asarray(ids) if all(type(v) is int and -2 ** 63 <= v < 2 ** 63 for v in ids) \
            else _from_sequence(ids, table)
    else:
        arr = np.asarray(ids)
    if arr.size == 0:
        return np.zeros(0, np.uint64)
    kind = arr.dtype.kind
    if kind == 'f' or kind == 'c':
        nan = ' (NaN among them)' if kind == 'f' and np.isnan(arr).any() else ''
        raise DataError(f"table {table!r}: field 'ids' must hold integers, got {arr.dtype} values{nan}")
    if kind not in 'iu':
        raise DataError(f"table {table!r}: field 'ids' must hold integers, got dtype {arr.dtype}")
    flat = arr.reshape(-1)
    out = flat.astype(np.int64, copy=False).view(np.uint64) if kind == 'i' else flat.astype(np.uint64, copy=False)
    if input_dim is not None:
        outside = out >= np.uint64(input_dim)
        if outside.any():
            first = flat[np.argmax(outside)]
            raise DataError(f"table {table!r}: field 'ids' holds {int(first)}, outside input_dim "
                            f"{int(input_dim)} (a bounded table takes ids in [0, {int(input_dim)}))")
    return out


def value_ids(ids):
    """The ids of a row-sparse value as a flat int64 array: uint64 ids are reinterpreted bit for bit, other
    integer dtypes widened; DataError for any other dtype (an empty array of any dtype is no ids). CheckedIds
    are taken as they are (their int64 view, still CheckedIds)."""
    if isinstance(ids, CheckedIds):
        return ids.reshape(-1).view(np.int64)
    ids = np.asarray(ids)
    if ids.dtype == np.uint64:
        return ids.reshape(-1).view(np.int64)
    if ids.size == 0:
        return ids.reshape(-1).astype(np.int64)
    if ids.dtype.kind not in "iu":
        raise DataError(f"ids must be integers, got dtype {ids.dtype}")
    return ids.reshape(-1).astype(np.int64, copy=False)


def in_bounds(ids, bound, where, note=""):
    """``ids`` (int64, checked) when ``bound`` is None or every id lies in ``[0, bound)``; else DataError
    ``"{where}: id N is outside [0, bound){note}"``."""
    if bound is not None and ids.size and (int(ids.min()) < 0 or int(ids.max()) >= bound):
        bad = ids[(ids < 0) | (ids >= bound)][0]
        raise DataError(f"{where}: id {int(bad)} is outside [0, {bound}){note}")
    return ids


def batch_ids(ids, table, field, input_dim=None):
    """The raw ids of a training batch's ``field`` (read by ``table``) as int64; DataError naming the table and the
    field for float ids of a hashed table, NaN or fractional ids, and ids outside [0, input_dim) of a bounded one.
    A bounded table takes float ids that are whole numbers (a DataFrame's float columns)."""
    ids = np.asarray(ids)
    where = f"table {table!r}, field {field!r}"
    if ids.dtype == np.uint64:
        return ids.view(np.int64)
    if ids.dtype.kind in 'iub':
        ids = ids.astype(np.int64, copy=False)
    elif ids.dtype.kind != 'f':
        raise DataError(f"{where}: ids must be integers, got dtype {ids.dtype}")
    elif input_dim is None:
        raise DataError(f"{where}: ids of a hashed table must be an integer array (int64 or uint64), got "
                        f"{ids.dtype} (a float cannot hold 64-bit ids)")
    else:
        bad = ~np.isfinite(ids) | (ids != np.round(ids))
        if bad.any():
            raise DataError(f"{where}: ids must be whole numbers, found {float(ids[bad][0])}")
        ids = ids.astype(np.int64)
    return in_bounds(ids, input_dim, where, " (input_dim)")


# ---- checked ids, typed -------------------------------------------------------------------------------------
class CheckedIds(np.ndarray):
    """A flat int64 or uint64 array of ids a check of this module passed (:func:`checked`), every id in
    ``[0, bound)`` when ``bound`` is set (None: any 64-bit id). Only views and selections of it (``view``,
    ``reshape``, slices, ``ids[order]``, ``copy``) stay CheckedIds; numpy functions, arithmetic and ``astype``
    give plain arrays, and writing into one is a TypeError, so a CheckedIds never holds an id no check saw."""

    bound = None

    def __array_finalize__(self, obj):
        self.bound = getattr(obj, 'bound', None)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain(args), **_plain(kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(isinstance(o, CheckedIds) for o in kwargs.get('out', ()) or ()):
            raise TypeError("checked ids are read-only; write into a copy (np.array(ids))")
        return getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs))

    def __setitem__(self, index, value):
        raise TypeError("checked ids are read-only; write into a copy (np.array(ids))")

    def astype(self, dtype, *args, **kwargs):
        return np.asarray(self).astype(dtype, *args, **kwargs)


def _plain(value):
    if isinstance(value, CheckedIds):
        return value.view(np.ndarray)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def checked(ids, bound=None):
    """``ids`` (a flat int64 or uint64 array a check passed, or values taken only from such ids: their unique
    values, a selection) as :class:`CheckedIds` with ``bound``; no copy, nothing checked here."""
    ids = ids.view(CheckedIds)
    ids.bound = None if bound is None else int(bound)
    return ids


def trusted(ids, bound=None):
    """``ids`` as a plain uint64 view when they are :class:`CheckedIds` that hold for a table of ``bound`` rows
    (None: hashed, any id): checked with a bound within it, or any checked ids for a hashed table; else None.
    The layers below the caller take the plain view as checked (their ``*_checked`` functions)."""
    if not isinstance(ids, CheckedIds) or ids.ndim != 1 or ids.dtype not in (np.int64, np.uint64):
        return None
    if bound is not None and (ids.bound is None or ids.bound > bound):
        return None
    return np.asarray(ids).view(np.uint64)


def joint_bound(*ids):
    """The bound that holds for all of ``ids`` together (CheckedIds), or False when one is not checked."""
    if not all(isinstance(i, CheckedIds) for i in ids):
        return False
    return None if any(i.bound is None for i in ids) else max(i.bound for i in ids)


# ---- which server ------------------------------------------------------------------------------------------
def shard_of(ids, num_servers):
    """The server rank (0 .. num_servers-1) of each uint64 id: ``mix64(id) % num_servers`` (int64 array)."""
    if int(num_servers) < 1:
        raise ValueError(f"num_servers must be >= 1, got {num_servers}")
    return (mix64(ids) % np.uint64(num_servers)).astype(np.int64)


def split_by_server(ids, num_servers):
    """Group ``ids`` by server: returns ``(order, bounds)`` with ``ids[order[bounds[s]:bounds[s+1]]]`` the ids
    of server ``s`` (in their original relative order). One request per server carries each group."""
    shards = shard_of(ids, num_servers)
    order = np.argsort(shards, kind='stable')
    bounds = np.searchsorted(shards[order], np.arange(num_servers + 1))
    return order, bounds


def pull_counts(counts, n, table):
    """``counts`` of a pull of ``n`` ids (how often a batch used each id) as the uint32 (n,) array a pull carries;
    DataError naming ``table`` and the field 'counts' unless they are ``n`` non-negative integers that fit."""
    counts = np.asarray(counts)
    if counts.shape != (n,) or counts.dtype.kind not in 'iu' or (counts.size and (
            counts.min() < 0 or counts.max() > np.iinfo(np.uint32).max)):
        raise DataError(f"table {table!r}: field 'counts' must be {n} non-negative integers under 2**32 (one per "
                        f"pulled id), got {counts.dtype} of shape {counts.shape}")
    return counts.astype(np.uint32, copy=False)

"""Sparse row ids: validation, the stable 64-bit mix, and which server holds a row. Worker and server share it.

Ids are any 64-bit integers, signed or unsigned, taken as their 64 bits (``-1`` and ``2**64 - 1`` are the same
id). A row lives on server ``mix64(id) % num_servers``, where ``mix64`` is the splitmix64 finaliser: structured
ids (multiples of the server count, field-prefixed hashes) spread evenly, which ``id % num_servers`` does not.
The mix is fixed here for good: checkpoints are re-routed with it on load.

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


def name_seed(name):
    """A stable 64-bit seed for a table name (blake2b; never Python's per-process ``hash``)."""
    return int.from_bytes(hashlib.blake2b(str(name).encode('utf-8'), digest_size=8).digest(), 'little')


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

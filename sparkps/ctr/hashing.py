"""Categorical values to 64-bit feature ids, with no vocabulary pass.

The id of value ``v`` in field ``f`` is, by definition (docs/architecture.md, decision 14)::

    id(f, v) = int.from_bytes(blake2b(text(v).encode('utf-8'), digest_size=8,
                                      person=FEATURE_PERSON, salt=blake2b(f)[:16]).digest(), 'little')

where ``text(v)`` is the value's text: a str as is, an integer in decimal (so the column ``7`` of a
DataFrame and the text ``"7"`` of a CSV file give one id), bytes decoded as UTF-8, and a missing value
(None, NaN, empty string) the empty string, so "missing" is one id per field. The field takes part through
BLAKE2b's salt, so equal values in different fields never share an id. BLAKE2b is in every Python's
hashlib and in the reference implementation of every platform: ids are the same in every process, on
every machine and in every Python version (Python's ``hash()`` is salted per process and never used).

Ids are ``uint64``; ``to_signed`` gives the same 64 bits as ``int64`` for stores that want signed keys.

    ids = hash_column('C1', ['68fd1e64', '', '68fd1e64'])    # uint64, ids[0] == ids[2]
    buckets = bucket(ids, 1 << 20)                            # bounded row index, for dense tables

A column is hashed one distinct value at a time (np.unique first), so a Zipf-distributed column costs
one BLAKE2b call per distinct value, not per row. ``hash_codes`` takes a column already reduced to its distinct
values (codes into them, as ``pandas.factorize`` or Arrow's ``dictionary_encode`` give: no Python object per row):

    ids = hash_codes('C1', np.array([0, -1, 0]), ['68fd1e64'])   # -1: missing, the id of ''
"""
import hashlib
import math

import numpy as np

from sparkps.errors import DataError

FEATURE_PERSON = b"sparkps-feature1"     # BLAKE2b personalisation: a new scheme changes this string


def _field_salt(field):
    return hashlib.blake2b(str(field).encode("utf-8"), digest_size=16).digest()


def value_text(value):
    """The text a categorical value is hashed as (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return ""
        if float(value).is_integer():
            return str(int(value))
        return repr(float(value))
    return str(value)


def _digest(salt, text):
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8, person=FEATURE_PERSON, salt=salt).digest()
    return int.from_bytes(digest, "little")


def hash_value(field, value):
    """The 64-bit id (a Python int in [0, 2**64)) of one categorical ``value`` of ``field``."""
    return _digest(_field_salt(field), value_text(value))


def hash_column(field, values):
    """The uint64 ids of a column of categorical values of one field (any iterable or array). Each distinct value
    is turned into text and hashed once: a numpy string column is deduplicated by ``np.unique``, any other by a
    dict of its values (then by their texts, so ``7``, ``7.0`` and ``"7"`` meet)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "U":
        uniques, inverse = np.unique(values.ravel(), return_inverse=True)
        return _hashed(field, uniques)[inverse.ravel()]
    values = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=object).ravel()
    if values.size == 0:
        return np.zeros(0, dtype=np.uint64)
    try:
        index = {}
        first = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=values.size)
        texts = np.array([value_text(v) for v in index] + [""], dtype=str)[:-1]
    except TypeError:          # unhashable cells: one text per cell
        first = np.arange(values.size)
        texts = np.array([value_text(v) for v in values] + [""], dtype=str)[:-1]
    uniques, inverse = np.unique(texts, return_inverse=True)
    return _hashed(field, uniques)[inverse.ravel()[first]]


def hash_codes(field, codes, uniques):
    """The uint64 ids of a dictionary-encoded column: row r holds ``uniques[codes[r]]``, or a missing value where
    ``codes[r]`` is -1. The same ids as ``hash_column`` of the decoded column; each distinct value is hashed once."""
    table = np.append(hash_column(field, uniques), np.uint64(hash_value(field, None)))   # None: missing
    return table[np.asarray(codes, dtype=np.int64)]


def _hashed(field, texts):
    salt = _field_salt(field)
    return np.fromiter((_digest(salt, str(text)) for text in texts), dtype=np.uint64, count=len(texts))


def hash_fields(fields, columns):
    """(rows, len(fields)) uint64 ids: column j hashed with field name ``fields[j]``."""
    if len(fields) != len(columns):
        raise DataError("hash_fields: %d field names for %d columns" % (len(fields), len(columns)))
    if not columns:
        return np.zeros((0, 0), dtype=np.uint64)
    return np.stack([hash_column(f, c) for f, c in zip(fields, columns)], axis=1)


def split_multi(values, separator):
    """A multi-valued column (strings joined by ``separator``, or sequences) as (flat values, offsets):
    row r holds ``flat[offsets[r]:offsets[r + 1]]``. A missing or empty cell holds no value."""
    flat, offsets = [], [0]
    for cell in values:
        if cell is None or (isinstance(cell, float) and math.isnan(cell)):
            items = []
        elif isinstance(cell, str):
            items = [item for item in cell.split(separator) if item != ""]
        else:
            items = list(cell)
        flat.extend(items)
        offsets.append(len(flat))
    return flat, np.asarray(offsets, dtype=np.int64)


def bucket(ids, num_buckets):
    """Row indices in [0, num_buckets) for a table of bounded size: ids reduced by a multiply-shift on their
    high bits (the hash already mixed them), returned as int64."""
    if num_buckets < 1:
        raise DataError("bucket: num_buckets must be >= 1, got %r" % (num_buckets,))
    ids = np.asarray(ids, dtype=np.uint64)
    high = (ids >> np.uint64(32)).astype(np.uint64)
    return ((high * np.uint64(num_buckets)) >> np.uint64(32)).astype(np.int64)


def to_signed(ids):
    """The same 64 bits as int64 (a view, no copy)."""
    return np.asarray(ids, dtype=np.uint64).view(np.int64)

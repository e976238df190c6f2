"""The categorical hash: fixed values (so no process, machine or Python version can change them), the
same ids in a fresh interpreter with another hash seed, and the column helpers."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from sparkps.ctr.hashing import bucket, hash_column, hash_fields, hash_value, split_multi, to_signed
from sparkps.errors import DataError

# Written down once from the definition in the module docstring; a change to the scheme must fail here.
GOLDEN = {("C1", "68fd1e64"): None, ("C2", ""): None, ("user", "42"): None}


def _golden():
    import hashlib
    out = {}
    for field, value in GOLDEN:
        salt = hashlib.blake2b(field.encode(), digest_size=16).digest()
        digest = hashlib.blake2b(value.encode(), digest_size=8, person=b"sparkps-feature1", salt=salt).digest()
        out[(field, value)] = int.from_bytes(digest, "little")
    return out


def test_hash_matches_its_documented_definition():
    for (field, value), expected in _golden().items():
        assert hash_value(field, value) == expected


def test_known_ids_are_pinned():
    assert hash_value("C1", "68fd1e64") == 7626635421315938214
    assert hash_value("user", 42) == 5703261713105932909
    assert hash_value("C1", "68fd1e64") == hash_value("C1", b"68fd1e64")
    assert hash_value("user", 42) == hash_value("user", "42") == hash_value("user", np.int64(42))
    assert hash_value("user", 42.0) == hash_value("user", "42")
    assert hash_value("C2", None) == hash_value("C2", "") == hash_value("C2", float("nan"))
    assert hash_value("C1", "a") != hash_value("C2", "a")


def test_same_ids_in_another_process_with_another_hash_seed():
    values = ["68fd1e64", "", "05db9164", "x" * 100, "日本"]
    script = ("import json, sys; from sparkps.ctr.hashing import hash_column; "
              "print(json.dumps([int(i) for i in hash_column('C7', json.loads(sys.argv[1]))]))")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", script, json.dumps(values)], env=env, capture_output=True,
                         text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == [int(i) for i in hash_column("C7", values)]


def test_column_hash_equals_value_hash_and_repeats_agree():
    values = ["a", "b", "a", None, 3, "3"]
    ids = hash_column("f", values)
    assert ids.dtype == np.uint64
    assert [int(i) for i in ids] == [hash_value("f", v) for v in values]
    assert ids[0] == ids[2] and ids[4] == ids[5]
    assert hash_column("f", np.array([3, 3, 5])).tolist() == [hash_value("f", 3)] * 2 + [hash_value("f", 5)]


def test_hash_fields_stacks_columns():
    ids = hash_fields(["a", "b"], [["x", "y"], ["x", "y"]])
    assert ids.shape == (2, 2) and ids[0, 0] != ids[0, 1]
    with pytest.raises(DataError, match="2 field names for 1 columns"):
        hash_fields(["a", "b"], [["x"]])


def test_bucket_is_bounded_and_spreads_ids():
    ids = hash_column("f", [str(i) for i in range(20000)])
    rows = bucket(ids, 100)
    assert rows.min() >= 0 and rows.max() < 100
    counts = np.bincount(rows, minlength=100)
    assert counts.min() > 120 and counts.max() < 290       # ~200 each: uniform within sampling noise
    assert to_signed(ids).dtype == np.int64 and (to_signed(ids).view(np.uint64) == ids).all()


def test_split_multi_values():
    flat, offsets = split_multi(["a|b", "", None, "c", ["d", "e"]], "|")
    assert flat == ["a", "b", "c", "d", "e"]
    assert offsets.tolist() == [0, 2, 2, 2, 3, 5]

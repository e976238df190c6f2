"""Damaged checkpoints: every piece's digest is in the manifest; a checkpoint with a missing, truncated,
bit-flipped or swapped piece (dense or sparse) is passed over for the one before it with one warning naming the
piece; loading a damaged piece is a DataError naming the file; `sparkps verify-checkpoint` lists the damage; a
version 1 manifest (no digests) still loads."""
import json
import logging
import os
import re
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from sparkps.cli import main
from sparkps.comm import manifest
from sparkps.errors import DataError
from sparkps.rows.ids import row_ids
from sparkps.rows.table import SparseTable
from sparkps.runtime.resume import latest_checkpoint
from sparkps.server.tables import sparse_checkpoint
from sparkps.server.tables.dense import DenseTable
from sparkps.server.tables.dense_pieces import load_pieces, save_pieces

SHAPES = {0: (6, 4), 1: (4,)}
OPTIONS = {'name': 'user', 'dim': 3, 'optimizer': {'name': 'sgd', 'params': {'learning_rate': 0.1}}}


def dense_table(value):
    sizes = {k: int(np.prod(s)) for k, s in SHAPES.items()}
    table = DenseTable()
    table.add_group([[k, 0, n] for k, n in sizes.items()], [[k, list(s)] for k, s in SHAPES.items()],
                    np.full(sum(sizes.values()), value, np.float32))
    return table


def sparse_table(value):
    table = SparseTable.from_options(OPTIONS)
    ids = row_ids(np.arange(5), 'user')
    table.pull(ids)
    table.push(ids, np.full((5, 3), value, np.float32))
    return table


def write_checkpoint(folder, step, value):
    """A checkpoint after ``step`` steps, as the servers and worker 0 write it: dense pieces, a sparse table."""
    path = os.path.join(folder, "step-%08d" % step)
    tables = [sparse_checkpoint.save_table(path, sparse_table(value), 0, 0)]
    manifest.write_manifest(path, save_pieces(path, dense_table(value)), None, tables,
                            resume={"epoch": 0, "nbatch": step, "step": step, "steps_per_epoch": None,
                                    "steps": {"0": step}, "history": []})
    return path


@pytest.fixture
def folder(tmp_path):
    write_checkpoint(str(tmp_path), 5, 1.0)
    write_checkpoint(str(tmp_path), 10, 2.0)
    return str(tmp_path)


def truncate(path, other):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def flip(path, other):
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 3)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x10]))


def delete(path, other):
    os.remove(path)


def swap(path, other):
    shutil.copyfile(other, path)      # a valid piece of the same name from another checkpoint


PIECES = {"dense": "key-0-0-24.npz", "sparse": "sparse-user-g0-s0.npz"}


@pytest.mark.parametrize("kind", sorted(PIECES))
@pytest.mark.parametrize("damage", [truncate, flip, delete, swap], ids=lambda f: f.__name__)
def test_a_damaged_newest_checkpoint_falls_back_to_the_older_one(folder, caplog, kind, damage):
    newest, older = os.path.join(folder, "step-00000010"), os.path.join(folder, "step-00000005")
    assert latest_checkpoint(folder).path == newest
    piece = os.path.join(newest, PIECES[kind])
    damage(piece, os.path.join(older, PIECES[kind]))
    with caplog.at_level(logging.WARNING, logger="sparkps.runtime.resume"):
        point = latest_checkpoint(folder)
    assert point is not None and point.path == older
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and piece in warnings[0], warnings
    damaged = manifest.verify_checkpoint(newest)
    assert [name for name, _ in damaged] == [PIECES[kind]]
    result = CliRunner().invoke(main, ["verify-checkpoint", newest])
    assert result.exit_code == 1 and piece in result.output, result.output
    assert CliRunner().invoke(main, ["verify-checkpoint", older]).exit_code == 0


@pytest.mark.parametrize("damage", [truncate, flip, delete, swap], ids=lambda f: f.__name__)
def test_loading_a_damaged_piece_is_a_data_error_naming_the_file(folder, damage):
    newest, older = os.path.join(folder, "step-00000010"), os.path.join(folder, "step-00000005")
    for name in PIECES.values():
        damage(os.path.join(newest, name), os.path.join(older, name))
    saved = manifest.read_manifest(newest)
    with pytest.raises(DataError, match=r"cannot read checkpoint file .*key-0-0-24\.npz"):
        load_pieces(newest, dense_table(0.0), saved)
    with pytest.raises(DataError, match=r"table 'user': cannot read checkpoint file .*sparse-user-g0-s0\.npz"):
        sparse_checkpoint.load_table(newest, saved, "user", 0, 1)


def test_every_piece_damaged_leaves_no_checkpoint(folder):
    for name in ("step-00000005", "step-00000010"):
        truncate(os.path.join(folder, name, PIECES["dense"]), None)
    assert latest_checkpoint(folder) is None


def test_a_version_1_manifest_without_digests_still_loads_and_is_checked_by_reading(folder):
    path = os.path.join(folder, "step-00000010")
    with open(os.path.join(path, manifest.MANIFEST)) as f:
        saved = json.load(f)
    saved["version"] = 1
    for entry in saved["keys"].values():
        for piece in entry["pieces"]:
            del piece["digest"]
    for table in saved["tables"].values():
        for gen in table["generations"]:
            del gen["digests"]
    with open(os.path.join(path, manifest.MANIFEST), "w") as f:
        json.dump(saved, f)
    table = dense_table(0.0)
    load_pieces(path, table)
    np.testing.assert_array_equal(table.weight(1), np.full(4, 2.0, np.float32))
    assert latest_checkpoint(folder).path == path
    truncate(os.path.join(path, PIECES["sparse"]), None)
    assert latest_checkpoint(folder).path.endswith("step-00000005")


def test_a_version_2_manifest_missing_a_digest_is_refused_naming_the_piece(folder):
    path = os.path.join(folder, "step-00000010")
    saved = manifest.read_manifest(path)
    del saved["keys"]["1"]["pieces"][0]["digest"]
    manifest.save_manifest(path, saved)
    with pytest.raises(DataError, match=r"piece key-1-0-4\.npz has no digest"):
        manifest.read_manifest(path)


@pytest.mark.parametrize("name", ["../step-00000005/key-1-0-4.npz", "/tmp/key-1-0-4.npz", "..", ".key-1-0-4.npz"])
def test_a_piece_named_outside_the_checkpoints_folder_is_refused(folder, name):
    """A piece of the manifest is a file of the checkpoint's folder: a path is refused, not read as the file of
    the same base name (it was: the folder part was silently dropped)."""
    path = os.path.join(folder, "step-00000010")
    saved = manifest.read_manifest(path)
    saved["keys"]["1"]["pieces"][0]["file"] = name
    manifest.save_manifest(path, saved)
    with pytest.raises(DataError, match=r"piece '%s' is not a file name of the checkpoint's folder" % re.escape(name)):
        manifest.read_manifest(path)

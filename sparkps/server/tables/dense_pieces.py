"""Save and load the pieces a dense table holds, one ``.npz`` file per piece, named in the checkpoint manifest.

The manifest itself (format, merge, read) is :mod:`sparkps.comm.manifest`, shared with the worker. Files are
read with ``allow_pickle=False``: nothing is unpickled.
"""
import os

import numpy as np

from sparkps.comm.manifest import file_digest, piece_file, read_manifest, read_piece
from sparkps.errors import ConfigError, DataError


def save_pieces(directory, table):
    """Write every piece ``table`` holds into ``directory``; returns the piece descriptions (msgpack-able).

    Blocks on file I/O only. Each description is ``[key, lo, hi, file, shape, count, digest]`` (the digest of
    the file as written, :func:`sparkps.comm.manifest.file_digest`).
    """
    os.makedirs(directory, exist_ok=True)
    opt = table.optimizer
    counts = opt.update_counts()["index_update_count"] if opt is not None else {}
    described = []
    for key in table.keys():
        slot = table.slots[key]
        arrays = {"weight": table.weight(key)}
        state = table.states.get(key)
        if opt is not None and state is not None:
            for i, array in enumerate(opt.state_to_arrays(state)):
                arrays["state%d" % i] = array
        name = piece_file(key, slot.lo, slot.hi)
        tmp = os.path.join(directory, name + ".tmp.npz")
        np.savez(tmp, **arrays)
        digest = file_digest(tmp)
        os.replace(tmp, os.path.join(directory, name))
        described.append([key, slot.lo, slot.hi, name, list(slot.shape), int(counts.get(str(key), 0)), digest])
    return described


def _read_range(directory, entry, lo, hi, cache):
    """Arrays ``weight, state0, ...`` of elements ``[lo, hi)`` of one key, assembled from saved pieces."""
    parts = []
    for piece in entry["pieces"]:
        a, b = max(lo, piece["lo"]), min(hi, piece["hi"])
        if a >= b:
            continue
        name = os.path.basename(piece["file"])
        if name not in cache:
            cache[name] = read_piece(directory, name, piece.get("digest"))
        arrays = cache[name]
        if "weight" not in arrays:
            raise DataError("checkpoint piece %s holds no \"weight\" array" % os.path.join(directory, name))
        names = ["weight"] + sorted((k for k in arrays if k.startswith("state")), key=lambda s: int(s[5:]))
        parts.append([arrays[n][a - piece["lo"]:b - piece["lo"]] for n in names])
    if not parts or sum(len(p[0]) for p in parts) != hi - lo:
        raise DataError("checkpoint does not cover elements [%d, %d) of a key" % (lo, hi))
    if len({len(p) for p in parts}) != 1:
        raise DataError("checkpoint pieces of elements [%d, %d) of a key disagree on their optimizer state"
                        % (lo, hi))
    return [np.concatenate(column) for column in zip(*parts)]


def load_pieces(directory, table, manifest=None):
    """Replace the weights, optimizer and optimizer state of ``table`` with the checkpoint's.

    Every key ``table`` holds must be in the checkpoint with the same shape (else ConfigError). Blocks on
    file I/O only.
    """
    manifest = manifest or read_manifest(directory)
    entries = manifest["keys"]
    for key in table.keys():
        entry = entries.get(str(key))
        if entry is None:
            raise ConfigError("checkpoint %s has no key %d" % (directory, key))
        if tuple(entry["shape"]) != table.slots[key].shape:
            raise ConfigError("checkpoint key %d has shape %s, the kvstore holds %s"
                              % (key, tuple(entry["shape"]), table.slots[key].shape))
    if manifest.get("optimizer") is not None:
        table.set_optimizer(manifest["optimizer"])
    cache, counts = {}, {}
    for key in table.keys():
        slot = table.slots[key]
        weight, *state = _read_range(directory, entries[str(key)], slot.lo, slot.hi, cache)
        table.assign({key: weight})
        if table.optimizer is not None and state:
            table.states[key] = table.optimizer.state_from_arrays(key, table.weight(key), state)
        if int(entries[str(key)]["count"]) > 0:
            counts[str(key)] = int(entries[str(key)]["count"])
    if table.optimizer is not None:
        table.optimizer.set_update_counts({"num_update": int(manifest.get("num_update", 0)),
                                           "index_update_count": counts})

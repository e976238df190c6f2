"""Checkpoints of the servers' weights and optimizer state, per key, independent of the server count.

Layout of a checkpoint directory::

    manifest.json              {"format": "sparkps-kvstore", "version": 1, "optimizer": config | null,
                                "num_update": n, "keys": {"<key>": {"shape": [...], "count": c,
                                "pieces": [{"lo": lo, "hi": hi, "file": "key-<key>-<lo>-<hi>.npz"}]}}}
    key-<key>-<lo>-<hi>.npz    arrays "weight" and "state0", "state1", ... (elements [lo, hi) of the key)

Each server writes the pieces it holds (:func:`save_pieces`) and answers with their description; the
worker that asked merges the answers into ``manifest.json`` (:func:`write_manifest`). On load, every
server reads the manifest and copies the parts of the saved pieces that overlap its own pieces
(:func:`load_pieces`), so a checkpoint written by 2 servers loads onto 3. Files are read with
``allow_pickle=False`` and JSON only: nothing is unpickled.
"""
import json
import os

import numpy as np

from sparkps.errors import ConfigError, DataError

FORMAT, VERSION, MANIFEST = "sparkps-kvstore", 1, "manifest.json"


def _piece_file(key, lo, hi):
    return "key-%d-%d-%d.npz" % (key, lo, hi)


def save_pieces(directory, store):
    """Write every piece ``store`` holds into ``directory``; returns the piece descriptions (msgpack-able).

    Blocks on file I/O only. Each description is ``[key, lo, hi, file, shape, count]``.
    """
    os.makedirs(directory, exist_ok=True)
    opt = store.optimizer
    counts = opt.update_counts()["index_update_count"] if opt is not None else {}
    described = []
    for key in store.keys():
        slot = store.slots[key]
        arrays = {"weight": slot.weight}
        state = store.states.get(key)
        if opt is not None and state is not None:
            for i, array in enumerate(opt.state_to_arrays(state)):
                arrays["state%d" % i] = array
        name = _piece_file(key, slot.lo, slot.hi)
        tmp = os.path.join(directory, name + ".tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, os.path.join(directory, name))
        described.append([key, slot.lo, slot.hi, name, list(slot.shape), int(counts.get(str(key), 0))])
    return described


def write_manifest(directory, described, optimizer_config):
    """Merge the piece descriptions of every server into ``directory/manifest.json``."""
    keys = {}
    for key, lo, hi, name, shape, count in sorted(described, key=lambda d: (d[0], d[1])):
        entry = keys.setdefault(str(key), {"shape": list(shape), "count": int(count), "pieces": []})
        entry["pieces"].append({"lo": int(lo), "hi": int(hi), "file": name})
        entry["count"] = max(entry["count"], int(count))
    for key, entry in keys.items():
        covered = 0
        for piece in entry["pieces"]:
            if piece["lo"] != covered:
                raise DataError("checkpoint of key %s misses elements [%d, %d)" % (key, covered, piece["lo"]))
            covered = piece["hi"]
        if covered != int(np.prod(entry["shape"], dtype=np.int64)):
            raise DataError("checkpoint of key %s covers %d of its elements" % (key, covered))
    manifest = {"format": FORMAT, "version": VERSION, "optimizer": optimizer_config,
                "num_update": max([e["count"] for e in keys.values()], default=0), "keys": keys}
    tmp = os.path.join(directory, MANIFEST + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(directory, MANIFEST))
    return manifest


def read_manifest(directory):
    """The manifest of the checkpoint in ``directory``; raises DataError when it is missing or foreign."""
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as exc:
        raise DataError("cannot read kvstore checkpoint %s: %s" % (path, exc)) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise DataError("%s is not a sparkps kvstore checkpoint (format %s version %s)"
                        % (path, FORMAT, VERSION))
    return manifest


def key_shapes(manifest):
    """``{key: shape}`` of every key in a checkpoint manifest."""
    return {int(k): tuple(e["shape"]) for k, e in manifest["keys"].items()}


def _read_range(directory, entry, lo, hi, cache):
    """Arrays ``weight, state0, ...`` of elements ``[lo, hi)`` of one key, assembled from saved pieces."""
    parts = []
    for piece in entry["pieces"]:
        a, b = max(lo, piece["lo"]), min(hi, piece["hi"])
        if a >= b:
            continue
        name = os.path.basename(piece["file"])
        if name not in cache:
            with np.load(os.path.join(directory, name), allow_pickle=False) as data:
                cache[name] = {k: data[k] for k in data.files}
        arrays = cache[name]
        names = ["weight"] + sorted((k for k in arrays if k.startswith("state")), key=lambda s: int(s[5:]))
        parts.append([arrays[n][a - piece["lo"]:b - piece["lo"]] for n in names])
    if not parts or sum(len(p[0]) for p in parts) != hi - lo:
        raise DataError("checkpoint does not cover elements [%d, %d) of a key" % (lo, hi))
    if len({len(p) for p in parts}) != 1:
        raise DataError("checkpoint pieces of elements [%d, %d) of a key disagree on their optimizer state"
                        % (lo, hi))
    return [np.concatenate(column) for column in zip(*parts)]


def load_pieces(directory, store, manifest=None):
    """Replace the weights, optimizer and optimizer state of ``store`` with the checkpoint's.

    Every key ``store`` holds must be in the checkpoint with the same shape (else ConfigError).
    """
    manifest = manifest or read_manifest(directory)
    entries = manifest["keys"]
    for key in store.keys():
        entry = entries.get(str(key))
        if entry is None:
            raise ConfigError("checkpoint %s has no key %d" % (directory, key))
        if tuple(entry["shape"]) != store.slots[key].shape:
            raise ConfigError("checkpoint key %d has shape %s, the kvstore holds %s"
                              % (key, tuple(entry["shape"]), store.slots[key].shape))
    if manifest.get("optimizer") is not None:
        store.set_optimizer(manifest["optimizer"])
    cache, counts = {}, {}
    for key in store.keys():
        slot = store.slots[key]
        weight, *state = _read_range(directory, entries[str(key)], slot.lo, slot.hi, cache)
        store.assign({key: weight})
        if store.optimizer is not None and state:
            store.states[key] = store.optimizer.state_from_arrays(key, store.slots[key].weight, state)
        if int(entries[str(key)]["count"]) > 0:
            counts[str(key)] = int(entries[str(key)]["count"])
    if store.optimizer is not None:
        store.optimizer.set_update_counts({"num_update": int(manifest.get("num_update", 0)),
                                           "index_update_count": counts})

"""The checkpoint manifest: which piece files hold which elements of every key, independent of the server count.

Layout of a checkpoint directory::

    manifest.json              {"format": "sparkps-kvstore", "version": 1, "optimizer": config | null,
                                "num_update": n, "keys": {"<key>": {"shape": [...], "count": c,
                                "pieces": [{"lo": lo, "hi": hi, "file": "key-<key>-<lo>-<hi>.npz"}]}}}
    key-<key>-<lo>-<hi>.npz    arrays "weight" and "state0", "state1", ... (elements [lo, hi) of the key)

Each server writes the pieces it holds and answers with their description, a list
``[key, lo, hi, file, shape, count]`` per piece (:mod:`sparkps.server.tables.dense_pieces`); the worker that
asked merges the answers into ``manifest.json`` (:func:`write_manifest`). On load, every server reads the
manifest (:func:`read_manifest`) and copies the parts of the saved pieces that overlap its own pieces, so a
checkpoint written by 2 servers loads onto 3. JSON only: nothing is unpickled.

``"format"`` names the kind of file and ``"version"`` its layout (see docs/saved_models.md). Version 1 is the
layout above, what sparkps 0.1.0 wrote and what is written now; a manifest without ``"version"`` is version 1.
:func:`read_manifest` reads every version up to :data:`VERSION` (one loader each, :data:`LOADERS`) and refuses a
newer one with a DataError naming the file and both versions.

>>> # manifest = write_manifest(directory, described_by_every_server, optimizer.to_config())
>>> # key_shapes(read_manifest(directory))  -> {0: (784, 128), 1: (128,), ...}
"""
import json
import os

import numpy as np

from sparkps.errors import DataError

FORMAT, VERSION, MANIFEST = "sparkps-kvstore", 1, "manifest.json"


def piece_file(key, lo, hi):
    """The file name of the saved elements ``[lo, hi)`` of ``key``."""
    return "key-%d-%d-%d.npz" % (key, lo, hi)


def write_manifest(directory, described, optimizer_config, tables=(), resume=None):
    """Merge the piece descriptions of every server into ``directory/manifest.json``; returns the manifest.

    ``tables``: the sparse-table save descriptions of every server (:func:`add_table_generation`); the
    generations of earlier saves in ``directory`` are kept for an incremental save to build on. ``resume``: where
    training stands (epoch, each worker's steps; :mod:`sparkps.runtime.resume`), kept under ``"resume"``.
    Raises DataError naming the key when the pieces leave a gap or do not cover the key. Blocks on file I/O.
    """
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
    if resume is not None:
        manifest["resume"] = resume
    if tables:
        earlier = read_manifest(directory) if os.path.exists(os.path.join(directory, MANIFEST)) else {}
        manifest["tables"] = earlier.get("tables", {})
        add_table_generation(manifest, tables)
    return save_manifest(directory, manifest)


def save_manifest(directory, manifest):
    """Write ``manifest`` as ``directory/manifest.json``, replacing the old one atomically; returns it."""
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, MANIFEST + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(directory, MANIFEST))
    return manifest


def read_manifest(directory):
    """The manifest of the checkpoint in ``directory``, in this version's layout whichever version wrote it;
    raises DataError when it is missing, foreign, or of a version newer than :data:`VERSION`."""
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as exc:
        raise DataError("cannot read kvstore checkpoint %s: %s" % (path, exc)) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DataError("%s is not a sparkps kvstore checkpoint (\"format\": %r expected)" % (path, FORMAT))
    version = manifest.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise DataError("%s: \"version\" must be a positive integer, got %r" % (path, version))
    if version > VERSION:
        raise DataError("%s is a kvstore checkpoint of format version %d, written by a newer sparkps; this version "
                        "reads versions 1 to %d (upgrade sparkps to load it)" % (path, version, VERSION))
    return LOADERS[version](path, manifest)


def _manifest_v1(path, manifest):
    """Version 1 (sparkps 0.1.0 and now): the layout of the module docstring; ``keys`` must be there."""
    if not isinstance(manifest.get("keys"), dict):
        raise DataError("%s: a kvstore checkpoint manifest needs a \"keys\" object" % path)
    manifest["version"] = VERSION
    return manifest


LOADERS = {1: _manifest_v1}


def key_shapes(manifest):
    """``{key: shape}`` of every key in a checkpoint manifest."""
    return {int(k): tuple(e["shape"]) for k, e in manifest["keys"].items()}


# ---- sparse tables ---------------------------------------------------------------------------------------
# manifest["tables"][name] = {"options": table options, "generations": [{"generation": g, "delta": bool,
#                              "files": [...], "rows": n}]}: a base (delta false) and the deltas saved after
# it. Every server writes one file per table and save; rows are re-routed by id hash on load
# (:mod:`sparkps.server.tables.sparse_checkpoint`).

def add_table_generation(manifest, described):
    """Merge every server's sparse-table save descriptions (dicts with ``table``, ``generation``, ``delta``,
    ``file``, ``rows``, ``options``) into ``manifest["tables"]`` (in place; returned). A base generation
    replaces the table's earlier ones; a delta is appended. DataError naming the table when servers disagree
    on the generation, or a delta has no base."""
    tables = manifest.setdefault("tables", {})
    by_table = {}
    for d in described:
        by_table.setdefault(d["table"], []).append(d)
    for name, parts in by_table.items():
        kinds = {(d["generation"], d["delta"]) for d in parts}
        if len(kinds) != 1:
            raise DataError("table %r: servers saved different generations %s" % (name, sorted(kinds)))
        generation, delta = kinds.pop()
        entry = tables.setdefault(name, {"generations": []})
        entry["options"] = parts[0]["options"]
        if delta and not entry["generations"]:
            raise DataError("table %r: a delta save needs an earlier base generation in the manifest" % name)
        gen = {"generation": generation, "delta": delta, "files": sorted(d["file"] for d in parts),
               "rows": sum(d["rows"] for d in parts)}
        entry["generations"] = entry["generations"] + [gen] if delta else [gen]
    return manifest


def next_table_generation(manifest, name):
    """``(generation, may_be_delta)`` for the next save of table ``name`` after ``manifest``."""
    gens = (manifest or {}).get("tables", {}).get(name, {}).get("generations", [])
    return (gens[-1]["generation"] + 1, True) if gens else (0, False)

"""The checkpoint manifest: which piece files hold which elements of every key, independent of the server count.

Layout of a checkpoint directory::

    manifest.json              {"format": "sparkps-kvstore", "version": 2, "optimizer": config | null,
                                "num_update": n, "keys": {"<key>": {"shape": [...], "count": c,
                                "pieces": [{"lo": lo, "hi": hi, "file": "key-<key>-<lo>-<hi>.npz",
                                            "digest": {"blake2b": hex, "bytes": n}}]}}}
    key-<key>-<lo>-<hi>.npz    arrays "weight" and "state0", "state1", ... (elements [lo, hi) of the key)

Each server writes the pieces it holds and answers with their description, a list
``[key, lo, hi, file, shape, count]`` per piece (:mod:`sparkps.server.tables.dense_pieces`); the worker that
asked merges the answers into ``manifest.json`` (:func:`write_manifest`). On load, every server reads the
manifest (:func:`read_manifest`) and copies the parts of the saved pieces that overlap its own pieces, so a
checkpoint written by 2 servers loads onto 3. JSON only: nothing is unpickled.

``"format"`` names the kind of file and ``"version"`` its layout (see docs/saved_models.md). Version 2 is the
layout above, what is written now: every piece (and every sparse-table file, under its generation's
``"digests"``) carries the BLAKE2b digest and size of its file, computed by the server as it writes it.
Version 1 (sparkps 0.1.0, a manifest without ``"version"`` too) has no digests and still loads; its pieces are
checked by reading them whole (the zip CRCs). :func:`verify_checkpoint` lists the damaged pieces of a checkpoint
(missing, truncated, altered or replaced by another file); :func:`read_piece` reads one piece, checking its
digest, with a DataError naming the file.
:func:`read_manifest` reads every version up to :data:`VERSION` (one loader each, :data:`LOADERS`) and refuses a
newer one with a DataError naming the file and both versions.

>>> # manifest = write_manifest(directory, described_by_every_server, optimizer.to_config())
>>> # key_shapes(read_manifest(directory))  -> {0: (784, 128), 1: (128,), ...}
"""
import hashlib
import io
import json
import os
import zipfile

import numpy as np

from sparkps.errors import DataError

FORMAT, VERSION, MANIFEST = "sparkps-kvstore", 2, "manifest.json"


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
    for key, lo, hi, name, shape, count, *digest in sorted(described, key=lambda d: (d[0], d[1])):
        entry = keys.setdefault(str(key), {"shape": list(shape), "count": int(count), "pieces": []})
        entry["pieces"].append({"lo": int(lo), "hi": int(hi), "file": name})
        if digest and digest[0]:
            entry["pieces"][-1]["digest"] = dict(digest[0])
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
    """Version 1 (sparkps 0.1.0): the layout of the module docstring without digests; ``keys`` must be there.
    Its pieces carry no digest and are checked by reading them (:func:`verify_checkpoint`). Every piece is a file
    of the checkpoint's own folder: a name with a folder part, ``..`` or a leading ``.`` is a DataError naming it."""
    if not isinstance(manifest.get("keys"), dict):
        raise DataError("%s: a kvstore checkpoint manifest needs a \"keys\" object" % path)
    for name, _ in pieces(manifest):
        if not isinstance(name, str) or not name or name.startswith(".") or "/" in name or "\\" in name \
                or "\0" in name:
            raise DataError("%s: piece %r is not a file name of the checkpoint's folder (no folder part, no '..')"
                            % (path, name))
    manifest["version"] = VERSION
    return manifest


def _manifest_v2(path, manifest):
    """Version 2 (now): version 1 with a digest for every piece and sparse-table file; one missing is an error
    naming the piece (a manifest edited by hand or by someone else)."""
    _manifest_v1(path, manifest)
    for name, digest in pieces(manifest):
        if not (isinstance(digest, dict) and isinstance(digest.get("blake2b"), str)
                and isinstance(digest.get("bytes"), int)):
            raise DataError("%s: piece %s has no digest (a version 2 manifest records one for every piece)"
                            % (path, name))
    return manifest


LOADERS = {1: _manifest_v1, 2: _manifest_v2}


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
        digests = {d["file"]: dict(d["digest"]) for d in parts if d.get("digest")}
        if digests:
            gen["digests"] = digests
        entry["generations"] = entry["generations"] + [gen] if delta else [gen]
    return manifest


def next_table_generation(manifest, name):
    """``(generation, may_be_delta)`` for the next save of table ``name`` after ``manifest``."""
    gens = (manifest or {}).get("tables", {}).get(name, {}).get("generations", [])
    return (gens[-1]["generation"] + 1, True) if gens else (0, False)


# ---- digests of the pieces -------------------------------------------------------------------------------

def file_digest(path):
    """``{"blake2b": hex, "bytes": n}`` of the file ``path`` (BLAKE2b, 128-bit digest). Blocks on file I/O."""
    h, size = hashlib.blake2b(digest_size=16), 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return {"blake2b": h.hexdigest(), "bytes": size}


def pieces(manifest):
    """``[(file name, digest or None)]`` of every piece file a manifest names: dense key pieces, then the files
    of every generation of every sparse table."""
    found = []
    for entry in manifest.get("keys", {}).values():
        found.extend((p["file"], p.get("digest")) for p in entry.get("pieces", ()))
    for table in manifest.get("tables", {}).values():
        for gen in table.get("generations", ()):
            digests = gen.get("digests") or {}
            found.extend((name, digests.get(name)) for name in gen.get("files", ()))
    return found


def _damage(data, digest):
    """Why the bytes ``data`` of a piece are not those its ``digest`` records (None when they are)."""
    if len(data) != digest["bytes"]:
        return "truncated or extended: %d bytes, %d written" % (len(data), digest["bytes"])
    if hashlib.blake2b(data, digest_size=16).hexdigest() != digest["blake2b"]:
        return "altered or replaced: its BLAKE2b digest is not the one written"
    return None


def read_piece(directory, name, digest=None):
    """The arrays of piece file ``name`` in ``directory`` (``{array name: ndarray}``, nothing unpickled), its
    bytes checked against ``digest`` when the manifest has one. DataError naming the file when it is missing,
    damaged or not an ``.npz``. Blocks on file I/O."""
    path = os.path.join(directory, os.path.basename(name))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise DataError("cannot read checkpoint file %s: %s" % (path, exc.strerror or exc)) from None
    problem = _damage(data, digest) if digest else None
    if problem:
        raise DataError("cannot read checkpoint file %s: damaged (%s)" % (path, problem))
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            return {k: arrays[k] for k in arrays.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise DataError("cannot read checkpoint file %s: damaged (not a readable .npz: %s)" % (path, exc)) from None


def verify_checkpoint(directory, manifest=None):
    """``[(file name, why)]`` for every damaged piece of the checkpoint in ``directory`` (empty: complete):
    missing, of another size or digest than written, or (a version 1 piece, without digest) unreadable.
    DataError when the manifest itself is missing or unreadable. Blocks while it reads every piece."""
    manifest = manifest if manifest is not None else read_manifest(directory)
    damaged = []
    for name, digest in pieces(manifest):
        path = os.path.join(directory, os.path.basename(name))
        if not os.path.isfile(path):
            damaged.append((name, "missing"))
            continue
        try:
            if digest:
                found = file_digest(path)
                if found["bytes"] != digest["bytes"]:
                    damaged.append((name, "truncated or extended: %d bytes, %d written"
                                    % (found["bytes"], digest["bytes"])))
                elif found["blake2b"] != digest["blake2b"]:
                    damaged.append((name, "altered or replaced: its BLAKE2b digest is not the one written"))
            else:
                read_piece(directory, name)
        except (OSError, DataError) as exc:
            damaged.append((name, str(exc)))
    return damaged

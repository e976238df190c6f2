"""A model's sparse tables as shard files: one Parquet file per server per table, and a manifest (pyarrow only).

    FOLDER/manifest.json                 {"version": 1, "tables": {TABLE: {"dim", "dtype", "rows", "options",
                                          "shards": [{"path", "server", "rows", "sha256"}, ...]}}}
    FOLDER/TABLE/server-RRRRR.parquet    id int64 (the uint64 id's bits), vector fixed_size_list<float32>[dim]
                                         (list<float32> read too), count int64, last_step int64

Every file is written atomically (a temporary name in the same folder, fsync, rename). ``check_shards`` finds a
missing or damaged shard (size, sha256, Parquet footer, schema) as one DataError naming the shard and the table;
``iter_shard_rows`` reads a table a batch at a time, never whole. The readers take ``files``: an object whose
``join(folder, name)``, ``exists(path)`` and ``open_input(path)`` (a seekable binary file) reach a folder on another
store (``sparkps.spark.model.storage`` speaks Spark URIs); None is Python's own file I/O. Blocks on file I/O only.

A table folder is exactly its manifest (docs/tables.md): :func:`read_manifest` refuses a manifest whose table names
are not identifiers (:func:`check_table_name`), whose shard paths leave the folder (absolute, ``..``, a symbolic
link pointing out) or whose shards have no sha256; every reader (load, scoring, export, ``sparkps predict`` and
``verify-checkpoint``) reads the files :func:`shard_files` lists and nothing else, so a file planted beside the
shards or a killed write's ``.tmp-*`` leftover is never read. :func:`folder_below` keeps a folder named by a request
below the root a server was started with. The manifest is not signed: a shard rewritten together with its sha256 in
the manifest is read as written.
"""
import hashlib
import json
import os
import re

import numpy as np

from sparkps.errors import DataError

MANIFEST = "manifest.json"
VERSION = 1
COLUMNS = ("id", "vector", "count", "last_step")
ROW_GROUP_ROWS = 65536       # rows per Parquet row group of a shard: 4 MiB of vectors at dim 16
TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,127}\Z")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


def check_table_name(name, where="table name"):
    """``name`` when it is an identifier (a letter or ``_``, then letters, digits, ``_``, ``.`` or ``-``; at most 128
    characters): what may name a table's folder. Anything else (``..``, a ``/``, an empty name) is one DataError
    naming it and ``where`` it came from."""
    if not isinstance(name, str) or not TABLE_NAME.match(name):
        raise DataError("%s %r is not a table name: a table name is an identifier (a letter or '_', then letters, "
                        "digits, '_', '.' or '-', at most 128 characters)" % (where, name))
    return name


class _LocalFiles:
    """Python's own file I/O, in the terms of the ``files`` the readers take."""

    on_local_disk = True       # symbolic links on the way are resolved (listed_path)
    join, exists = staticmethod(os.path.join), staticmethod(os.path.isfile)

    @staticmethod
    def open_input(path):
        return open(path, "rb")


def _inside(root, path):
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def listed_path(folder, relative, table="?", files=None):
    """The path in ``folder`` of the file a manifest lists as ``relative``: a relative path without ``..`` that stays
    inside ``folder`` once symbolic links are resolved; anything else is one DataError naming the table and the
    path."""
    if not isinstance(relative, str) or not relative or "\0" in relative:
        raise DataError("table %r: the manifest of %s lists a shard path %r, not a file name"
                        % (table, folder, relative))
    parts = relative.replace("\\", "/").split("/")
    if os.path.isabs(relative) or relative.startswith(("/", "\\")) or ".." in parts or "" in parts:
        raise DataError("table %r: the manifest of %s lists the shard %r, which is not a path inside the folder "
                        "(absolute, '..' or empty parts)" % (table, folder, relative))
    files = files or _LocalFiles
    path = files.join(folder, *parts)
    if files.on_local_disk and not _inside(files.join(folder), path):
        raise DataError("table %r: the manifest of %s lists the shard %r, which leads out of the folder through a "
                        "symbolic link" % (table, folder, relative))
    return path


def check_listing(folder, manifest, files=None):
    """Refuse a tables manifest that reaches beyond ``folder`` (one DataError naming the table and what is wrong): a
    table name that is not an identifier, a table without a list of shards, a shard path outside the folder, a
    shard without its sha256 (missing or empty)."""
    for table, entry in manifest["tables"].items():
        check_table_name(table, "the manifest of %s lists the table" % folder)
        if not isinstance(entry, dict) or not isinstance(entry.get("shards"), list):
            raise DataError("table %r: the manifest of %s has no list of shards for it" % (table, folder))
        for shard in entry["shards"]:
            if not isinstance(shard, dict):
                raise DataError("table %r: the manifest of %s lists a shard that is not a map: %r"
                                % (table, folder, shard))
            listed_path(folder, shard.get("path"), table, files)
            digest = shard.get("sha256")
            if not isinstance(digest, str) or not _SHA256.match(digest):
                raise DataError("table %r: the manifest of %s gives the shard %r no sha256 (%r): every shard must "
                                "carry its checksum" % (table, folder, shard.get("path"), digest))
    return manifest


def shard_files(folder, manifest, table, files=None):
    """The paths of the shard files of ``table`` that ``manifest`` lists (each checked by :func:`listed_path`): the
    only files of the table any reader opens."""
    entry = manifest["tables"].get(table)
    if entry is None:
        raise DataError("the manifest of %s lists no table %r (tables: %s)"
                        % (folder, table, ", ".join(sorted(manifest["tables"])) or "none"))
    return [listed_path(folder, shard["path"], table, files) for shard in entry["shards"]]


def tables_folder_of(model_folder, relative, files=None):
    """The tables folder of the saved model in ``model_folder`` whose metadata names its tables' manifest as
    ``relative`` (``tables/manifest.json``): a path inside the model's folder, else one DataError naming
    metadata.json and the path."""
    if not isinstance(relative, str) or os.path.basename(relative) != MANIFEST:
        raise DataError("%s: \"tables\" must name the tables' manifest (tables/%s), got %r"
                        % (os.path.join(model_folder, "metadata.json"), MANIFEST, relative))
    try:
        return os.path.dirname(listed_path(model_folder, relative, "(all)", files))
    except DataError:
        raise DataError("%s: \"tables\" names %r, which is not a path inside the model's folder"
                        % (os.path.join(model_folder, "metadata.json"), relative)) from None


def copy_listed(folder, target):
    """Copy the tables of ``folder`` into the new folder ``target``: its manifest and the shard files it lists, and
    nothing else (files planted beside them, killed writes' leftovers stay behind). Blocks on the copies."""
    import shutil
    manifest = read_manifest(folder)
    os.makedirs(target)
    for table in manifest["tables"]:
        for source, shard in zip(shard_files(folder, manifest, table), manifest["tables"][table]["shards"]):
            destination = os.path.join(target, *shard["path"].replace("\\", "/").split("/"))
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            shutil.copyfile(source, destination)
    shutil.copyfile(os.path.join(folder, MANIFEST), os.path.join(target, MANIFEST))


def match_mode(folder, like):
    """Give ``folder`` and the folders below it the permission bits of the folder ``like`` (a fit's staging folder
    is made private to its user; saved in a model's folder it is as readable as the rest of the model)."""
    mode = os.stat(like).st_mode & 0o7777
    os.chmod(folder, mode)
    for parent, names, _ in os.walk(folder):
        for name in names:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                os.chmod(path, mode)


def folder_below(root, path, what="folder"):
    """``path`` (absolute, or relative to ``root``) as an absolute path below ``root``, when it has no ``..`` part
    and no symbolic link on the way from ``root`` down to it; else one DataError naming ``what``, the path and the
    root. ``root`` None: nothing may be written (DataError saying so). Blocks on a few ``lstat`` calls."""
    if root is None:
        raise DataError("%s %r refused: this server was started without a tables root (SPARKPS_TABLES_ROOT), so it "
                        "writes no table" % (what, path))
    if not isinstance(path, str) or not path or "\0" in path:
        raise DataError("%s %r refused: not a folder name" % (what, path))
    root = os.path.abspath(root)
    if ".." in path.replace("\\", "/").split("/"):
        raise DataError("%s %r refused: a '..' part is not allowed (it must stay below %s)" % (what, path, root))
    full = os.path.abspath(os.path.join(root, path))
    if not (full == root or full.startswith(root.rstrip(os.sep) + os.sep)):
        raise DataError("%s %r refused: it is not below the tables root %s this server was started with"
                        % (what, path, root))
    step = root
    for part in os.path.relpath(full, root).split(os.sep):
        if part == ".":
            continue
        step = os.path.join(step, part)
        if os.path.islink(step):
            raise DataError("%s %r refused: %s is a symbolic link (none is followed below the tables root %s)"
                            % (what, path, step, root))
    return full


def shard_path(table, server_rank):
    """The path of a table's shard relative to the tables folder."""
    return "%s/server-%05d.parquet" % (table, int(server_rank))


def write_shard(folder, table, server_rank, ids, vectors, counts, last_steps, group_rows=ROW_GROUP_ROWS):
    """Write the rows of one server's share of ``table`` (uint64 ``ids``, ``vectors`` [n, dim] written as float32,
    ``counts``: integers, or floats rounded to the nearest, and int64 ``last_steps``) into ``folder``; returns its
    manifest entry {path, server, rows, sha256}. The rows go out ``group_rows`` at a time (one Parquet row group each,
    no dictionary pages) from the arrays given: no copy of the whole table is made, and pyarrow's pool gives back
    what the groups used. Blocks on the write."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    ids, vectors = np.asarray(ids), np.asarray(vectors)
    if vectors.ndim != 2 or vectors.shape[0] != ids.size:
        raise ValueError("write_shard: table %r: vectors must be [%d rows, dim], got shape %s"
                         % (table, ids.size, vectors.shape))
    dim, rows = vectors.shape[1], ids.size
    relative = shard_path(check_table_name(table), server_rank)
    path = os.path.join(folder, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not _inside(folder, path):
        raise DataError("table %r: %s leads out of %s through a symbolic link; no shard is written there"
                        % (table, os.path.dirname(path), folder))
    schema = pa.schema([("id", pa.int64()), ("vector", pa.list_(pa.float32(), dim)), ("count", pa.int64()),
                        ("last_step", pa.int64())])
    temporary = path + ".tmp-%d" % os.getpid()
    if os.path.lexists(temporary):         # a killed write's leftover, or a link planted in its place
        os.remove(temporary)
    try:
        with pq.ParquetWriter(temporary, schema, use_dictionary=False) as writer:
            for start in range(0, max(rows, 1), int(group_rows)):
                part = slice(start, start + int(group_rows))
                block = np.ascontiguousarray(vectors[part], np.float32)
                writer.write_table(pa.table({
                    "id": pa.array(_int64_bits(ids[part]), pa.int64()),
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(block.reshape(-1), pa.float32()), dim),
                    "count": pa.array(_whole(counts[part]), pa.int64()),
                    "last_step": pa.array(np.asarray(last_steps[part], np.int64), pa.int64())}, schema=schema))
    finally:
        pa.default_memory_pool().release_unused()
    _sync_and_rename(temporary, path)
    return {"path": relative, "server": int(server_rank), "rows": int(rows), "sha256": _sha256(path)}


def _int64_bits(ids):
    ids = np.asarray(ids)
    return ids.view(np.int64) if ids.dtype in (np.uint64, np.int64) else ids.astype(np.uint64).view(np.int64)


def _whole(counts):
    counts = np.asarray(counts)
    return counts.astype(np.int64) if counts.dtype.kind in "iu" else np.rint(counts).astype(np.int64)


def write_manifest(folder, tables):
    """Write ``folder/manifest.json`` listing ``tables`` ({table: entry}) atomically."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, MANIFEST)
    temporary = path + ".tmp-%d" % os.getpid()
    with open(temporary, "wb") as f:
        f.write(manifest_bytes(tables))
    _sync_and_rename(temporary, path)


def manifest_bytes(tables):
    """The text of a manifest listing ``tables`` ({table: entry}), UTF-8 encoded."""
    return json.dumps({"version": VERSION, "tables": tables}, indent=1, sort_keys=True).encode("utf-8")


def read_manifest(folder, files=None):
    """The manifest of the tables in ``folder``, its listing checked (:func:`check_listing`: table names, shard
    paths inside the folder, a sha256 for every shard); DataError naming the file when it is missing or unreadable,
    or naming the table and what is wrong."""
    files = files or _LocalFiles
    path = files.join(folder, MANIFEST)
    try:
        with files.open_input(path) as f:
            manifest = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError("cannot read the tables' manifest %s: %s" % (path, exc)) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("tables"), dict):
        raise DataError("%s is not a tables manifest (a 'tables' map expected)" % path)
    if int(manifest.get("version", 0)) > VERSION:
        raise DataError("%s: tables manifest version %s is newer than this sparkps reads (%d)"
                        % (path, manifest.get("version"), VERSION))
    return check_listing(folder, manifest, files)


def check_shards(folder, manifest, files=None):
    """Check every shard the manifest lists; the first missing or damaged one (absent, sha256 differs, not a Parquet
    file, other columns or row count) is one DataError naming the shard's path and its table, as is a listing that
    reaches beyond the folder (:func:`check_listing`). Blocks on reading every shard (in blocks)."""
    import pyarrow.parquet as pq
    files = files or _LocalFiles
    check_listing(folder, manifest, files)
    for table, entry in manifest["tables"].items():
        for shard in entry["shards"]:
            path = listed_path(folder, shard["path"], table, files)
            if not files.exists(path):
                raise DataError("table %r: shard %s is missing" % (table, path))
            if _sha256(path, files) != shard["sha256"]:
                raise DataError("table %r: shard %s is damaged (its sha256 is not the manifest's)" % (table, path))
            try:
                with files.open_input(path) as f:
                    meta = pq.ParquetFile(f).metadata
            except Exception as exc:            # pyarrow raises several kinds for a bad footer
                raise DataError("table %r: shard %s is not a readable Parquet file: %s" % (table, path, exc)) \
                    from None
            names = [meta.schema.column(i).path.split(".")[0] for i in range(meta.num_columns)]
            if [n for n in COLUMNS[:2] if n not in names] or meta.num_rows != int(shard["rows"]):
                raise DataError("table %r: shard %s holds columns %s and %d rows; the manifest says %d rows of %s"
                                % (table, path, sorted(set(names)), meta.num_rows, shard["rows"], list(COLUMNS)))


def iter_shard_rows(folder, table, batch_rows=65536, files=None):
    """Yield (ids uint64, vectors float32 [n, dim], counts int64) of ``table``'s shards, ``batch_rows`` rows at a
    time (never the whole table). Blocks on reading the shards."""
    import pyarrow.parquet as pq
    files = files or _LocalFiles
    manifest = read_manifest(folder, files)
    dim = int(manifest["tables"][table]["dim"]) if table in manifest["tables"] else 0
    for path in shard_files(folder, manifest, table, files):
        with files.open_input(path) as f:
            yield from _shard_batches(pq.ParquetFile(f), dim, batch_rows)


def shard_rows_with_steps(path, dim, batch_rows=65536, files=None):
    """Yield (ids uint64, vectors float32 [n, dim], counts int64, last_steps int64) of the one shard file ``path``,
    ``batch_rows`` rows at a time; a shard without a count or last_step column reads 0 there. Blocks on reading it."""
    import pyarrow.parquet as pq
    with (files or _LocalFiles).open_input(path) as f:
        parquet = pq.ParquetFile(f)
        for batch in parquet.iter_batches(batch_size=int(batch_rows)):
            ids, vectors, counts = _batch_rows(batch, dim)
            steps = batch.column("last_step").to_numpy(zero_copy_only=False).astype(np.int64) \
                if "last_step" in batch.schema.names else np.zeros(batch.num_rows, np.int64)
            yield ids, vectors, counts, steps


def _shard_batches(parquet, dim, batch_rows):
    """(ids, vectors, counts) of one open shard, ``batch_rows`` rows at a time."""
    for batch in parquet.iter_batches(batch_size=int(batch_rows)):
        yield _batch_rows(batch, dim)


def _batch_rows(batch, dim):
    """(ids uint64, vectors float32 [n, dim], counts int64) of one record batch of a shard."""
    n = batch.num_rows
    ids = batch.column("id").to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
    vectors = np.asarray(batch.column("vector").flatten().to_numpy(zero_copy_only=False),
                         np.float32).reshape(n, dim)
    counts = batch.column("count").to_numpy(zero_copy_only=False).astype(np.int64) \
        if "count" in batch.schema.names else np.zeros(n, np.int64)
    return ids, vectors, counts


def _sha256(path, files=None):
    digest = hashlib.sha256()
    with (files or _LocalFiles).open_input(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sync_and_rename(temporary, path):
    with open(temporary, "rb") as f:
        os.fsync(f.fileno())
    os.replace(temporary, path)

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
"""
import hashlib
import json
import os

import numpy as np

from sparkps.errors import DataError

MANIFEST = "manifest.json"
VERSION = 1
COLUMNS = ("id", "vector", "count", "last_step")
ROW_GROUP_ROWS = 65536       # rows per Parquet row group of a shard: 4 MiB of vectors at dim 16


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
    relative = shard_path(table, server_rank)
    path = os.path.join(folder, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    schema = pa.schema([("id", pa.int64()), ("vector", pa.list_(pa.float32(), dim)), ("count", pa.int64()),
                        ("last_step", pa.int64())])
    temporary = path + ".tmp-%d" % os.getpid()
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


class _LocalFiles:
    """Python's own file I/O, in the terms of the ``files`` the readers take."""

    join, exists = staticmethod(os.path.join), staticmethod(os.path.exists)

    @staticmethod
    def open_input(path):
        return open(path, "rb")


def read_manifest(folder, files=None):
    """The manifest of the tables in ``folder``; DataError naming the file when it is missing or unreadable."""
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
    return manifest


def check_shards(folder, manifest, files=None):
    """Check every shard the manifest lists; the first missing or damaged one (absent, sha256 differs, not a Parquet
    file, other columns or row count) is one DataError naming the shard's path and its table. Blocks on reading
    every shard (in blocks)."""
    import pyarrow.parquet as pq
    files = files or _LocalFiles
    for table, entry in manifest["tables"].items():
        for shard in entry["shards"]:
            path = files.join(folder, shard["path"])
            if not files.exists(path):
                raise DataError("table %r: shard %s is missing" % (table, path))
            if shard.get("sha256") and _sha256(path, files) != shard["sha256"]:
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
    entry = read_manifest(folder, files)["tables"][table]
    dim = int(entry["dim"])
    for shard in entry["shards"]:
        with files.open_input(files.join(folder, shard["path"])) as f:
            yield from _shard_batches(pq.ParquetFile(f), dim, batch_rows)


def _shard_batches(parquet, dim, batch_rows):
    """(ids, vectors, counts) of one open shard, ``batch_rows`` rows at a time."""
    for batch in parquet.iter_batches(batch_size=int(batch_rows)):
        n = batch.num_rows
        ids = batch.column("id").to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
        vectors = np.asarray(batch.column("vector").flatten().to_numpy(zero_copy_only=False),
                             np.float32).reshape(n, dim)
        names = batch.schema.names
        counts = batch.column("count").to_numpy(zero_copy_only=False).astype(np.int64) if "count" in names \
            else np.zeros(n, np.int64)
        yield ids, vectors, counts


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

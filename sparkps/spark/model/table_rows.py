"""The sparse tables of a model trained on Spark: the servers' shard files a fit returns, inline when small, how
often each id was seen, and a model small enough to broadcast.

At the end of a fit every server writes its shard of every table into a staging folder (COMMAND write_tables; the
rows never pass through a worker or the driver) and worker 0 returns the tables' manifest beside the dense
parameters. ``fit_tables`` then gives the model its tables: read into ``arg_params`` (RowSparse, sorted by id) with
``SparkModel.table_counts`` from the shards' ``count`` column (the servers' own occurrence counts) when their rows
take at most ``inline_bytes`` (rows x dim x 4 bytes over every table: the fast path, shipped inside ``transform``'s
UDF), the staging folder then removed; otherwise the model keeps them as shard files in the staging folder
(SparkModel format 4, scored by a Spark SQL join), which ``save`` moves into the model's folder and which is
removed when the model is garbage or the program ends.

    small = model.shrink(min_seen=5)        # a SparkModel without the rows seen fewer than 5 times
    check_broadcast_size(payload_bytes, limit, tables)      # ConfigError naming the size, the limit, the fix

An id missing from a shrunk model reads as a new row would (``sparkps.rows.values.initial_rows``: uniform in
[-0.01, 0.01)), as an id never seen in training does. Only ``fit_tables`` blocks (on reading the shards).
"""
import numpy as np

from sparkps.errors import ConfigError
from sparkps.rows.values import RowSparse

# Tables of at most this many bytes of rows (rows x dim x 4 over every table of a model) come back inline from a
# fit; larger ones stay shard files. Measured (docs/tables.md): 16 MiB of rows scores faster inline than by join
# and keeps the inline model's payload (ids and rows) under the 32 MiB that ships inside transform's UDF.
INLINE_TABLE_BYTES = 16 << 20


def table_bytes(manifest):
    """The bytes of the rows of every table a manifest's tables map lists (rows x dim x 4)."""
    return sum(int(entry["rows"]) * int(entry["dim"]) * 4 for entry in manifest.values())


def fit_tables(model, folder, manifest, inline_bytes=INLINE_TABLE_BYTES):
    """Give ``model`` (a SparkModel holding the dense parameters) the tables the servers wrote into ``folder``
    (``manifest``: its tables map): inline when their rows take at most ``inline_bytes`` (None: always inline; 0:
    never), the folder then removed; else as the model's shard files, the folder owned by the model (removed with
    it unless ``save`` moved it). Every shard is checked first (one DataError naming a missing or damaged shard and
    its table). Blocks on reading the shards when they go inline."""
    import shutil

    from sparkps.rows.shards import check_shards
    check_shards(folder, {"version": 1, "tables": manifest})
    if inline_bytes is None or table_bytes(manifest) <= inline_bytes:
        rows, counts = inline_rows(folder, manifest)
        model.arg_params.update(rows)
        model.table_counts = counts
        shutil.rmtree(folder, ignore_errors=True)
        return model
    model.table_counts = {}       # the counts are in the shards' count column
    model.own_staged_tables(folder, manifest)
    return model


def inline_rows(folder, manifest):
    """({table: RowSparse of every row, sorted by id}, {table: (ids, counts)}) of the shard files in ``folder``.
    Blocks on reading them (every row, once: for small tables)."""
    from sparkps.rows.shards import iter_shard_rows
    rows, counts = {}, {}
    for name, entry in manifest.items():
        dim = int(entry["dim"])
        parts = list(iter_shard_rows(folder, name))
        ids = np.concatenate([p[0] for p in parts]).view(np.int64) if parts else np.empty(0, np.int64)
        vectors = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, dim), np.float32)
        seen = np.concatenate([p[2] for p in parts]) if parts else np.empty(0, np.int64)
        order = np.argsort(ids, kind="stable")
        input_dim = (entry.get("options") or {}).get("input_dim")
        rows[name] = RowSparse(ids[order], np.ascontiguousarray(vectors[order], np.float32), (input_dim, dim))
        counts[name] = (ids[order], seen[order].astype(np.int64))
    return rows, counts


def shrunk_params(arg_params, table_counts, min_seen):
    """``arg_params`` whose tables keep only the rows of ids seen at least ``min_seen`` times (a whole number >= 1;
    anything else is a ConfigError naming it, never a silent truncation)."""
    number = not isinstance(min_seen, bool) and isinstance(min_seen, (int, np.integer, float))
    if not (number and np.isfinite(min_seen) and min_seen >= 1 and float(min_seen).is_integer()):
        raise ConfigError("shrink(min_seen): min_seen must be a whole number >= 1 (how often training saw an id), "
                          "got %r" % (min_seen,))
    if not table_counts:
        raise ConfigError("this model has no table counts (they are recorded by SparkTrainer for models fed through "
                          "an input layout); it cannot drop rare rows")
    out = dict(arg_params)
    for name, (ids, counts) in table_counts.items():
        table = arg_params.get(name)
        if not isinstance(table, RowSparse):
            continue
        frequent = ids[counts >= int(min_seen)]
        keep = np.isin(table.ids, frequent)
        out[name] = RowSparse(table.ids[keep], table.rows[keep], table.shape)
    return out


def table_summary(arg_params):
    """'name: rows x dim' of every table, for messages."""
    parts = ["%s: %d rows x %d" % (n, v.ids.size, v.dim) for n, v in sorted(arg_params.items())
             if isinstance(v, RowSparse)]
    return ", ".join(parts) or "no sparse tables"


def check_broadcast_size(size, limit, arg_params):
    """ConfigError when a model of ``size`` bytes exceeds the broadcast ``limit`` (None: no limit)."""
    if limit is None or size <= limit:
        return
    raise ConfigError("the model is %.1f MB, above the broadcast limit of %.1f MB (max_broadcast_bytes); its tables: "
                      "%s. Drop rare rows with model.shrink(min_seen) or raise max_broadcast_bytes"
                      % (size / 2**20, limit / 2**20, table_summary(arg_params)))

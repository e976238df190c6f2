"""A model's sparse tables as shard files (``sparkps.rows.shards``: one Parquet file per server and table, plus
``tables/manifest.json``), written from the rows a model holds in memory: the folder format the servers' own
writes are to use at the end of a fit, here for a model whose tables travelled inline
(``SparkModel.with_sharded_tables``).

Rows go to the shard ``rows.ids.shard_of`` gives their id (the servers' split, decision 13), each shard written
with its ids' training counts (``SparkModel.table_counts``; 0 where the model has none) and last step 0. The
manifest's ``options`` per table are its ``TableConfig.to_dict()`` (what an unseen id's initial row needs).
Blocks on writing the files.
"""
import numpy as np

from sparkps.rows.ids import shard_of
from sparkps.rows.values import RowSparse

TABLES_FOLDER = "tables"


def sharded_table_names(symbol, arg_params):
    """{name: TableConfig} of the sparse tables of ``symbol`` whose rows ``arg_params`` holds as a RowSparse."""
    from sparkps.symbol.ops.embedding import sparse_tables
    return {name: spec for name, spec in sparse_tables(symbol).items()
            if isinstance(arg_params.get(name), RowSparse)}


def write_table_shards(folder, symbol, arg_params, table_counts=None, num_shards=2):
    """Write every sparse table of ``arg_params`` (``symbol``'s RowSparse tables) as ``num_shards`` shard files and
    the manifest under ``folder`` (the model's ``tables`` folder); returns the manifest's tables map."""
    from sparkps.rows import shards
    tables = {}
    for name, spec in sharded_table_names(symbol, arg_params).items():
        value = arg_params[name].merged()
        ids = value.ids.astype(np.int64).view(np.uint64)
        counts = _counts_of(value.ids, (table_counts or {}).get(name))
        owner = shard_of(ids, num_shards)
        entries = []
        for rank in range(int(num_shards)):
            mine = owner == rank
            entries.append(shards.write_shard(folder, name, rank, ids[mine],
                                              np.ascontiguousarray(value.rows[mine], np.float32),
                                              counts[mine], np.zeros(int(mine.sum()), np.int64)))
        tables[name] = {"dim": int(spec.dim), "dtype": "float32", "rows": int(ids.size),
                        "options": spec.to_dict(), "shards": entries}
    shards.write_manifest(folder, tables)
    return tables


def _counts_of(ids, counted):
    """The training count of each of ``ids`` from ``counted`` = (sorted ids, counts), 0 where absent."""
    out = np.zeros(ids.size, np.int64)
    if counted is None or not len(counted[0]):
        return out
    known, counts = np.asarray(counted[0], np.int64), np.asarray(counted[1], np.int64)
    at = np.clip(np.searchsorted(known, ids), 0, known.size - 1)
    hit = known[at] == ids
    out[hit] = counts[at[hit]]
    return out


def with_table_stand_ins(arg_params, manifest):
    """``arg_params`` plus, for each table of ``manifest`` (a manifest's tables map) it lacks, an empty RowSparse of
    the table's shape: what the checks and descriptions that read a model's tables' names and widths need, without
    their rows."""
    out = dict(arg_params)
    for name, entry in (manifest or {}).items():
        if name not in out:
            dim = int(entry["dim"])
            input_dim = (entry.get("options") or {}).get("input_dim")
            out[name] = RowSparse(np.empty(0, np.int64), np.empty((0, dim), np.float32), (input_dim, dim))
    return out


def rows_for_ids(folder, name, ids, dim, input_dim=None, batch_rows=65536, files=None):
    """RowSparse of the rows of ``ids`` (int64 bits) that table ``name``'s shard files under ``folder`` hold,
    streamed ``batch_rows`` at a time (memory: the rows asked for plus one batch); an id no shard holds is left out
    (it then reads its initial row); ``files`` reaches a folder on another store (``rows.shards``). Blocks on
    reading the shards."""
    from sparkps.rows.shards import iter_shard_rows
    wanted = np.unique(np.asarray(ids, np.int64))
    found_ids, found_rows = [], []
    for shard_ids, vectors, _ in iter_shard_rows(folder, name, batch_rows=batch_rows, files=files):
        hit = np.isin(shard_ids.view(np.int64), wanted)
        if hit.any():
            found_ids.append(shard_ids.view(np.int64)[hit])
            found_rows.append(np.asarray(vectors, np.float32)[hit])
    if not found_ids:
        return RowSparse(np.empty(0, np.int64), np.empty((0, dim), np.float32), (input_dim, dim))
    return RowSparse(np.concatenate(found_ids), np.concatenate(found_rows), (input_dim, dim))

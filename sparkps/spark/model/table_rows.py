"""The sparse tables of a model trained on Spark: every worker's rows in the model, how often each id was seen, and
a model small enough to broadcast.

Worker 0 returns the dense parameters and the table rows of the ids it pulled; each other worker returns the rows
of the ids it pulled (``worker_tables``), and every worker the occurrence count of each id in its partition.
``merge_worker_tables`` joins them on the driver, so the model holds a row for every id of the training data
(the servers' final values) and ``SparkModel.table_counts`` the count of each id over all partitions.

    small = model.shrink(min_seen=5)        # a SparkModel without the rows seen fewer than 5 times
    check_broadcast_size(payload_bytes, limit, tables)      # ConfigError naming the size, the limit, the fix

An id missing from a shrunk model reads as a new row would (``sparkps.rows.values.initial_rows``: uniform in
[-0.01, 0.01)), as an id never seen in training does. Nothing here blocks.
"""
import numpy as np

from sparkps.errors import ConfigError
from sparkps.model_files import params_from_bytes, params_to_bytes
from sparkps.rows.values import RowSparse

COUNTS_PREFIX = "count:"


def partition_counts(X, layout, tables):
    """{table: (sorted ids int64, counts int64)}: how often each id of ``tables`` ({name: TableConfig}, as
    ``sparse_tables`` gives them) occurs in the rows ``X`` of the partition, split into named inputs by ``layout``
    (padding ids of a multi-valued field left out)."""
    inputs = layout.split(X) if len(X) else {}
    out = {}
    for name, spec in tables.items():
        parts = []
        for field in spec.fields:
            if field not in inputs:
                continue
            ids = inputs[field].view(np.int64).reshape(-1)
            parts.append(ids if spec.padding_id is None else ids[ids != spec.padding_id])
        flat = np.concatenate(parts) if parts else np.empty(0, np.int64)
        out[name] = np.unique(flat, return_counts=True)
    return out


def worker_tables(model, X, layout, rank):
    """What a worker returns beside its history: its partition's id counts and (all but worker 0, whose rows travel
    with the dense parameters) the rows of the ids it pulled, as .npz bytes."""
    from sparkps.symbol.ops.embedding import sparse_tables
    tables = sparse_tables(model.symbol)
    counts = partition_counts(X, layout, tables)
    arrays = {}
    for name, (ids, count) in counts.items():
        arrays[COUNTS_PREFIX + name] = RowSparse(ids, count.astype(np.float64)[:, None], (None, 1))
    if rank != 0:
        arrays.update({name: model.arg_params[name] for name in tables if name in model.arg_params})
    return {"table_rows": params_to_bytes(arrays)}


def merge_worker_tables(arg_params, results):
    """Add the other workers' table rows to ``arg_params`` (worker 0's rows kept where both hold an id) and return
    {table: (ids, counts summed over workers)}."""
    counts = {}
    for result in sorted(results, key=lambda r: r["rank"]):
        if not result.get("table_rows"):
            continue
        arrays, _ = params_from_bytes(result["table_rows"])
        for key, value in arrays.items():
            if key.startswith(COUNTS_PREFIX):
                name = key[len(COUNTS_PREFIX):]
                counts.setdefault(name, []).append((value.ids, value.rows[:, 0].astype(np.int64)))
            elif key in arg_params:
                arg_params[key] = _union(arg_params[key], value)
    return {name: _summed(parts) for name, parts in counts.items()}


def _union(first, other):
    """The rows of ``first`` and those of ``other`` whose ids ``first`` lacks."""
    extra = ~np.isin(other.ids, first.ids)
    if not extra.any():
        return first
    ids = np.concatenate([first.ids, other.ids[extra]])
    rows = np.concatenate([first.rows, other.rows[extra]])
    order = np.argsort(ids, kind="stable")
    return RowSparse(ids[order], rows[order], first.shape)


def _summed(parts):
    ids = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts])
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, np.bincount(inverse.reshape(-1), weights=counts, minlength=unique.size).astype(np.int64)


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

"""A warm start: a server's shard of a sparse table loaded from the shard files of the model a fit starts from.

A fit that starts from a saved model (``SparkTrainer.fit(initial_model=...)``, docs/warm_start.md) gives every server
the model's tables folder (``SPARKPS_START_TABLES``: a manifest and its shard files, :mod:`sparkps.rows.shards`). Once
the tables exist and the optimizer is set, COMMAND load_tables has each server read the rows the current split gives
it (``mix64(id) % num_servers == rank``, decision 13): when the model was written by as many servers as this fit has
(its shards numbered 0..S-1), server ``r`` reads shard ``r`` only; otherwise every server reads every shard and keeps
its own ids, so a model trained on 2 servers starts a fit on 3. Rows keep their vectors, occurrence counts and
last-seen steps; their optimizer state starts fresh (shard files carry none) and the table's step continues from the
step after the newest last-seen step it loaded. No row passes through a worker or the driver.

>>> # loaded = load_start_rows(table, '/staging/start/tables', manifest, rank=1, num_servers=3)
"""
import numpy as np

from sparkps.errors import DataError
from sparkps.rows.ids import shard_of
from sparkps.rows.shards import listed_path, shard_rows_with_steps

BATCH_ROWS = 65536


def own_shard_paths(folder, entry, table, rank, num_servers):
    """``(paths, route)``: the shard files of ``table`` (its manifest ``entry``) server ``rank`` of ``num_servers``
    reads, and whether their rows must be routed (True when the model was written by another number of servers:
    every shard is read and only this server's ids kept)."""
    shards = entry["shards"]
    written_by = sorted(int(shard.get("server", -1)) for shard in shards)
    if written_by == list(range(num_servers)):
        return [listed_path(folder, s["path"], table) for s in shards if int(s["server"]) == rank], False
    return [listed_path(folder, s["path"], table) for s in shards], True


def load_start_rows(table, folder, manifest, rank, num_servers, batch_rows=BATCH_ROWS):
    """Load into ``table`` (a :class:`~sparkps.rows.table.SparseTable`, created and given its optimizer) the rows of
    its shard from the shard files in ``folder`` (``manifest``: the folder's manifest, read and checked); returns
    ``(rows loaded, their ids sorted)``. DataError naming the table when the manifest lacks it or its width differs,
    or naming the shard when one cannot be read. Blocks on reading the files (``batch_rows`` rows at a time)."""
    entry = manifest["tables"].get(table.name)
    if entry is None:
        raise DataError("table %r: the initial model's tables (%s) hold no such table (they hold %s)"
                        % (table.name, folder, ", ".join(sorted(manifest["tables"])) or "none"))
    if int(entry["dim"]) != int(table.dim):
        raise DataError("table %r: the initial model's rows are %d wide, this fit's table %d (embedding width)"
                        % (table.name, int(entry["dim"]), int(table.dim)))
    paths, route = own_shard_paths(folder, entry, table.name, rank, num_servers)
    loaded, newest, held = 0, 0, []
    for path in paths:
        try:
            for ids, vectors, counts, steps in shard_rows_with_steps(path, table.dim, batch_rows):
                if route:
                    mine = shard_of(ids, num_servers) == rank
                    ids, vectors, counts, steps = ids[mine], vectors[mine], counts[mine], steps[mine]
                if ids.size:
                    table.load_rows(start_rows(table, ids, vectors, counts, steps))
                    loaded += int(ids.size)
                    held.append(np.asarray(ids, np.uint64))
                    newest = max(newest, int(steps.max()))
        except (OSError, ValueError) as exc:
            raise DataError("table %r: shard %s of the initial model cannot be read: %s"
                            % (table.name, path, exc)) from None
    if loaded:      # this fit's first step comes after the initial model's last: its rows' last-seen steps stay older
        table.step = max(int(table.step), newest + 1)
    table.mark_saved()
    return loaded, np.sort(np.concatenate(held)) if held else np.empty(0, np.uint64)


def forgotten(last_seen, step, forget):
    """The rows a written model leaves out: unseen for more than ``forget`` steps at table step ``step`` (a row's
    last-seen step carries over from the model a fit started from, so a row unseen for several fits goes too).

    >>> forgotten(np.array([2, 9, 10]), 10, 5).tolist()
    [True, False, False]
    """
    return (int(step) - np.asarray(last_seen, np.int64)) > int(forget)


def id_changes(written, start_ids):
    """{"added", "kept", "dropped"}: of the ids ``written``, those the fit's initial model lacked and those it held,
    and the ids of that model (``start_ids``, sorted; None: a cold start) not written.

    >>> id_changes(np.array([1, 5, 7], np.uint64), np.array([1, 2, 7], np.uint64))
    {'added': 1, 'kept': 2, 'dropped': 1}
    """
    if start_ids is None or not start_ids.size:
        return {"added": int(np.size(written)), "kept": 0, "dropped": 0}
    kept = int(np.count_nonzero(np.isin(np.asarray(written, np.uint64), start_ids, assume_unique=True)))
    return {"added": int(np.size(written)) - kept, "kept": kept, "dropped": int(start_ids.size) - kept}


def start_rows(table, ids, vectors, counts, steps):
    """``table.load_rows``'s arrays for rows read from shard files: fresh optimizer state (zeros, no updates)."""
    n = int(ids.size)
    arrays = {"ids": np.asarray(ids, np.uint64), "values": np.asarray(vectors, np.float32),
              "updates": np.zeros(n, np.uint32), "seen": np.asarray(counts, np.float32),
              "last_seen": np.asarray(steps, np.int32)}
    for k in range(len(table.store.states)):
        arrays["state%d" % k] = np.zeros((n, table.dim), table.store.values.dtype)
    return arrays

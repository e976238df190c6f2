"""Incremental saves of sparse tables and their compaction, against loading the saves as they are (same run).

A table of ``--rows`` rows (dim 16, AdaGrad) held by ``--servers`` servers (``SparseTable`` objects in this
process, rows routed by ``shard_of``) is saved as a base, then ``--deltas`` times ``--changed`` of its rows are
updated and saved as a delta into the same directory (what a job saving after every epoch writes). Measured:

- the time to load the checkpoint onto the same server count replaying base + deltas (the baseline), and after
  ``compact_checkpoint`` (what `sparkps compact-checkpoint DIR` runs) from the one base it writes;
- the time compaction takes, against one full save of the same table;
- files and bytes on disk before and after.

Every server's work is timed one after the other in this process (a job's servers load in parallel, so a
cluster's wall time is about the figure divided by the server count); medians over ``--repeat`` loads. The
compacted checkpoint is checked to load to the same rows, state and counters.

Ids: ``mix64(0..rows-1)`` (hashed feature ids); the rows changed by each delta are drawn from a numpy Generator
seeded by ``--seed``; gradients are standard normal from the same generator.

    python -m benchmarks.bench_sparse_compaction [--rows 2000000] [--servers 2] [--deltas 5] [--changed 0.05]
        [--repeat 3] [--write-docs] [--json PATH]
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

from benchmarks import report
from sparkps.comm import manifest as manifests
from sparkps.rows.ids import mix64, shard_of
from sparkps.rows.table import SparseTable
from sparkps.server.tables import sparse_checkpoint

DIM = 16
ADAGRAD = {'name': 'adagrad', 'params': {'learning_rate': 0.05}}


def build(args, rng):
    """``--servers`` tables holding ``--rows`` rows between them, each row updated once."""
    ids = mix64(np.arange(args.rows, dtype=np.uint64))
    owner = shard_of(ids, args.servers)
    tables = [SparseTable('bench', DIM, optimizer=ADAGRAD) for _ in range(args.servers)]
    for s, table in enumerate(tables):
        mine = ids[owner == s]
        for lo in range(0, mine.size, 1_000_000):
            part = mine[lo:lo + 1_000_000]
            table.pull(part)
            table.push(part, rng.standard_normal((part.size, DIM), dtype=np.float32))
    return ids, owner, tables


def save_all(directory, tables, delta):
    """One save of every server into ``directory`` (the manifest written as the worker writes it); seconds."""
    path = os.path.join(directory, manifests.MANIFEST)
    earlier = manifests.read_manifest(directory) if os.path.exists(path) else {}
    generation, may_delta = manifests.next_table_generation(earlier, 'bench')
    started = time.perf_counter()
    described = [sparse_checkpoint.save_table(directory, t, rank, generation, delta and may_delta)
                 for rank, t in enumerate(tables)]
    manifests.write_manifest(directory, [], None, described)
    return time.perf_counter() - started


def load_all(directory, servers):
    """Seconds to load the checkpoint onto ``servers`` servers (one after the other), and the tables."""
    saved = manifests.read_manifest(directory)
    started = time.perf_counter()
    tables = [sparse_checkpoint.load_table(directory, saved, 'bench', rank, servers) for rank in range(servers)]
    return time.perf_counter() - started, tables


def on_disk(directory):
    files = [f for f in os.listdir(directory) if f.startswith('sparse-')]
    return len(files), sum(os.path.getsize(os.path.join(directory, f)) for f in files)


def fingerprint(tables):
    """Rows, state and counters of every table, as sorted arrays."""
    arrays = [t.export_rows() for t in tables]
    ids = np.concatenate([a['ids'] for a in arrays])
    order = np.argsort(ids)
    return [ids[order]] + [np.concatenate([a[k] for a in arrays])[order]
                           for k in ('values', 'state0', 'updates', 'seen', 'last_seen')]


def run(args):
    rng = np.random.default_rng(args.seed)
    ids, owner, tables = build(args, rng)
    directory = tempfile.mkdtemp(prefix='bench-compaction-')
    full_dir = tempfile.mkdtemp(prefix='bench-full-save-')
    try:
        save_all(directory, tables, delta=False)
        delta_s = []
        for _ in range(args.deltas):
            changed = rng.choice(ids, size=int(args.changed * args.rows), replace=False)
            for s, table in enumerate(tables):
                part = changed[shard_of(changed, args.servers) == s]
                table.pull(part)
                table.push(part, rng.standard_normal((part.size, DIM), dtype=np.float32))
                table.tick()
            delta_s.append(save_all(directory, tables, delta=True))
        full_save_s = save_all(full_dir, tables, delta=False)
        files_before, bytes_before = on_disk(directory)
        replay = [load_all(directory, args.servers) for _ in range(args.repeat)]
        expected = fingerprint(replay[-1][1])
        replay_s = [r[0] for r in replay]
        replay = None
        started = time.perf_counter()
        compacted_report = sparse_checkpoint.compact_checkpoint(directory)
        compact_s = time.perf_counter() - started
        files_after, bytes_after = on_disk(directory)
        compacted = [load_all(directory, args.servers) for _ in range(args.repeat)]
        got = fingerprint(compacted[-1][1])
        assert all(np.array_equal(a, b) for a, b in zip(expected, got)), "compaction changed the table"
        assert compacted_report['bench']['generations'] == args.deltas + 1
        return {'replay_s': replay_s, 'compacted_s': [r[0] for r in compacted],
                'compact_s': compact_s, 'full_save_s': full_save_s, 'delta_s': delta_s,
                'files': (files_before, files_after), 'bytes': (bytes_before, bytes_after)}
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(full_dir, ignore_errors=True)


SECTIONS = ("sparse_compaction",)


def medians(r):
    """The run's result with the repeated timings (loads, delta saves) reduced to their medians."""
    return dict(r, **{key: statistics.median(r[key]) for key in ('replay_s', 'compacted_s', 'delta_s')})


def render(run):
    """The section of a run record (pure function of it)."""
    return report_text(medians(run["data"]["result"]), argparse.Namespace(**run["data"]["options"]), run)


def report_text(r, args, run):
    mib = 1 << 20
    command = run["command"]
    return "\n".join([
        "## Sparse checkpoints: incremental saves and compaction", "",
        (f"`{command}` — a table of {args.rows:,} rows (dim {DIM}, AdaGrad) on {args.servers} servers, saved as a "
         f"base and {args.deltas} deltas of {args.changed:.0%} of its rows each; every server's work timed one "
         f"after the other in one process (medians of {args.repeat} loads)."), "",
        "| | seconds | files | MiB on disk |", "|---|---|---|---|",
        (f"| load base + {args.deltas} deltas (baseline) | {r['replay_s']:.2f} | {r['files'][0]} | "
         f"{r['bytes'][0] / mib:,.0f} |"),
        f"| load after compaction | {r['compacted_s']:.2f} | {r['files'][1]} | {r['bytes'][1] / mib:,.0f} |",
        f"| compact (`sparkps compact-checkpoint`) | {r['compact_s']:.2f} | | |",
        f"| one full save (for comparison) | {r['full_save_s']:.2f} | | |",
        f"| one delta save (median) | {r['delta_s']:.2f} | | |", "",
        (f"Load after compaction / load of base + deltas: **{r['compacted_s'] / r['replay_s']:.2f}**; compaction "
         f"/ full save: {r['compact_s'] / r['full_save_s']:.2f}. The compacted checkpoint loads to the same rows, "
         f"state and counters (checked)."), "",
        (f"One-minute load of the machine: {run['load']['start'][0]:.1f} at the start of the run, "
         f"{run['load']['end'][0]:.1f} at its end ({run['machine']['cores']} cores, shared with other jobs).")])


def figures(r):
    """The run's figures for ``--json``."""
    return {"load base + deltas": report.lower(r['replay_s'], "s"),
            "load after compaction": report.lower(r['compacted_s'], "s"),
            "compact": report.lower(r['compact_s'], "s"), "full save": report.lower(r['full_save_s'], "s"),
            "delta save": report.lower(r['delta_s'], "s"),
            "load compacted/replay": report.lower(r['compacted_s'] / r['replay_s'], "x")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument('--rows', type=int, default=2_000_000)
    parser.add_argument('--servers', type=int, default=2)
    parser.add_argument('--deltas', type=int, default=5)
    parser.add_argument('--changed', type=float, default=0.05)
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--seed', type=int, default=0)
    args = report.add_output_args(parser).parse_args()
    record = report.Run("bench_sparse_compaction")
    result = run(args)
    print(record.publish(args, 'sparse_compaction', {"options": report.options(args), "result": result}, render))
    report.save_json(args, 'bench_sparse_compaction', figures(medians(result)))


if __name__ == '__main__':
    main()

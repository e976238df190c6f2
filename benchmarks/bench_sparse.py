"""Sparse-table benchmarks, each against a baseline measured in the same run.

1. Id index: the numba open-addressing :class:`HashRowIndex` vs the numpy-only :class:`SortedRowIndex`
   (sorted ids + searchsorted, merged side array) holding ``--rows`` ids: time to build it in batches,
   to look up one batch's distinct ids, to insert a batch of new ids, and bytes per id.
2. Table step: pull + push of one batch of ``--batch`` samples x ``--fields`` fields with Zipf-distributed
   ids over ``--rows`` possible ids (dim 16, AdaGrad) through a :class:`SparseTable` in this process, and
   through the kvstore API over tcp with 1 and 2 server processes (``kv.pull_step`` + queued ``kv.push``: one
   PUSHPULL per server per step; section ``sparse_tcp``, alone with ``--tcp-only``), vs the same work in
   plain numpy on preallocated dense arrays (unique, gather, AdaGrad scatter): rows/s and their ratio. Both
   sides are warmed with the same batches first (the table creates rows on first pull; the dense arrays'
   pages are touched once).
3. Memory and checkpoints: a table of ``--rows`` rows (dim 16, AdaGrad) — bytes per row against the goal
   (1.3 x raw bytes of rows + state, plus 16 bytes per id), measured as the table's array bytes and as the
   process's RSS growth — and the time to save it and to load it back (1 server).

Ids are generated as documented here: ``zipf(a) - 1`` over [0, rows), then spread by the splitmix64 mix
(feature ids are hashes), from a numpy Generator seeded by ``--seed``. Figures are medians over
``--repeat`` interleaved rounds.

    python -m benchmarks.bench_sparse [--rows 10000000] [--repeat 15] [--tcp-only] [--write-docs] [--json PATH]
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

from benchmarks import report
from sparkps import kvstore, optimizer
from sparkps.comm.manifest import add_table_generation
from sparkps.comm.timeouts import Timeouts
from sparkps.rows.ids import mix64
from sparkps.rows.index import HashRowIndex, SortedRowIndex
from sparkps.rows.table import SparseTable
from sparkps.rows.values import RowSparse
from sparkps.runtime.server_node import spawn_server
from sparkps.scheduler import Scheduler
from sparkps.server.tables import sparse_checkpoint

DIM, LR, EPS = 16, 0.05, 1e-7
ADAGRAD = {'name': 'adagrad', 'params': {'learning_rate': LR, 'epsilon': EPS}}


def rss_bytes():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def zipf_batch(rng, rows, size, a=1.2):
    """One batch of ``size`` ids: Zipf ranks folded into [0, rows) and spread by the 64-bit mix."""
    ranks = (rng.zipf(a, size) - 1) % rows
    return mix64(ranks.astype(np.uint64)), ranks


def timed(fn, *args):
    """Seconds ``fn(*args)`` takes, and its result."""
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


# ---- 1. index -------------------------------------------------------------------------------------------
def build_index(index, all_ids, step=1_000_000):
    for lo in range(0, all_ids.size, step):
        index.insert(all_ids[lo:lo + step], np.arange(lo, min(lo + step, all_ids.size), dtype=np.int32))


def bench_index(args, rng):
    all_ids = mix64(np.arange(args.rows, dtype=np.uint64))
    batches = [np.unique(zipf_batch(rng, args.rows, args.batch * args.fields)[0]) for _ in range(args.repeat)]
    fresh = [mix64(np.arange(args.rows + i * 50_000, args.rows + (i + 1) * 50_000, dtype=np.uint64))
             for i in range(args.repeat)]
    out = {}
    for cls in (HashRowIndex, SortedRowIndex):
        index = cls()
        build_s, _ = timed(build_index, index, all_ids)
        lookups = [timed(index.lookup, batch)[0] for batch in batches]
        inserts = [timed(index.insert, new, np.arange(new.size, dtype=np.int32))[0] for new in fresh]
        assert (index.lookup(all_ids[:1000]) >= 0).all()
        out[cls.__name__] = {'build_s': build_s, 'lookup_s': statistics.median(lookups),
                             'insert_s': statistics.median(inserts), 'bytes_per_id': index.nbytes / len(index),
                             'lookup_runs': lookups, 'insert_runs': inserts,
                             'lookup_ids': int(np.median([b.size for b in batches]))}
        index = None
    return out


# ---- 2. one pull + push ---------------------------------------------------------------------------------
def numpy_step(weights, g2, batch_ranks, grads_for):
    """The baseline: the same step on dense in-process arrays indexed by rank (no ids, no hashing)."""
    uniq = np.unique(batch_ranks)
    rows = weights[uniq]
    grads = grads_for(rows.shape[0])
    g2[uniq] += grads * grads
    weights[uniq] -= LR * grads / (np.sqrt(g2[uniq]) + EPS)
    return uniq.size


def table_step(table, batch_ids, grads_for):
    uniq = np.unique(batch_ids)
    rows = table.pull(uniq)
    table.push(uniq, grads_for(rows.shape[0]))
    return uniq.size


def bench_step(args, rng):
    batches = [zipf_batch(rng, args.rows, args.batch * args.fields) for _ in range(args.repeat)]
    grad_block = rng.normal(size=(args.batch * args.fields, DIM)).astype(np.float32)

    def grads_for(n):
        return grad_block[:n].copy()

    weights = np.zeros((args.rows, DIM), np.float32)
    g2 = np.zeros((args.rows, DIM), np.float32)
    table = SparseTable('bench', DIM, optimizer=ADAGRAD)
    for ids, ranks in batches:                  # rows exist after the first pull, and the baseline's pages
        table.pull(np.unique(ids))              # are touched once: time steady state on both sides
        numpy_step(weights, g2, ranks, grads_for)
    base_t, table_t, ratios, rows = [], [], [], 0
    for ids, ranks in batches:
        a, rows = timed(numpy_step, weights, g2, ranks, grads_for)
        b, _ = timed(table_step, table, ids, grads_for)
        base_t.append(a)
        table_t.append(b)
        ratios.append(a / b)
    return {'unique_rows': rows, 'numpy_s': statistics.median(base_t), 'table_s': statistics.median(table_t),
            'numpy_runs': base_t, 'table_runs': table_t}


# ---- 2b. the same step over tcp: this process as the worker, servers in subprocesses ----------------------
class RowCluster:
    """A scheduler here, ``servers`` server subprocesses (``spawn_server``, as a Spark task starts them) and
    this process as the one worker through the kvstore API (``dist_async``): a sparse table 'bench' (dim 16,
    its own AdaGrad, ``init_table``) and one dense key, as FeedForward trains a network with an embedding."""

    def __init__(self, servers):
        self.scheduler = Scheduler(servers, 1, timeouts=Timeouts(register=60)).start()
        self.servers = [spawn_server(self.scheduler.uri, self.scheduler.secret, env=report.child_env())
                        for _ in range(servers)]
        self.kv = kvstore.create('dist_async', scheduler_uri=self.scheduler.uri, secret=self.scheduler.secret)
        self.kv.init_table('bench', RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM)),
                           {'optimizer': ADAGRAD})
        self.dense, self.dense_grad = np.zeros(DIM, np.float32), np.ones(DIM, np.float32)
        self.kv.init([0], [self.dense])
        self.kv.set_optimizer(optimizer.create('sgd', learning_rate=LR))
        self.rows = np.empty((0, DIM), np.float32)

    def step(self, batch_ids, grads_for):
        """One worker step as FeedForward takes it: distinct ids; ``pull_step`` sends the previous step's queued
        pushes with this step's pull of rows and of the dense key (one PUSHPULL per server); gradients; the
        pushes of this step are queued (``kv.push``)."""
        uniq = np.unique(batch_ids).view(np.int64)
        if self.rows.shape[0] != uniq.size:
            self.rows = np.empty((uniq.size, DIM), np.float32)
        self.kv.pull_step([0], out=[self.dense], rows={'bench': (uniq, self.rows)})
        self.kv.push([0], [self.dense_grad])
        self.kv.push('bench', RowSparse(uniq, grads_for(uniq.size), (None, DIM)))
        return uniq.size

    def close(self):
        self.kv.close()
        self.scheduler.wait(60)
        for server in self.servers:
            server.wait(60)
        self.scheduler.stop()


def bench_tcp(args, rng, servers):
    batches = [zipf_batch(rng, args.rows, args.batch * args.fields) for _ in range(args.repeat)]
    grad_block = rng.normal(size=(args.batch * args.fields, DIM)).astype(np.float32)

    def grads_for(n):
        return grad_block[:n].copy()

    weights = np.zeros((args.rows, DIM), np.float32)
    g2 = np.zeros((args.rows, DIM), np.float32)
    cluster = RowCluster(servers)
    try:
        for ids, ranks in batches:              # rows exist after the first pull, the baseline's pages are
            cluster.step(ids, grads_for)        # touched: time steady state on both sides
            numpy_step(weights, g2, ranks, grads_for)
        base_t, tcp_t, ratios, rows = [], [], [], 0
        for ids, ranks in batches:
            a, rows = timed(numpy_step, weights, g2, ranks, grads_for)
            b, _ = timed(cluster.step, ids, grads_for)
            base_t.append(a)
            tcp_t.append(b)
            ratios.append(a / b)
    finally:
        cluster.close()
    return {'servers': servers, 'unique_rows': rows, 'numpy_s': statistics.median(base_t),
            'tcp_s': statistics.median(tcp_t), 'numpy_runs': base_t, 'tcp_runs': tcp_t}


# ---- 3. memory, save and load ----------------------------------------------------------------------------
def bench_memory(args):
    warm = SparseTable('warm', DIM, optimizer=ADAGRAD)          # imports and compiled kernels stay out
    warm.push(np.arange(8), warm.pull(np.arange(8)))
    before = rss_bytes()
    table = SparseTable('bench', DIM, optimizer=ADAGRAD)
    step = 1_000_000
    for lo in range(0, args.rows, step):
        table.pull(mix64(np.arange(lo, min(lo + step, args.rows), dtype=np.uint64)))
    grown = rss_bytes() - before
    stats = table.stats()
    raw = args.rows * DIM * 4 * 2
    goal = 1.3 * raw + 16 * args.rows
    directory = tempfile.mkdtemp(prefix='bench-sparse-')
    try:
        save_s, described = timed(sparse_checkpoint.save_table, directory, table, 0, 0)
        manifest = add_table_generation({}, [described])
        table = None
        load_s, loaded = timed(sparse_checkpoint.load_table, directory, manifest, 'bench', 0, 1)
        assert loaded.stats()['rows'] == args.rows
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {'rows': args.rows, 'bytes': stats['bytes'], 'rss': grown, 'raw': raw, 'goal': goal,
            'save_s': save_s, 'load_s': load_s}


SECTIONS = ("sparse", "sparse_tcp")


def ratio_of_medians(r, ours):
    """numpy's median / ours (rows/s of ours over numpy's), the figure the bold ratio shows, and the range of the
    per-round ratios (each round timed both back to back)."""
    rounds = [a / b for a, b in zip(r['numpy_runs'], r[ours + '_runs'])]
    return r['numpy_s'] / r[ours + '_s'], min(rounds), max(rounds)


def render(run):
    """The section (``sparse`` or ``sparse_tcp``) of a run record (pure function of it)."""
    data, args = run["data"], argparse.Namespace(**run["data"]["options"])
    if run["section"] == "sparse":
        return report_text(data["index"], data["step"], data["memory"], args, run)
    return report_tcp(data["tcp"], args, run)


def load_line(run):
    return (f"One-minute load of the machine: {run['load']['start'][0]:.1f} at the start of the run, "
            f"{run['load']['end'][0]:.1f} at its end ({run['machine']['cores']} cores, shared with other jobs)")


def report_text(index, step, memory, args, run):
    mib = 1 << 20
    h, s = index['HashRowIndex'], index['SortedRowIndex']
    lines = [
        "## Sparse tables", "",
        (f"`{run['command']}` — one process, no "
        "sockets (the same step over tcp is the next section)."), "",
        (f"**Id index**, {args.rows:,} ids; lookup of one batch's {h['lookup_ids']:,} distinct ids, "
        "insert of 50,000 new ids:"), "",
        "| index | build (s) | lookup (ms) | insert (ms) | bytes / id |", "|---|---|---|---|---|"]
    for name, r in (('numba open addressing (chosen)', h), ('numpy sorted + searchsorted', s)):
        lines.append(f"| {name} | {r['build_s']:.2f} | {r['lookup_s'] * 1e3:.1f} | {r['insert_s'] * 1e3:.1f} "
                     f"| {r['bytes_per_id']:.1f} |")
    lines += ["", (f"Lookup: open addressing {s['lookup_s'] / h['lookup_s']:.1f}x faster; insert "
              f"{s['insert_s'] / h['insert_s']:.1f}x faster."), "",
              (f"**Pull + push of one batch** ({args.batch} samples x {args.fields} fields, Zipf ids over "
              f"{args.rows:,}, dim {DIM}, AdaGrad; {step['unique_rows']:,} distinct rows), table vs numpy "
              "on dense in-process arrays (unique, gather, AdaGrad scatter):"), "",
              "| | time (ms) | rows/s |", "|---|---|---|",
              f"| numpy baseline | {step['numpy_s'] * 1e3:.1f} | {step['unique_rows'] / step['numpy_s']:,.0f} |",
              (f"| SparseTable.pull + push | {step['table_s'] * 1e3:.1f} | "
              f"{step['unique_rows'] / step['table_s']:,.0f} |"), "",
              ("Ratio table / numpy (rows/s, of the medians above): **%.2f** (per-round ratios %.2f–%.2f over %d "
               "rounds)." % (*ratio_of_medians(step, 'table'), len(step['table_runs']))), "",]
    lines += ["", ("The numpy baseline gathers from and scatters into dense arrays of every possible id "
                   f"({args.rows:,} x {DIM} weights + AdaGrad state), the layout a single process without a hash "
                   "index needs; it pays cache misses over that whole array, while a table holds only the rows "
                   "the batches named."), "",
              f"**Memory and checkpoints**, {memory['rows']:,} rows of dim {DIM} with AdaGrad:", "",
              "| | MiB | bytes / row |", "|---|---|---|",
              f"| raw rows + state | {memory['raw'] / mib:,.0f} | {memory['raw'] / memory['rows']:.0f} |",
              f"| goal (1.3 x raw + 16 / id) | {memory['goal'] / mib:,.0f} | {memory['goal'] / memory['rows']:.0f} |",
              (f"| table arrays (stats()['bytes']) | {memory['bytes'] / mib:,.0f} | "
              f"{memory['bytes'] / memory['rows']:.0f} |"),
              f"| process RSS growth | {memory['rss'] / mib:,.0f} | {memory['rss'] / memory['rows']:.0f} |", "",
              f"Save: {memory['save_s']:.1f} s; load (re-routing every id): {memory['load_s']:.1f} s.", "",
              (load_line(run) + ": absolute times are noisy, the ratios less so (each round times both "
               "contenders back to back).")]
    return "\n".join(lines)


def report_tcp(tcp, args, run):
    lines = [
        "## Sparse tables over tcp", "",
        (f"`{run['command']}` — this process as the one worker through the kvstore API "
         f"(`dist_async`, `init_table` with the table's own AdaGrad, one dense key beside it): each step takes the "
         f"batch's distinct ids and calls `kv.pull_step`, which sends the previous step's queued pushes (dense and "
         f"rows) with this step's pull of rows and of the dense key, one PUSHPULL per server, then queues this "
         f"step's pushes (`kv.push`) — the path FeedForward takes. Servers in their own processes "
         f"(`spawn_server`). Baseline in the same run, each round timed back to back: numpy on dense in-process "
         f"arrays of every possible id (unique, gather, AdaGrad scatter). {args.batch} samples x {args.fields} "
         f"fields, Zipf ids over {args.rows:,}, dim {DIM}; goal: ratio >= 0.5. Ratio: numpy's median / the "
         f"kvstore's median; in brackets the range of the per-round ratios."), "",
        "| servers | distinct rows | numpy (ms) | kvstore over tcp (ms) | rows/s over tcp | ratio |",
        "|---|---|---|---|---|---|"]
    for t in tcp:
        lines.append(f"| {t['servers']} | {t['unique_rows']:,} | {t['numpy_s'] * 1e3:.1f} | {t['tcp_s'] * 1e3:.1f} "
                     "| {:,.0f} | **{:.2f}** ({:.2f}–{:.2f}) |".format(t['unique_rows'] / t['tcp_s'],
                                                                    *ratio_of_medians(t, 'tcp')))
    lines += ["", load_line(run) + "."]
    return "\n".join(lines)


def figures(index, step, memory, tcp):
    """The run's figures for ``--json`` (the in-process parts are None with ``--tcp-only``)."""
    out = {}
    for name, r in (index or {}).items():
        out.update({f"index {name} build": report.lower(r['build_s'], "s"),
                    f"index {name} lookup": report.lower(r['lookup_s'] * 1e3, "ms"),
                    f"index {name} insert": report.lower(r['insert_s'] * 1e3, "ms"),
                    f"index {name} bytes/id": report.lower(r['bytes_per_id'], "B")})
    if step:
        out.update({"step numpy": report.lower(step['numpy_s'] * 1e3, "ms"),
                    "step SparseTable": report.lower(step['table_s'] * 1e3, "ms"),
                    "step ratio table/numpy": report.higher(ratio_of_medians(step, 'table')[0], "x")})
    if memory:
        out.update({"memory table bytes/row": report.lower(memory['bytes'] / memory['rows'], "B"),
                    "memory RSS growth/row": report.lower(memory['rss'] / memory['rows'], "B"),
                    "checkpoint save": report.lower(memory['save_s'], "s"),
                    "checkpoint load": report.lower(memory['load_s'], "s")})
    for t in tcp:
        out.update({f"tcp {t['servers']} server(s) numpy": report.lower(t['numpy_s'] * 1e3, "ms"),
                    f"tcp {t['servers']} server(s) kvstore": report.lower(t['tcp_s'] * 1e3, "ms"),
                    f"tcp {t['servers']} server(s) ratio": report.higher(ratio_of_medians(t, 'tcp')[0], "x")})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument('--rows', type=int, default=10_000_000)
    parser.add_argument('--batch', type=int, default=4096)
    parser.add_argument('--fields', type=int, default=26)
    parser.add_argument('--repeat', type=int, default=15)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--tcp-only', action='store_true', help="only the kvstore-over-tcp step (section sparse_tcp)")
    args = report.add_output_args(parser).parse_args()
    rng = np.random.default_rng(args.seed)
    index = step = memory = None
    run = report.Run("bench_sparse")
    if not args.tcp_only:
        memory = bench_memory(args)
        index = bench_index(args, rng)
        step = bench_step(args, rng)
        data = {"options": report.options(args), "index": index, "step": step, "memory": memory}
        print(run.publish(args, 'sparse', data, render))
        run = report.Run("bench_sparse")          # the tcp section's own run: its load at start is now
    tcp = [bench_tcp(args, rng, servers) for servers in (1, 2)]
    print(run.publish(args, 'sparse_tcp', {"options": report.options(args), "tcp": tcp}, render))
    report.save_json(args, 'bench_sparse', figures(index, step, memory, tcp))


if __name__ == '__main__':
    main()

"""The sizing model (sparkps.plan) against what this machine's servers and workers report.

1. Bytes per row: a :class:`SparseTable` (dim 16, AdaGrad) filled with ``--rows`` rows, pulled in batches of
   65,536 new ids as training creates them; ``stats()['bytes'] / rows`` vs ``plan.model.table_bytes``, and the
   process's RSS growth vs ``plan.model.first_table_rss`` (the arrays and a first table's fixed code and heap).
2. Distinct ids per batch: ``--repeat`` batches of ``batch x fields`` draws from a truncated Zipf(s) law over
   ``--rows`` ids (inverse CDF, ``plan.zipf.sample_ranks``); their mean distinct count vs
   ``plan.zipf.expected_distinct``.
3. Bytes per step: an in-process cluster (scheduler, KVServers on threads, DistKVStore workers) over tcp on
   127.0.0.1, ``dist_sync``, one sparse table (dim 16, AdaGrad) and one dense key of ``DENSE`` elements; every
   worker takes ``--steps`` steps as FeedForward does (``kv.pull_step`` carries the previous step's pushes, then
   ``kv.push``). Every frame a node encodes is counted (:class:`WireMeter` wraps ``sparkps.comm.message.encode``):
   the step PUSHPULLs each worker sends and the replies, per step, vs ``plan.model.traffic``; the servers'
   ``served`` counters must show exactly one PUSHPULL per worker per server per step.

Ids are Zipf ranks spread by the splitmix64 mix (feature ids are hashes), from a numpy Generator seeded by
``--seed``. Goal: every model figure within 15 % of the measured one.

    python -m benchmarks.bench_scale [--quick] [--rows 1000000,10000000] [--workers 2,4,8] [--servers 1,2,4]
                                     [--write-docs] [--json PATH]

``--write-docs`` rewrites the measured section of docs/scale.md (between ``<!-- bench:scale -->`` markers).
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

from benchmarks import report
from sparkps import optimizer
from sparkps.comm import message as wire
from sparkps.plan import constants as C
from sparkps.plan import model
from sparkps.plan.zipf import expected_distinct, probabilities, sample_ranks
from sparkps.rows.ids import mix64
from sparkps.rows.table import SparseTable
from sparkps.rows.values import RowSparse

DIM, DENSE, ZIPF = 16, 4096, 1.1
ADAGRAD = {'name': 'adagrad', 'params': {'learning_rate': 0.05}}
DOC = os.path.join(report.ROOT, 'docs', 'scale.md')
GOAL = 0.15


class WireMeter:
    """Counts the bytes of every message encoded in this process while active: ``{(cmd, reply, sender):
    [messages, bytes, header bytes]}`` (bytes: every frame, the header frame with its MAC included)."""

    def __init__(self):
        self.counts, self._lock, self._original = {}, threading.Lock(), None

    def _encode(self, msg, key):
        frames = self._original(msg, key)
        size = sum(len(f) if isinstance(f, bytes) else memoryview(f).nbytes for f in frames)
        with self._lock:
            entry = self.counts.setdefault((msg.cmd, msg.reply, msg.sender), [0, 0, 0])
            entry[0] += 1
            entry[1] += size
            entry[2] += len(frames[0])
        return frames

    def __enter__(self):
        self._original, wire.encode = wire.encode, self._encode
        return self

    def __exit__(self, *exc):
        wire.encode = self._original

    def total(self, cmd, reply, senders=None):
        """``(messages, bytes)`` of ``cmd`` requests (``reply`` False) or replies, from ``senders`` (default all)."""
        found = self._found(cmd, reply, senders)
        return sum(v[0] for v in found), sum(v[1] for v in found)

    def headers(self, cmd, reply, senders=None):
        """Bytes of the header frames alone (MAC + msgpack) of those messages."""
        return sum(v[2] for v in self._found(cmd, reply, senders))

    def _found(self, cmd, reply, senders):
        return [v for (c, r, s), v in self.counts.items() if c == cmd and r == reply and (senders is None
                                                                                          or s in senders)]


def zipf_ids(rng, cdf, size):
    """``size`` ids: truncated-Zipf ranks over ``cdf.size`` ids, spread by the 64-bit mix."""
    return mix64(sample_ranks(rng, cdf.size, ZIPF, size, cdf).astype(np.uint64))


def off(model_value, measured):
    """Relative difference of the model from the measurement."""
    return (model_value - measured) / measured if measured else float('nan')


# ---- 1. bytes per row ------------------------------------------------------------------------------------------
def rss_bytes():
    """This process's resident memory (Linux)."""
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def bench_memory(rows, opt='adagrad'):
    """Bytes per row of a table of ``rows`` rows, built in a fresh process (so the RSS growth is the table's, not
    what earlier runs left in the allocator's free lists), after the id index's compiled code is loaded."""
    code = ("import json; from benchmarks.bench_scale import measure_memory; "
            f"print(json.dumps(measure_memory({int(rows)}, {opt!r})))")

    def run(**env):
        out = subprocess.run([sys.executable, '-c', code], env=dict(report.child_env(), **env), cwd=report.ROOT,
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    result = run()
    fixed = run(MALLOC_MMAP_THRESHOLD_='131072')['rss']   # freed large arrays go back to the system at once
    return dict(result, rss_fixed=fixed, off_rss_fixed=off(result['model_rss'], fixed))


def measure_memory(rows, opt):
    """:func:`bench_memory` in this process."""
    from sparkps.rows.index import warm
    warm()
    before = rss_bytes()
    table = SparseTable('t', dim=DIM, optimizer={'name': opt, 'params': {'learning_rate': 0.05}})
    step = 1 << 16
    for lo in range(0, rows, step):
        table.pull(mix64(np.arange(lo, min(lo + step, rows), dtype=np.uint64)))
    rss = (rss_bytes() - before) / rows
    measured = table.stats()['bytes'] / rows
    predicted = model.table_bytes(rows, DIM, opt, arrival=step)['total'] / rows
    predicted_rss = model.first_table_rss(rows, DIM, opt, arrival=step) / rows
    return {'rows': rows, 'optimizer': opt, 'measured': measured, 'rss': rss, 'model': predicted,
            'model_rss': predicted_rss, 'off': off(predicted, measured), 'off_rss': off(predicted_rss, rss)}


# ---- 2. distinct ids per batch ---------------------------------------------------------------------------------
def bench_distinct(rng, cdf, draws, repeat):
    counts = [np.unique(sample_ranks(rng, cdf.size, ZIPF, draws, cdf)).size for _ in range(repeat)]
    measured = float(np.mean(counts))
    predicted = expected_distinct(draws, cdf.size, ZIPF)
    return {'rows': cdf.size, 'draws': draws, 'measured': measured, 'model': predicted,
            'off': off(predicted, measured)}


# ---- 3. bytes per step -----------------------------------------------------------------------------------------
def worker_steps(kv, batches):
    """FeedForward's sparse step on ``kv`` for every batch of ids; returns the distinct counts."""
    kv.init_table('t', RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM)),
                  {'optimizer': ADAGRAD})
    dense, grad = np.zeros(DENSE, np.float32), np.full(DENSE, 0.01, np.float32)
    kv.init([0], [dense])
    kv.set_optimizer(optimizer.create('sgd', learning_rate=0.05))
    sizes = []
    for ids in batches:
        uniq, counts = np.unique(ids, return_counts=True)
        uniq = uniq.view(np.int64)
        rows = np.empty((uniq.size, DIM), np.float32)
        kv.pull_step([0], out=[dense], rows={'t': (uniq, rows, counts)})   # a training pull counts its ids
        kv.push([0], [grad])
        kv.push('t', RowSparse(uniq, np.full((uniq.size, DIM), 0.01, np.float32), (None, DIM)))
        sizes.append(uniq.size)
    return sizes


def bench_step(rng, cdf, workers, servers, batch, fields, steps):
    from tests.cluster import PSCluster  # the test suite's in-process cluster (tcp on 127.0.0.1)
    batches = [[zipf_ids(rng, cdf, batch * fields) for _ in range(steps)] for _ in range(workers)]
    with WireMeter() as meter, PSCluster(servers, workers, kvtype='dist_sync', transport='tcp') as cluster:
        cluster.start_workers()
        ids = {kv.rank: kv.postoffice.node_id for kv in cluster.kvstores}
        sizes = cluster.run_workers(lambda kv: worker_steps(kv, batches[kv.rank]), timeout=600)
        served = [dict(server.served) for server in cluster.servers.values()]
    # the first step pulls alone (nothing queued yet): steps 2.. are the PUSHPULLs that carry a whole step
    measured_steps = workers * (steps - 1)
    per_request = [served_by.get(('PUSHPULL', node), 0) for served_by in served for node in ids.values()]
    requests, out_bytes = meter.total('PUSHPULL', False, set(ids.values()))
    _, in_bytes = meter.total('PUSHPULL', True)
    unique = float(np.mean([n for s in sizes for n in s[1:]]))
    w = model.Workload(workers, servers, cdf.size, dim=DIM, batch=batch, fields=fields, zipf=ZIPF, dense=DENSE)
    predicted = model.traffic(w, expected_distinct(batch * fields, cdf.size, ZIPF))
    return {'rows': cdf.size, 'workers': workers, 'servers': servers, 'unique': unique,
            'one_per_server': set(per_request) == {steps - 1} and requests == measured_steps * servers,
            'out': out_bytes / measured_steps, 'in': in_bytes / measured_steps,
            'model_out': predicted['worker_out'], 'model_in': predicted['worker_in'],
            'server_in': out_bytes / (steps - 1) / servers, 'model_server_in': predicted['server_in'],
            'off_out': off(predicted['worker_out'], out_bytes / measured_steps),
            'off_in': off(predicted['worker_in'], in_bytes / measured_steps)}


# ---- the report ------------------------------------------------------------------------------------------------
def pct(x):
    return f"{x:+.1%}"


SECTIONS = ("scale",)


def render(run):
    """The section of a run record (pure function of it)."""
    data = run["data"]
    return markdown(data["results"], argparse.Namespace(**data["options"]), data["constants"], run)


def markdown(results, args, constants, run):
    goal = constants["goal"]
    lines = [f"`{run['command']}` — goal: the model within "
             f"{goal:.0%} of the measurement.", "",
             "**Bytes per sparse row** (dim 16, rows created by pulls of 65,536 new ids, each table built in a fresh "
             "process): the table's arrays as `SparseTable.stats()['bytes'] / rows` reports them, and the process's "
             "RSS growth over the build, with glibc's default allocator and with `MALLOC_MMAP_THRESHOLD_=131072` "
             "(freed large arrays go back to the system at once). By default glibc raises its mmap threshold to "
             "32 MiB after the first large free, so the index's earlier generations (freed at each re-hash) and the "
             "batches' temporaries stay in the heap (the difference between the two RSS columns). "
             "The model of the table's bytes is `plan.model.table_bytes`; the model of the RSS "
             "(`plan.model.first_table_rss`) adds the fixed "
             f"{constants['first_table_bytes'] / 2**20:.2f} MiB a process's first table costs beside its arrays "
             "(the library code its numpy paths touch first and the allocator's heap). The goal "
             "applies to the table's bytes and to the RSS with the fixed threshold:", "",
             "| rows | optimizer | stats() bytes | model | off stats() | RSS growth | RSS, fixed threshold | model RSS "
             "| off RSS | off RSS fixed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['rows']:,} | {r['optimizer']} | {r['measured']:.1f} | {r['model']:.1f} | {pct(r['off'])} | "
              f"{r['rss']:.1f} | {r['rss_fixed']:.1f} | {r['model_rss']:.1f} | {pct(r['off_rss'])} | "
              f"{pct(r['off_rss_fixed'])} |" for r in results['memory']]
    lines += ["", f"**Distinct ids per batch** (mean of {args.repeat} batches, Zipf({constants['zipf']}) over the "
              "rows):", "",
              "| ids | draws | measured | model | model off by |", "|---|---|---|---|---|"]
    lines += [f"| {r['rows']:,} | {r['draws']:,} | {r['measured']:,.1f} | {r['model']:,.1f} | {pct(r['off'])} |"
              for r in results['distinct']]
    lines += ["", f"**Bytes per step** (tcp on 127.0.0.1, dist_sync, batch {args.batch} x {args.fields} fields, "
              f"dense {constants['dense']} elements, {args.steps - 1} measured steps per worker; every frame counted; "
              "\"one per server\": each server's `served` counter shows one PUSHPULL per worker per step):", "",
              "| ids | workers | servers | distinct / batch | worker out (B) | model | off | worker in (B) | model "
              "| off | server in (B) | model | one per server |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['rows']:,} | {r['workers']} | {r['servers']} | {r['unique']:,.0f} | {r['out']:,.0f} | "
              f"{r['model_out']:,.0f} | {pct(r['off_out'])} | {r['in']:,.0f} | {r['model_in']:,.0f} | "
              f"{pct(r['off_in'])} | {r['server_in']:,.0f} | {r['model_server_in']:,.0f} | "
              f"{'yes' if r['one_per_server'] else '**no**'} |" for r in results['step']]
    worst = max(abs(x) for x in all_offs(results))
    lines += ["", f"Largest difference: **{worst:.1%}** (goal {goal:.0%}). One-minute load: "
              f"{run['load']['start'][0]:.1f} at the start of the run, {run['load']['end'][0]:.1f} at its end "
              f"({run['machine']['cores']} cores, shared)."]
    return "\n".join(lines)


def all_offs(results):
    yield from (r['off'] for r in results['memory'] + results['distinct'])
    yield from (r['off_rss_fixed'] for r in results['memory'])
    for r in results['step']:
        yield r['off_out']
        yield r['off_in']


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument('--rows', default='1000000,10000000', help="table sizes (ids), comma-separated")
    parser.add_argument('--workers', default='2,4,8')
    parser.add_argument('--servers', default='1,2,4')
    parser.add_argument('--batch', type=int, default=512)
    parser.add_argument('--fields', type=int, default=26)
    parser.add_argument('--steps', type=int, default=3, help="steps per worker (the first is not measured)")
    parser.add_argument('--repeat', type=int, default=20, help="batches for the distinct-id mean")
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--quick', action='store_true', help="a smoke test: 100,000 ids, 2 workers, 1-2 servers")
    report.add_output_args(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.workers, args.servers, args.batch, args.repeat = '100000', '2', '1,2', 256, 5
    args.rows = [int(float(x)) for x in args.rows.split(',')]
    args.workers = [int(x) for x in args.workers.split(',')]
    args.servers = [int(x) for x in args.servers.split(',')]
    return args


def main(argv=None):
    args = parse(argv)
    run = report.Run("bench_scale", argv)
    rng = np.random.default_rng(args.seed)
    results = {'memory': [], 'distinct': [], 'step': []}
    started = time.perf_counter()
    for rows in args.rows:
        results['memory'].append(bench_memory(rows))
        print("memory", results['memory'][-1], flush=True)
        cdf = np.cumsum(probabilities(rows, ZIPF))
        for batch in sorted({args.batch, 4096}):
            results['distinct'].append(bench_distinct(rng, cdf, batch * args.fields, args.repeat))
            print("distinct", results['distinct'][-1], flush=True)
        for workers in args.workers:
            for servers in args.servers:
                results['step'].append(bench_step(rng, cdf, workers, servers, args.batch, args.fields, args.steps))
                print("step", results['step'][-1], flush=True)
        del cdf
    results['memory'].append(bench_memory(args.rows[0], 'sgd'))
    data = {"options": report.options(args), "results": results,
            "constants": {"goal": GOAL, "first_table_bytes": C.FIRST_TABLE_BYTES, "zipf": ZIPF, "dense": DENSE}}
    print(run.publish(args, 'scale', data, render, doc=DOC))
    print(f"({time.perf_counter() - started:.0f} s)")
    figures = {f"off_{i}": report.lower(abs(x), "fraction") for i, x in enumerate(all_offs(results))}
    report.save_json(args, 'bench_scale', figures)
    return 0 if all(abs(x) <= GOAL for x in all_offs(results)) else 1


if __name__ == '__main__':
    raise SystemExit(main())

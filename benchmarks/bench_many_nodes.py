"""Many nodes on one machine: 16 workers and 8 servers as processes on 127.0.0.1 through ``sparkps launch``.

A sparse model (``Embedding(sparse_grad=True)`` over ``FIELDS`` id columns, a FullyConnected and a softmax) trains
one epoch on a synthetic CSV, under ``dist_sync`` and ``dist_async``, every role a process (oversubscribed on a
2-core machine). Each role is counted from the inside without changing it: the children find a
``sitecustomize.py`` written into a temporary folder put first on their ``PYTHONPATH``; it wraps
``KVServer.handle`` (requests served, by command and sender), ``KVWorker.step`` (steps, and the PUSHPULLs each
sends) and the scheduler's ``_handle`` (heartbeats, barriers, by time), and writes the counts when the process
exits. The run checks that it finished, that every worker sent exactly one PUSHPULL per server per step (every
server's ``served`` count of each worker equals that worker's steps; under dist_async a server with nothing to
carry may be skipped), and reports the scheduler's heartbeat and barrier load next to the model's
(:func:`sparkps.plan.model.scheduler_load`).

    python -m benchmarks.bench_many_nodes [--workers 16] [--servers 8] [--quick] [--write-docs] [--json PATH]

``--write-docs`` rewrites the ``bench:many_nodes`` section of docs/scale.md. Spark ``local-cluster`` is not
part of this run.
"""
import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks import report
from sparkps.plan import model

DOC = os.path.join(report.ROOT, 'docs', 'scale.md')
FIELDS, VOCAB, DIM, BATCH = 4, 50_000, 8, 32
TIMEOUTS = ['--register-timeout', '240', '--request-timeout', '240', '--heartbeat-interval', '1',
            '--heartbeat-timeout', '120']

PROBE = r'''
import atexit, collections, json, os, threading, time
_role, _dir = os.environ.get("SPARKPS_ROLE"), os.environ.get("SPARKPS_PROBE_DIR")
_counts, _times, _lock = collections.Counter(), {}, threading.Lock()

def _count(key, n=1):
    with _lock:
        _counts[key] += n
        first, _ = _times.get(key[0], (time.time(), 0))
        _times[key[0]] = (first, time.time())

def _dump():
    path = os.path.join(_dir, "%s-%d.json" % (_role, os.getpid()))
    with open(path, "w") as f:
        json.dump({"role": _role, "counts": [[list(k), v] for k, v in _counts.items()], "times": _times,
                   "node": _node[0]}, f)

_node = [None]
if _dir and _role in ("server", "worker", "scheduler"):
    atexit.register(_dump)
    if _role == "server":
        from sparkps.server.kvserver import KVServer
        _handle = KVServer.handle
        def handle(self, msg, responder):
            _node[0] = self.postoffice.node_id
            _count(("served", msg.cmd, msg.sender))
            return _handle(self, msg, responder)
        KVServer.handle = handle
    elif _role == "worker":
        from sparkps.worker.kvworker import KVWorker
        _step = KVWorker.step
        def step(self, *args, **kwargs):
            rid = _step(self, *args, **kwargs)
            _node[0] = self.postoffice.node_id
            _count(("steps",))
            _count(("step_requests",), len(self._requests[rid].parts))
            tables = args[3] if len(args) > 3 else kwargs.get("tables", {})
            _count(("row_steps",), int(any(tables.values())))
            return rid
        KVWorker.step = step
    else:
        from sparkps.scheduler.node import Scheduler
        _shandle = Scheduler._handle
        def shandle(self, msg, responder):
            _count(("received", msg.cmd))
            return _shandle(self, msg, responder)
        Scheduler._handle = shandle
'''


def write_job(folder, workers, steps, seed=0):
    """A CSV of ``workers x steps x BATCH`` rows (label, FIELDS ids) and the sparse network's JSON."""
    import sparkps.symbol as sym
    rng = np.random.default_rng(seed)
    n = workers * steps * BATCH
    ids = (rng.zipf(1.2, (n, FIELDS)) - 1) % VOCAB
    np.savetxt(os.path.join(folder, 'data.csv'), np.column_stack([ids[:, 0] % 2, ids]), fmt='%d', delimiter=',')
    embed = sym.Embedding(sym.Variable('data'), input_dim=VOCAB, output_dim=DIM, sparse_grad=True, name='embed')
    net = sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(embed), num_hidden=2, name='fc'), name='softmax')
    net.save(os.path.join(folder, 'net.json'))


def launch(folder, probe_dir, servers, workers, kvstore, limit):
    """``sparkps launch`` of the job in ``folder``; returns (exit code, seconds, last lines of its output)."""
    env = dict(report.child_env(), SPARKPS_PROBE_DIR=probe_dir, OMP_NUM_THREADS='1')
    env['PYTHONPATH'] = os.pathsep.join([probe_dir, env['PYTHONPATH']])
    cmd = [sys.executable, '-m', 'sparkps.cli', 'launch', '-s', str(servers), '-w', str(workers), '--kvstore',
           kvstore, *TIMEOUTS, '--', 'train', '--symbol', 'net.json', '--data', 'data.csv', '--format', 'csv',
           '--batch-size', str(BATCH), '--epochs', '1', '--optimizer', 'adagrad', '--lr', '0.1', '--seed', '1']
    started = time.perf_counter()
    process = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)       # the launcher stops every role, then exits
        output, _ = process.communicate(timeout=120)
    return process.returncode, time.perf_counter() - started, output.strip().splitlines()[-3:]


def read_probes(probe_dir):
    """The counts every role wrote: {role: [record, ...]}."""
    found = {}
    for path in sorted(glob.glob(os.path.join(probe_dir, '*.json'))):
        with open(path, encoding='utf-8') as f:
            record = json.load(f)
        record['counts'] = {tuple(k): v for k, v in record['counts']}
        found.setdefault(record['role'], []).append(record)
    return found


def summarise(probes, servers, workers, kvstore):
    """Steps, the one-request-per-server check and the scheduler's load, from the roles' counts."""
    steps = {w['node']: w['counts'].get(('steps',), 0) for w in probes.get('worker', [])}
    row_steps = sum(w['counts'].get(('row_steps',), 0) for w in probes.get('worker', []))
    sent = {w['node']: w['counts'].get(('step_requests',), 0) for w in probes.get('worker', [])}
    served = [{node: s['counts'].get(('served', 'PUSHPULL', node), 0) for node in steps}
              for s in probes.get('server', [])]
    exact = all(by_server[node] == steps[node] for by_server in served for node in steps)
    at_most = all(by_server[node] <= steps[node] for by_server in served for node in steps)
    one_each = all(sent[node] == servers * steps[node] for node in steps)
    scheduler = probes.get('scheduler', [{}])[0]
    counts, times = scheduler.get('counts', {}), scheduler.get('times', {})
    beats = counts.get(('received', 'HEARTBEAT'), 0)
    first, last = times.get('received', (0, 0))
    barriers = counts.get(('received', 'BARRIER'), 0)
    w = model.Workload(workers, servers, 1)
    total_steps = max(sum(steps.values()), 1)
    return {'kvstore': kvstore, 'workers_seen': len(steps), 'servers_seen': len(served),
            'steps': sorted(set(steps.values())), 'requests_per_step': sum(sent.values()) / total_steps,
            'row_steps': row_steps / total_steps, 'served_equals_steps': exact, 'served_at_most_steps': at_most,
            'one_per_server': one_each, 'heartbeats': beats, 'seconds': last - first,
            'heartbeats_per_s': beats / max(last - first, 1e-9),
            'model_heartbeats_per_s': model.scheduler_load(w)['heartbeats_per_s'],
            'barriers': barriers / workers, 'model_barriers': model.scheduler_load(w)['barriers_per_job']}


def markdown(rows, args):
    lines = [f"`{report.command('bench_many_nodes', report.argv_options())}` — {args.workers} workers and "
             f"{args.servers} servers as processes through `sparkps launch` (2 cores), a sparse model "
             f"(Embedding {VOCAB:,} x {DIM}, sparse_grad, {FIELDS} id fields, AdaGrad), batch {BATCH}, one epoch "
             f"of {args.steps} steps per worker; counts taken inside each role.", "",
             "| kvstore | exit | wall (s) | workers / servers counted | steps per worker | steps with rows | "
             "PUSHPULLs per step | "
             "served = steps on every server | heartbeats/s (model) | barriers per worker (model) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kvstore']} | {r['exit']} | {r['wall']:.0f} | {r['workers_seen']} / {r['servers_seen']} "
                     f"| {r['steps']} | {r['row_steps']:.0%} | {r['requests_per_step']:.2f} | "
                     f"{'yes' if r['served_equals_steps'] else ('at most' if r['served_at_most_steps'] else 'no')} "
                     f"| {r['heartbeats_per_s']:.1f} ({r['model_heartbeats_per_s']:.0f}) | {r['barriers']:.1f} "
                     f"({r['model_barriers']}) |")
    lines += ["", "Heartbeats/s: HEARTBEAT messages the scheduler received over the span between its first and last "
              "message (start-up and shut-down included, when fewer nodes are up); barriers: BARRIER requests / "
              f"workers. Load average at the end: {os.getloadavg()[0]:.1f}."]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument('--workers', type=int, default=16)
    parser.add_argument('--servers', type=int, default=8)
    parser.add_argument('--steps', type=int, default=6, help="steps per worker (one epoch)")
    parser.add_argument('--kvstores', default='dist_sync,dist_async')
    parser.add_argument('--limit', type=float, default=900, help="seconds a launch may take")
    parser.add_argument('--quick', action='store_true', help="4 workers, 2 servers, 3 steps, dist_sync only")
    report.add_output_args(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.workers, args.servers, args.steps, args.kvstores = 4, 2, 3, 'dist_sync'
    rows = []
    with tempfile.TemporaryDirectory(prefix='bench-many-nodes-') as folder:
        write_job(folder, args.workers, args.steps)
        for kvstore in args.kvstores.split(','):
            probe_dir = os.path.join(folder, 'probe-' + kvstore)
            os.makedirs(probe_dir)
            with open(os.path.join(probe_dir, 'sitecustomize.py'), 'w', encoding='utf-8') as f:
                f.write(PROBE)
            code, wall, tail = launch(folder, probe_dir, args.servers, args.workers, kvstore, args.limit)
            row = dict(summarise(read_probes(probe_dir), args.servers, args.workers, kvstore), exit=code, wall=wall)
            print(row, *tail, sep="\n", flush=True)
            rows.append(row)
    text = markdown(rows, args)
    print(text)
    if args.write_docs:
        report.write_section('many_nodes', text, doc=DOC)
    report.save_json(args, 'bench_many_nodes', {f"{r['kvstore']}_wall": report.lower(r['wall'], 's') for r in rows})
    ok = all(r['exit'] == 0 and r['one_per_server'] and r['served_at_most_steps'] for r in rows)
    return 0 if ok else 1


if __name__ == '__main__':
    raise SystemExit(main())

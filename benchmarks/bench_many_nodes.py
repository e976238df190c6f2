"""Many nodes on one machine: 16 workers and 8 servers on 127.0.0.1, through ``sparkps launch``'s cluster or Spark.

A sparse model (``Embedding(sparse_grad=True)`` over ``FIELDS`` id columns, a FullyConnected and a softmax) trains
one epoch on synthetic ids, under ``dist_sync`` and ``dist_async``, every role a process (oversubscribed on a
2-core machine). Two ways to start the roles:

* ``--via launch`` (the default): the local launcher's cluster (:class:`sparkps.runtime.launcher.LocalCluster`,
  what ``sparkps launch`` runs) of server and worker processes training on a CSV, with the scheduler in this
  process, so its final STATUS is read once every worker finished;
* ``--via spark``: :class:`sparkps.spark.SparkTrainer` on a Spark ``--master`` (default
  ``local-cluster[4,4,1024]``: 4 executor JVMs of 4 cores, 16 barrier task slots), the workers barrier tasks
  and the servers processes the first tasks start; the driver's scheduler STATUS is polled through
  ``SparkTrainer.status()`` and the last one, taken after every worker finished, is kept.

Every count comes from the scheduler's STATUS (``requests``: what each server served, by command and worker;
each worker's steps and step requests; the messages the scheduler received). The run checks that it finished
and that every worker sent exactly one request per server per step: every server's count of PUSHPULLs from each
worker equals that worker's steps (under dist_async a server with nothing to carry may be skipped: at most),
and each worker's step requests are servers x steps; it reports the scheduler's heartbeat and barrier load next
to the model's (:func:`sparkps.plan.model.scheduler_load`).

    python -m benchmarks.bench_many_nodes [--via launch|spark] [--master M] [--workers 16] [--servers 8]
                                          [--steps 6] [--kvstores dist_sync,dist_async] [--quick]
                                          [--write-docs] [--json PATH]

``--write-docs`` rewrites the ``bench:many_nodes`` (launch) or ``bench:many_nodes_spark`` (spark) section of
docs/scale.md.
"""
import argparse
import io
import os
import sys
import tempfile
import threading
import time

import numpy as np

from benchmarks import report
from sparkps.plan import model

DOC = os.path.join(report.ROOT, 'docs', 'scale.md')
FIELDS, VOCAB, DIM, BATCH = 4, 50_000, 8, 32
TIMEOUTS = dict(register=240.0, request=240.0, heartbeat_interval=1.0, heartbeat_timeout=120.0)
MASTER = 'local-cluster[4,4,1024]'


def job_data(workers, steps, seed=0):
    """``workers x steps x BATCH`` rows of FIELDS Zipf(1.2) ids below VOCAB and a label: (ids int64, labels)."""
    rng = np.random.default_rng(seed)
    ids = (rng.zipf(1.2, (workers * steps * BATCH, FIELDS)) - 1) % VOCAB
    return ids, ids[:, 0] % 2


def network():
    """The sparse model: Embedding(VOCAB x DIM, sparse_grad) of the FIELDS ids, a FullyConnected, a softmax."""
    import sparkps.symbol as sym
    embed = sym.Embedding(sym.Variable('data'), input_dim=VOCAB, output_dim=DIM, sparse_grad=True, name='embed')
    return sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(embed), num_hidden=2, name='fc'), name='softmax')


def run_launch(folder, ids, labels, servers, workers, kvstore, limit):
    """The launcher's cluster on a CSV of the rows; returns (exit code, seconds, the final STATUS, last output lines).

    Blocks until the job ends or ``limit`` seconds passed (then every role is stopped)."""
    from sparkps.comm.timeouts import Timeouts
    from sparkps.runtime.launcher import LocalCluster
    from sparkps.scheduler import Scheduler

    class Cluster(LocalCluster):
        """The launcher's cluster with its scheduler in this process, so its STATUS outlives the job."""
        scheduler = None

        def _start_scheduler(self, secret, workdir):
            self.scheduler = Scheduler(self.num_servers, self.num_workers, secret=secret,
                                       timeouts=self.timeouts).start()
            return self.scheduler.uri

    data, net = os.path.join(folder, 'data.csv'), os.path.join(folder, 'net.json')
    np.savetxt(data, np.column_stack([labels, ids]), fmt='%d', delimiter=',')
    network().save(net)
    train = ['train', '--symbol', net, '--data', data, '--format', 'csv', '--batch-size', str(BATCH), '--epochs',
             '1', '--optimizer', 'adagrad', '--lr', '0.1', '--seed', '1']
    out = io.StringIO()
    cluster = Cluster(servers, workers, train, kvstore=kvstore, timeouts=Timeouts(**TIMEOUTS), out=out,
                      env=dict(report.child_env(), OMP_NUM_THREADS='1'))
    result = []
    started = time.perf_counter()
    runner = threading.Thread(target=lambda: result.append(cluster.run()), daemon=True)
    runner.start()
    runner.join(limit)
    if runner.is_alive():
        cluster.stop()
        runner.join(120)
    wall = time.perf_counter() - started
    status = None
    if cluster.scheduler is not None:
        status = cluster.scheduler.status()
        cluster.scheduler.stop()
    return (result[0] if result else 124), wall, status, out.getvalue().strip().splitlines()[-3:]


def spark_session(master):
    """A SparkSession on ``master`` whose executors import sparkps from this checkout (loopback only)."""
    import pyspark
    os.environ.update(SPARK_LOCAL_IP='127.0.0.1', PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                      OMP_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1')
    os.environ.setdefault('SPARK_HOME', os.path.dirname(os.path.abspath(pyspark.__file__)))
    from pyspark.sql import SparkSession
    session = (SparkSession.builder.master(master).appName('bench-many-nodes')
               .config('spark.ui.enabled', 'false').config('spark.ui.showConsoleProgress', 'false')
               .config('spark.executorEnv.PYTHONPATH', report.ROOT)
               .config('spark.executorEnv.OMP_NUM_THREADS', '1').config('spark.driver.memory', '1g')
               .getOrCreate())
    session.sparkContext.setLogLevel('ERROR')
    return session


def run_spark(session, ids, labels, servers, workers, kvstore, limit):
    """SparkTrainer's fit on an RDD of the rows (one partition per worker) while a driver thread polls its
    STATUS; returns (exit code 0 or 1, seconds, the last STATUS taken, the error's line or nothing)."""
    from sparkps.spark import SparkTrainer
    trainer = SparkTrainer(network(), (FIELDS,), batch_size=BATCH, num_epoch=1, num_workers=workers,
                           num_servers=servers, kvstore=kvstore, optimizer='adagrad',
                           optimizer_params={'learning_rate': 0.1}, progress=False, timeout=limit,
                           timeouts=TIMEOUTS, seed=1)
    rows = [(row.astype(np.float32), float(label)) for row, label in zip(ids, labels)]
    rdd = session.sparkContext.parallelize(rows, workers)
    seen, done = [], threading.Event()

    def poll():
        while not done.wait(0.05):
            status = trainer.status()
            if status:
                seen[:] = [status]

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    started, code, tail = time.perf_counter(), 0, []
    try:
        trainer.fit(rdd)
    except Exception as exc:    # reported in the row: the run goes on with the next kvstore
        code, tail = 1, [str(exc).splitlines()[0][:300]]
    finally:
        done.set()
        poller.join(5)
    return code, time.perf_counter() - started, (seen[0] if seen else None), tail


def worker_rank(name):
    """The rank of a sender named 'worker 3' (None for any other sender)."""
    role, _, rank = name.partition(' ')
    return int(rank) if role == 'worker' else None


def summarise(status, servers, workers, kvstore):
    """Steps, the one-request-per-server check and the scheduler's load, from the scheduler's final STATUS."""
    requests = (status or {}).get('requests') or {}
    counted = requests.get('workers') or {}
    steps = {int(r): c.get('steps', 0) for r, c in counted.items()}
    sent = {int(r): c.get('step_requests', 0) for r, c in counted.items()}
    served, row_steps = {}, 0
    for rank, c in (requests.get('servers') or {}).items():
        by_worker = {worker_rank(n): v for n, v in (c.get('served') or {}).get('PUSHPULL', {}).items()}
        served[int(rank)] = {w: by_worker.get(w, 0) for w in steps}
        row_steps += sum(v for n, v in (c.get('row_steps') or {}).items() if worker_rank(n) is not None)
    ratios = [by[w] / steps[w] for by in served.values() for w in steps if steps[w]]
    received = (requests.get('scheduler') or {}).get('received') or {}
    span = ((requests.get('scheduler') or {}).get('spans_s') or {}).get('HEARTBEAT') or 0.0
    load = model.scheduler_load(model.Workload(workers, servers, 1))
    total_steps = max(sum(steps.values()), 1)
    return {'kvstore': kvstore, 'state': (status or {}).get('state'), 'workers_seen': len(steps),
            'servers_seen': len(served), 'steps': sorted(set(steps.values())),
            'requests_per_step': sum(sent.values()) / total_steps,
            'per_server_step_worker': (min(ratios), max(ratios)) if ratios else (0.0, 0.0),
            'row_steps': row_steps / max(sum(sum(by.values()) for by in served.values()), 1),
            'served_equals_steps': bool(served) and all(by[w] == steps[w] for by in served.values() for w in steps),
            'served_at_most_steps': bool(served) and all(by[w] <= steps[w] for by in served.values() for w in steps),
            'one_per_server': bool(steps) and all(sent[w] == servers * steps[w] for w in steps),
            'heartbeats': received.get('HEARTBEAT', 0), 'seconds': span,
            'heartbeats_per_s': received.get('HEARTBEAT', 0) / max(span, 1e-9),
            'model_heartbeats_per_s': load['heartbeats_per_s'],
            'barriers': received.get('BARRIER', 0) / workers, 'model_barriers': load['barriers_per_job']}


SECTIONS = ("many_nodes", "many_nodes_spark")


def render(run):
    """The section of a run record (pure function of it)."""
    data = run["data"]
    return markdown(data["rows"], argparse.Namespace(**data["options"]), data["model"], run)


def markdown(rows, args, model, run):
    how = (f"through Spark `{args.master}` (SparkTrainer: workers are barrier tasks, servers processes the first "
           "tasks start)" if args.via == 'spark' else "as processes through the launcher's cluster (`sparkps launch`)")
    lines = [f"`{run['command']}` — {args.workers} workers and "
             f"{args.servers} servers {how} on {run['machine']['cores']} cores, a sparse model "
             f"(Embedding {model['vocab']:,} x {model['dim']}, sparse_grad, {model['fields']} id fields, AdaGrad), "
             f"batch {model['batch']}, one epoch "
             f"of {args.steps} steps per worker; every count from the scheduler's STATUS.", "",
             "| kvstore | finished | wall (s) | workers / servers counted | steps per worker | steps with rows | "
             "step requests per step | PUSHPULLs per server per step per worker | "
             "served = steps on every server | heartbeats/s (model) | barriers per worker (model) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        low, high = r['per_server_step_worker']
        per = f"{low:.2f}" if low == high else f"{low:.2f}-{high:.2f}"
        lines.append(f"| {r['kvstore']} | {'yes' if r['exit'] == 0 and r['state'] == 'finished' else 'no'} "
                     f"| {r['wall']:.0f} | {r['workers_seen']} / {r['servers_seen']} "
                     f"| {r['steps']} | {r['row_steps']:.0%} | {r['requests_per_step']:.2f} | {per} | "
                     f"{'yes' if r['served_equals_steps'] else ('at most' if r['served_at_most_steps'] else 'no')} "
                     f"| {r['heartbeats_per_s']:.1f} ({r['model_heartbeats_per_s']:.0f}) | {r['barriers']:.1f} "
                     f"({r['model_barriers']}) |")
    lines += ["", "Heartbeats/s: HEARTBEAT messages the scheduler received over the span between the first and the "
              "last of them (start-up and shut-down included, when fewer nodes are up); barriers: BARRIER requests / "
              f"workers; both from the scheduler's STATUS (`requests.scheduler`). One-minute load: "
              f"{run['load']['start'][0]:.1f} at the start of the run, {run['load']['end'][0]:.1f} at its end."]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument('--via', choices=('launch', 'spark'), default='launch',
                        help="start the roles with the launcher's cluster or through Spark (SparkTrainer)")
    parser.add_argument('--master', default=MASTER, help="the Spark master of --via spark (default %(default)s)")
    parser.add_argument('--workers', type=int, default=16)
    parser.add_argument('--servers', type=int, default=8)
    parser.add_argument('--steps', type=int, default=6, help="steps per worker (one epoch)")
    parser.add_argument('--kvstores', default='dist_sync,dist_async')
    parser.add_argument('--limit', type=float, default=900, help="seconds a job may take")
    parser.add_argument('--quick', action='store_true', help="4 workers, 2 servers, 3 steps, dist_sync only")
    report.add_output_args(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.workers, args.servers, args.steps, args.kvstores = 4, 2, 3, 'dist_sync'
    run = report.Run("bench_many_nodes", argv)
    ids, labels = job_data(args.workers, args.steps)
    rows = []
    session = spark_session(args.master) if args.via == 'spark' else None
    try:
        with tempfile.TemporaryDirectory(prefix='bench-many-nodes-') as folder:
            for kvstore in args.kvstores.split(','):
                if session is not None:
                    code, wall, status, tail = run_spark(session, ids, labels, args.servers, args.workers, kvstore,
                                                         args.limit)
                else:
                    code, wall, status, tail = run_launch(folder, ids, labels, args.servers, args.workers, kvstore,
                                                          args.limit)
                row = dict(summarise(status, args.servers, args.workers, kvstore), exit=code, wall=wall)
                print(row, *tail, sep="\n", flush=True)
                rows.append(row)
    finally:
        if session is not None:
            session.stop()
    data = {"options": report.options(args), "rows": rows,
            "model": {"vocab": VOCAB, "dim": DIM, "fields": FIELDS, "batch": BATCH}}
    print(run.publish(args, 'many_nodes' if args.via == 'launch' else 'many_nodes_spark', data, render, doc=DOC))
    report.save_json(args, 'bench_many_nodes', {f"{r['kvstore']}_wall": report.lower(r['wall'], 's') for r in rows})
    ok = all(r['exit'] == 0 and r['state'] == 'finished' and r['one_per_server'] and r['served_at_most_steps']
             for r in rows)
    return 0 if ok else 1


if __name__ == '__main__':
    raise SystemExit(main())

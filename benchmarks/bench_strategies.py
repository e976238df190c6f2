"""Distributed strategies on the digits MLP with one worker slowed 2x, and the bytes a step pushes per codec.

Every peer runs in its own process over tcp://127.0.0.1: the scheduler here, each server a subprocess
(``spawn_server``, as a Spark task starts it), each worker a spawned process training ``FeedForward`` on
its shard of scikit-learn's digits (MLP 64-64-10, batch 32, SGD momentum 0.5). The last rank is the slow
worker: after every step it sleeps as long as the step took, so it runs at half speed.

1. Time to a target test accuracy for ``dist_sync`` (the baseline), ``dist_async``, ``dist_sync_replicas``
   (N = M - 1), ``dist_model_average`` (interval_steps=4) and ``dist_easgd`` (communication_period=4), with
   2 and 4 workers: rank 0 scores its current weights on the test set at every epoch end (for the two local
   strategies these are its local weights; their final model, the average or the center, is scored too).
2. Bytes per step with none / fp16 / 2bit (dist_sync, 2 workers), and the final accuracy of each.
3. The generated CTR data (``--ctr-rows``, 0 to skip; benchmarks/strategies_ctr.py): time to a target test AUC
   for the zoo's FM over sparse tables (dist_sync, dist_async, dist_sync_replicas) and the same FM over dense
   bucketed embeddings (all five strategies), 2 and 4 workers, the last one slowed 2x.
4. Resume after a failure (section "resume", also alone with ``--resume-only``):
   - the cost of a checkpoint: ``kv.save_checkpoint`` of the digits MLP (with its momentum), of a 1M-parameter
     dense layer, and of a sparse table of ``--rows`` rows (dim 16, AdaGrad state), each on 1 and 2 server
     subprocesses, against ``np.savez`` of the same arrays in this process (the baseline: the bytes alone);
   - the cost of a restart: ``SparkTrainer.fit`` on Spark ``local[2]`` (digits MLP, 2 workers, 1 server,
     checkpoints every 10 steps) whose server process, or one worker's Python process, is SIGKILLed at step 35
     (the fault hook, which notes the time of the kill): time from the kill to the failure being handled, from
     there to the first progress of the restarted stage, and in all; the baseline is the same fit's start
     without a failure (from ``fit()`` to the first batch).

    python -m benchmarks.bench_strategies [--workers 2,4] [--epochs 10] [--target 0.93] [--write-docs]
        [--strategies-only] [--ctr-rows 50000] [--ctr-epochs 4] [--ctr-target 0.85] [--json PATH]
    python -m benchmarks.bench_strategies --resume-only [--rows 200000] [--repeat 5] [--write-docs]
"""
import argparse
import multiprocessing
import os
import sys
import time

import numpy as np

from benchmarks import report
from sparkps.comm.timeouts import Timeouts
from sparkps.runtime.server_node import spawn_server
from sparkps.scheduler import Scheduler

STRATEGIES = [("dist_sync", {}), ("dist_async", {}), ("dist_sync_replicas", "M-1"),
              ("dist_model_average", {"interval_steps": 4}), ("dist_easgd", {"communication_period": 4})]
CODECS = [("none", None), ("fp16", {"type": "fp16"}), ("2bit", {"type": "2bit", "threshold": 0.5})]


def digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X / 16.0, y, test_size=0.25, random_state=0)
    return X_train.astype(np.float32), X_test.astype(np.float32), y_train, y_test


def accuracy(params, X, y):
    """Test accuracy of the MLP's weights (numpy forward pass: fc1, relu, fc2, argmax)."""
    hidden = np.maximum(X @ params["fc1_weight"].T + params["fc1_bias"], 0)
    return float(np.mean((hidden @ params["fc2_weight"].T + params["fc2_bias"]).argmax(axis=1) == y))


def worker_main(job, results):
    """One worker process: train on shard ``rank`` and put what rank 0 saw on ``results``."""
    import sparkps as sp
    from sparkps import kvstore
    kv = kvstore.create(job["kvtype"], scheduler_uri=job["uri"], secret=job["secret"],
                        compression=job["compression"], **job["options"])
    X_train, X_test, y_train, y_test = digits()
    rank, workers = kv.rank, kv.num_workers
    slow = rank == workers - 1
    X, y = X_train[rank::workers], y_train[rank::workers]
    sym = sp.sym
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=64, name="fc1")
    net = sym.FullyConnected(sym.Activation(net, act_type="relu"), num_hidden=10, name="fc2")
    model = sp.FeedForward(sym.SoftmaxOutput(net, name="softmax"), num_epoch=job["epochs"], optimizer="sgd",
                           learning_rate=job["lr"], momentum=0.5, numpy_batch_size=32,
                           initializer=sp.initializer.Xavier(), seed=0)
    start, last, curve = time.perf_counter(), [None], []

    def slow_down(_):
        now = time.perf_counter()
        if slow and last[0] is not None:    # the first step is not slowed: the time before it includes init
            time.sleep(now - last[0])
        last[0] = time.perf_counter()

    def score(epoch, _symbol, arg_params, _aux):
        curve.append((time.perf_counter() - start, accuracy(arg_params, X_test, y_test)))

    model.fit(X, y, kvstore=kv, batch_end_callback=slow_down, epoch_end_callback=score if rank == 0 else None)
    elapsed = time.perf_counter() - start
    final = accuracy(model.arg_params, X_test, y_test)
    results.put({"rank": rank, "curve": curve, "final": final, "seconds": elapsed,
                 "bytes_per_step": kv.bytes_per_step})
    kv.close()


def run_job(kvtype, options, workers, epochs, compression=None, lr=0.1):
    """Train the digits MLP once with a fresh scheduler, one server subprocess and ``workers`` worker processes."""
    return run_cluster(worker_main, {"kvtype": kvtype, "options": options, "compression": compression,
                                     "epochs": epochs, "lr": lr}, workers)


def run_cluster(main, job, workers):
    """A fresh scheduler here, one server subprocess and ``workers`` processes running ``main(job, results)``;
    returns what they put on ``results``, by rank."""
    scheduler = Scheduler(1, workers, timeouts=Timeouts(register=60, request=120, barrier=120)).start()
    server = spawn_server(scheduler.uri, scheduler.secret, env=report.child_env())
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    job = dict(job, uri=scheduler.uri, secret=scheduler.secret)
    procs = [ctx.Process(target=main, args=(job, results)) for _ in range(workers)]
    try:
        for p in procs:
            p.start()
        out = sorted((results.get(timeout=600) for _ in procs), key=lambda r: r["rank"])
        for p in procs:
            p.join(60)
        scheduler.wait(60)
        server.wait(60)
        return out
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        if server.poll() is None:
            server.kill()
        scheduler.stop()


def time_to(curve, target):
    return next((t for t, acc in curve if acc >= target), None)


def bench_strategies(worker_counts, epochs, target):
    rows = []
    for workers in worker_counts:
        for kvtype, options in STRATEGIES:
            options = {"replicas_to_aggregate": workers - 1} if options == "M-1" else options
            lr = 0.05 if kvtype == "dist_async" else 0.1  # async steps at full size per worker
            out = run_job(kvtype, options, workers, epochs, lr=lr)
            first = out[0]
            rows.append({"workers": workers, "kvtype": kvtype, "options": options,
                         "time_to_target": time_to(first["curve"], target), "seconds": first["seconds"],
                         "rank0_acc": first["curve"][-1][1], "final": first["final"]})
            print(rows[-1], flush=True)
    return rows


def bench_codecs(epochs):
    rows = []
    for name, compression in CODECS:
        out = run_job("dist_sync", {}, 2, epochs, compression=compression)
        rows.append({"codec": name, "bytes_per_step": out[0]["bytes_per_step"], "final": out[0]["final"],
                     "seconds": out[0]["seconds"]})
        print(rows[-1], flush=True)
    return rows


SECTIONS = ("strategies", "resume")


def render(run):
    """The section (``strategies`` or ``resume``) of a run record (pure function of it)."""
    data, args = run["data"], argparse.Namespace(**run["data"]["options"])
    if run["section"] == "resume":
        return report_resume(data["checkpoint_rows"], data["restart_rows"], args, run)
    return report_text(data["strategy_rows"], data["codec_rows"], args, data["ctr_rows"], data["planted"], run)


def load_text(run):
    return "%.1f at the start of the run, %.1f at its end (%d cores, shared with other jobs)" % (
        run["load"]["start"][0], run["load"]["end"][0], run["machine"]["cores"])


def report_text(strategy_rows, codec_rows, args, ctr_rows, planted, run):
    fmt = lambda v: "not reached" if v is None else "%.1f s" % v  # noqa: E731
    lines = ["## Distributed strategies (one worker slowed 2x)", "",
             "`%s`" % run["command"], "",
             "Digits MLP 64-64-10, batch 32 per worker, SGD momentum 0.5, %d epochs, 1 server; the last rank "
             "sleeps as long as each of its steps took. *Time to %.0f %%*: rank 0's test accuracy at its epoch "
             "ends (its local weights for the local strategies); *final*: the model fit returns (the average, "
             "or the center)." % (args.epochs, 100 * args.target), "",
             "| workers | strategy | options | time to %.0f %% | fit time (rank 0) | final accuracy |"
             % (100 * args.target), "|---|---|---|---|---|---|"]
    for r in strategy_rows:
        opts = ", ".join("%s=%s" % kv for kv in r["options"].items()) or "-"
        lines.append("| %d | %s | %s | %s | %.1f s | %.3f |" % (r["workers"], r["kvtype"], opts,
                                                              fmt(r["time_to_target"]), r["seconds"], r["final"]))
    base = next(r for r in codec_rows if r["codec"] == "none")["bytes_per_step"]
    lines += ["", "Bytes a worker pushes per step (dist_sync, 2 workers, 4810 parameters):", "",
              "| codec | bytes per step | vs none | final accuracy |", "|---|---|---|---|"]
    for r in codec_rows:
        lines.append("| %s | %d | %.3f | %.3f |" % (r["codec"], r["bytes_per_step"], r["bytes_per_step"] / base,
                                                    r["final"]))
    if ctr_rows:
        from benchmarks.strategies_ctr import report_ctr
        lines += report_ctr(ctr_rows, args, planted)
    lines += ["", "One-minute load of the machine: %s. The cost of a checkpoint and of a restart: section \"Resume "
              "after a failure\" (`--resume-only`)." % load_text(run)]
    return "\n".join(lines)


def _cluster(servers, workers=1):
    """A scheduler here and ``servers`` server subprocesses; returns (scheduler, server children)."""
    scheduler = Scheduler(servers, workers, timeouts=Timeouts(register=60, request=300, barrier=300)).start()
    return scheduler, [spawn_server(scheduler.uri, scheduler.secret, env=report.child_env()) for _ in range(servers)]


def _dense_model(kv, shapes):
    """Dense keys of ``shapes`` with SGD momentum, one step pushed so the momentum state exists; returns the
    arrays a checkpoint holds (weights and momentum)."""
    from sparkps.optimizer import SGD
    rng = np.random.default_rng(0)
    values = [rng.normal(0, 0.1, shape).astype(np.float32) for shape in shapes]
    keys = list(range(len(shapes)))
    kv.init(keys, values)
    kv.set_optimizer(SGD(learning_rate=0.1, momentum=0.9, rescale_grad=1.0))
    kv.pushpull(keys, [np.ones_like(v) for v in values], out=values)
    return values + [np.ones_like(v) for v in values]


def _sparse_table(kv, rows, dim=16):
    """Table ``emb`` with ``rows`` rows (AdaGrad: one state array), every row pulled and pushed once; returns
    the arrays a checkpoint holds (ids, rows, state)."""
    from sparkps.optimizer import AdaGrad
    from sparkps.rows.values import RowSparse
    kv.init("emb", RowSparse(np.empty(0, np.int64), np.empty((0, dim), np.float32), (None, dim)))
    kv.set_optimizer(AdaGrad(learning_rate=0.1, rescale_grad=1.0))
    ids = np.random.default_rng(1).integers(0, 2 ** 62, rows).astype(np.int64)
    out = np.empty((0, dim), np.float32)
    for chunk in np.array_split(ids, max(1, rows // 50_000)):
        out = np.empty((len(chunk), dim), np.float32)
        kv.row_sparse_pull("emb", out=out, row_ids=chunk)
        kv.push("emb", RowSparse(chunk, np.ones((len(chunk), dim), np.float32), (None, dim)))
    kv.barrier()
    return [ids, np.zeros((rows, dim), np.float32), np.zeros((rows, dim), np.float32)]


def bench_checkpoints(rows, repeat):
    """Seconds per ``save_checkpoint`` (median of ``repeat``) against ``np.savez`` of the same arrays."""
    import shutil
    import tempfile

    from sparkps import kvstore
    cases = [("digits MLP 64-64-10 (4,810 weights)", lambda kv: _dense_model(kv, [(64, 64), (64,), (10, 64), (10,)])),
             ("dense 1000x1000 (1M weights)", lambda kv: _dense_model(kv, [(1000, 1000)])),
             ("sparse table, %d rows x 16, AdaGrad" % rows, lambda kv: _sparse_table(kv, rows))]
    out = []
    for name, setup in cases:
        for servers in (1, 2):
            folder = tempfile.mkdtemp(prefix="sparkps-bench-ckpt-")
            scheduler, children = _cluster(servers)
            try:
                kv = kvstore.create("dist_async", scheduler_uri=scheduler.uri, secret=scheduler.secret)
                arrays = setup(kv)
                times, base = [], []
                for i in range(repeat):
                    started = time.perf_counter()
                    kv.save_checkpoint(os.path.join(folder, "c%d" % i), resume={"epoch": 0, "nbatch": i, "step": i})
                    times.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    np.savez(os.path.join(folder, "base%d.npz" % i), *arrays)
                    base.append(time.perf_counter() - started)
                kv.close()
                scheduler.wait(60)
                for child in children:
                    child.wait(60)
            finally:
                for child in children:
                    if child.poll() is None:
                        child.kill()
                scheduler.stop()
                shutil.rmtree(folder, ignore_errors=True)
            mb = sum(a.nbytes for a in arrays) / 2 ** 20
            out.append({"case": name, "servers": servers, "mb": mb, "seconds": float(np.median(times)),
                        "baseline": float(np.median(base))})
            print(out[-1], flush=True)
    return out


def _spark():
    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (SparkSession.builder.master("local[2]").appName("bench-resume").config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false").getOrCreate())


def bench_restarts(epochs):
    """Kill a server process, then a worker's Python process, at step 35 of a SparkTrainer fit."""
    import shutil
    import tempfile

    from sparkps.nets.mlp import mlp_symbol
    from sparkps.spark import SparkTrainer
    spark = _spark()
    spark.sparkContext.setLogLevel("FATAL")
    X_train, X_test, y_train, y_test = digits()
    rdd = spark.sparkContext.parallelize(list(zip(X_train, y_train.astype(np.float32))), 2).cache()
    rdd.count()
    timeouts = {"heartbeat_interval": 0.5, "heartbeat_timeout": 3.0, "request": 30.0}
    rows = []
    try:
        for kill, rank in (("none", 0), ("server", 0), ("worker", 1)):
            folder = tempfile.mkdtemp(prefix="sparkps-bench-restart-")
            trainer = SparkTrainer(mlp_symbol([64, 64, 10]), (64,), batch_size=32, num_epoch=epochs, num_workers=2,
                                   num_servers=1, optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                                   progress=False, checkpoint_dir=folder, checkpoint_steps=10, timeouts=timeouts)
            record = os.path.join(folder, "killed-at")
            if kill != "none":
                trainer.fault = {"kill": kill, "rank": rank, "at_step": 35, "record": record}
            called = time.time()
            model = trainer.fit(rdd)
            acc = float(np.mean(model.predict_numpy(X_test).argmax(axis=1) == y_test))
            row = {"kill": kill, "start": trainer.last_fit["first_batch_end"] - called, "accuracy": acc}
            if kill != "none":
                entry = trainer.last_fit["restarts"][0]
                killed = float(open(record).read().split()[0])
                held = entry["resumed_steps"].get(str(rank), 0)
                row.update(detect=entry["failed_at"] - killed, restart=entry["resumed_at"] - entry["failed_at"],
                           total=entry["resumed_at"] - killed, lost=35 - held, role=entry["role"])
            rows.append(row)
            print(row, flush=True)
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        spark.stop()
    return rows


def report_resume(checkpoint_rows, restart_rows, args, run):
    lines = ["## Resume after a failure: the cost of a checkpoint and of a restart", "",
             "`%s`" % run["command"], "",
             "Checkpoint: `kv.save_checkpoint` (every server writes its pieces, the worker writes the manifest "
             "atomically), median of %d, against `np.savez` of the same arrays in one process." % args.repeat, "",
             "| what | servers | MB | checkpoint | np.savez | ratio |", "|---|---|---|---|---|---|"]
    for r in checkpoint_rows:
        lines.append("| %s | %d | %.1f | %.3f s | %.3f s | %.1f |" % (r["case"], r["servers"], r["mb"], r["seconds"],
                                                                     r["baseline"], r["seconds"] / r["baseline"]))
    base = next(r for r in restart_rows if r["kill"] == "none")
    lines += ["", "Restart: `SparkTrainer.fit` on `local[2]`, digits MLP 64-64-10, 2 workers, 1 server, %d epochs, "
              "checkpoints every 10 steps, heartbeat timeout 3 s; SIGKILL at worker step 35. *Detect*: from the "
              "kill until the failed stage is cleaned up; *restart*: from there to the first progress of the new "
              "stage (new scheduler, server, Python workers, checkpoint load, data fast-forward; the driver polls "
              "every 0.25 s). Baseline: the same fit without a failure, from `fit()` to its first batch: "
              "%.1f s (accuracy %.3f)." % (args.resume_epochs, base["start"], base["accuracy"]), "",
              "*Steps redone*: the killed worker's 35 steps less those the checkpoint held for it.", "",
              "| killed | named | detect | restart | kill to training again | steps redone | accuracy |",
              "|---|---|---|---|---|---|---|"]
    for r in restart_rows:
        if r["kill"] != "none":
            lines.append("| %s | %s | %.1f s | %.1f s | %.1f s | %s | %.3f |" % (
                r["kill"], r["role"], r["detect"], r["restart"], r["total"], r["lost"], r["accuracy"]))
    lines += ["", "One-minute load of the machine: %s: the times are upper bounds." % load_text(run),
              "", "Not measured: the generated CTR data under restarts."]
    return "\n".join(lines)


def figures(strategy_rows=(), codec_rows=(), ctr_rows=(), checkpoint_rows=(), restart_rows=()):
    """The run's figures for ``--json`` (a time to target not reached is null)."""
    out = {}
    for r in strategy_rows:
        key = "%d workers %s" % (r["workers"], r["kvtype"])
        out.update({key + " time to target": report.lower(r["time_to_target"], "s"),
                    key + " fit": report.lower(r["seconds"], "s"), key + " final": report.higher(r["final"], "acc")})
    for r in codec_rows:
        out.update({"codec %s bytes/step" % r["codec"]: report.lower(r["bytes_per_step"], "B"),
                    "codec %s final" % r["codec"]: report.higher(r["final"], "acc")})
    for r in ctr_rows:
        key = "ctr %d workers fm (%s) %s" % (r["workers"], r["model"], r["kvtype"])
        out.update({key + " time to target": report.lower(r["time_to_target"], "s"),
                    key + " fit": report.lower(r["seconds"], "s"), key + " final": report.higher(r["final"], "auc")})
    for r in checkpoint_rows:
        key = "checkpoint %s, %d server(s)" % (r["case"], r["servers"])
        out.update({key: report.lower(r["seconds"], "s"), key + " np.savez": report.lower(r["baseline"], "s")})
    for r in restart_rows:
        if r["kill"] == "none":
            out["restart baseline start"] = report.lower(r["start"], "s")
        else:
            out["restart %s kill to training" % r["kill"]] = report.lower(r["total"], "s")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", default="2,4", help="worker counts, comma-separated")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--target", type=float, default=0.93)
    parser.add_argument("--resume-only", action="store_true", help="only the checkpoint and restart costs")
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the sparse table checkpointed")
    parser.add_argument("--repeat", type=int, default=5, help="checkpoints timed per case")
    parser.add_argument("--resume-epochs", type=int, default=3, help="epochs of the restarted fits")
    parser.add_argument("--strategies-only", action="store_true", help="skip the checkpoint and restart costs")
    parser.add_argument("--ctr-rows", type=int, default=50_000, help="generated CTR training rows (0: no CTR rows)")
    parser.add_argument("--ctr-epochs", type=int, default=4)
    parser.add_argument("--ctr-target", type=float, default=0.85, help="test AUC the CTR rows are timed to")
    args = report.add_output_args(parser).parse_args()
    run = report.Run("bench_strategies")
    checkpoint_rows = restart_rows = ()
    if not args.strategies_only:
        checkpoint_rows, restart_rows = bench_checkpoints(args.rows, args.repeat), bench_restarts(args.resume_epochs)
        data = {"options": report.options(args), "checkpoint_rows": checkpoint_rows, "restart_rows": restart_rows}
        print(run.publish(args, "resume", data, render))
        run = report.Run("bench_strategies")          # the strategies section's own run: its load at start is now
    if args.resume_only:
        report.save_json(args, "bench_strategies", figures(checkpoint_rows=checkpoint_rows, restart_rows=restart_rows))
        return
    workers = [int(w) for w in args.workers.split(",")]
    strategy_rows = bench_strategies(workers, args.epochs, args.target)
    codec_rows = bench_codecs(args.epochs)
    ctr_rows, planted = (), None
    if args.ctr_rows:
        from benchmarks.strategies_ctr import bench_ctr_strategies, ctr_data
        planted = ctr_data(args.ctr_rows)[-1]
        ctr_rows = bench_ctr_strategies(run_cluster, time_to, workers, args.ctr_rows, args.ctr_epochs, args.ctr_target)
    data = {"options": report.options(args), "strategy_rows": strategy_rows, "codec_rows": codec_rows,
            "ctr_rows": list(ctr_rows), "planted": planted}
    print(run.publish(args, "strategies", data, render))
    report.save_json(args, "bench_strategies", figures(strategy_rows, codec_rows, ctr_rows, checkpoint_rows,
                                                        restart_rows))


if __name__ == "__main__":
    main()

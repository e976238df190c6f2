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

    python benchmarks/bench_strategies.py [--workers 2,4] [--epochs 10] [--target 0.93] [--no-write]
"""
import argparse
import multiprocessing
import os
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
sys.path.insert(0, ROOT)

from benchmarks.report import write_section  # noqa: E402
from sparkps.ps.comm.timeouts import Timeouts  # noqa: E402
from sparkps.ps.scheduler import Scheduler  # noqa: E402
from sparkps.runtime.server_node import spawn_server  # noqa: E402

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
    start, last, curve = time.perf_counter(), [time.perf_counter()], []

    def slow_down(_):
        now = time.perf_counter()
        if slow:
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
    """Train once with a fresh scheduler, one server subprocess and ``workers`` worker processes."""
    scheduler = Scheduler(1, workers, timeouts=Timeouts(register=60, request=120, barrier=120)).start()
    env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT))
    server = spawn_server(scheduler.uri, scheduler.secret, env=env)
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    job = {"kvtype": kvtype, "options": options, "uri": scheduler.uri, "secret": scheduler.secret,
           "compression": compression, "epochs": epochs, "lr": lr}
    procs = [ctx.Process(target=worker_main, args=(job, results)) for _ in range(workers)]
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


def report(strategy_rows, codec_rows, args):
    fmt = lambda v: "not reached" if v is None else "%.1f s" % v  # noqa: E731
    lines = ["## Distributed strategies (one worker slowed 2x)", "",
             "`python benchmarks/bench_strategies.py %s`" % " ".join(sys.argv[1:]), "",
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
    lines += ["", "Not measured yet: the generated CTR data, and the cost of a restart and of a checkpoint "
              "(resume after a failure is not implemented)."]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", default="2,4", help="worker counts, comma-separated")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--target", type=float, default=0.93)
    parser.add_argument("--no-write", action="store_true", help="print only, do not update docs/benchmarks.md")
    args = parser.parse_args()
    strategy_rows = bench_strategies([int(w) for w in args.workers.split(",")], args.epochs, args.target)
    codec_rows = bench_codecs(args.epochs)
    text = report(strategy_rows, codec_rows, args)
    print(text)
    if not args.no_write:
        write_section("strategies", text)


if __name__ == "__main__":
    main()

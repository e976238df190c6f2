"""Where a CTR training step's time goes, without Spark: a dist_sync FM fit of 2 worker processes and 2 server
processes (the cluster a Spark fit starts: scheduler here, servers by ``spawn_server``), on the Criteo-shaped data of
benchmarks.bench_ctr (26 categorical fields, 13 numeric, Zipf ids), batch 512, one BLAS thread.

    python -m benchmarks.profile_ctr_steps [--rows 80000] [--epochs 1] [--cprofile DIR] [--write-docs] [--json PATH]

Prints per worker the steps, the milliseconds a step takes (first batch end to last), the samples/s, and the
requests a step sent (``KVWorker.counters``); with ``--cprofile DIR`` worker 0 and server 0 run under cProfile and
the functions with the most time of their own are printed (``DIR/worker0.prof``, ``DIR/server0.prof``).
``--write-docs`` writes the workers' lines as section ``profile_ctr_steps`` of docs/benchmarks.md.
"""
import argparse
import json
import multiprocessing
import os
import pstats
import sys
import time

from benchmarks import report

WORKERS, SERVERS = 2, 2


def worker_main(job, results):
    """One worker process: its rows ``rank::workers``, FeedForward over a dist_sync kvstore, step times recorded;
    puts its figures (or its error) on ``results``."""
    try:
        results.put(train_worker(job))
    except BaseException as exc:
        results.put({"rank": -1, "error": "%s: %s" % (type(exc).__name__, exc)})
        raise


def train_worker(job):
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
    import cProfile

    import sparkps.nets as nets
    from sparkps import kvstore
    from sparkps.ctr.features import LABEL
    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.numeric import NumericStats
    from sparkps.ctr.synthetic import planted_ctr
    from sparkps.io.iterators import NDArrayIter
    from sparkps.nets.blocks import ctr_initializer
    from sparkps.train.feedforward import FeedForward
    kv = kvstore.create("dist_sync", scheduler_uri=job["uri"], secret=job["secret"])
    rank, workers = kv.rank, kv.num_workers
    data = planted_ctr(job["rows"], vocab=1000, zipf=1.2, linear_scale=0.3, fm_scale=0.15, deep_scale=0.5, seed=7)
    ids = hash_fields(data.fields, [data.categorical[:, j] for j in range(len(data.fields))])
    numeric = NumericStats.fit(data.numeric, data.numeric_names, log=True).transform(data.numeric)
    spec = nets.FeatureSpec(categorical=data.fields, numeric=data.numeric_names, embedding_dim=4)
    inputs = {k: v[rank::workers] for k, v in spec.inputs(ids, numeric).items()}
    it = NDArrayIter(inputs, {LABEL: data.labels[rank::workers]}, batch_size=job["batch"], shuffle=True, seed=rank)
    model = FeedForward(nets.build("fm", spec), num_epoch=job["epochs"], optimizer="adam", learning_rate=0.02,
                        initializer=ctr_initializer(), seed=0)
    ends = []
    profile = cProfile.Profile() if job["cprofile"] and rank == 0 else None
    if profile:
        profile.enable()
    model.fit(it, kvstore=kv, eval_metric="logloss", batch_end_callback=lambda _: ends.append(time.perf_counter()))
    if profile:
        profile.disable()
        profile.dump_stats(os.path.join(job["cprofile"], "worker0.prof"))
    counters = kv.worker.counters() if hasattr(kv, "worker") else {}
    kv.close()
    steps = len(ends) - 1
    span = ends[-1] - ends[0] if steps > 0 else float("nan")
    return {"rank": rank, "steps": steps, "ms_per_step": 1000 * span / max(steps, 1),
            "samples_per_s": steps * job["batch"] / span if steps > 0 else 0.0, "counters": counters}


# ``python -m sparkps.server`` with every thread under one cProfile each (requests are served on the I/O thread),
# merged into one dump at exit
PROFILED_SERVER = """
import cProfile, pstats, sys, threading
path, argv = sys.argv[1], sys.argv[2:]
profiles, run = [], threading.Thread.run
def profiled(self):
    profile = cProfile.Profile()
    profiles.append(profile)
    profile.runcall(run, self)
threading.Thread.run = profiled
from sparkps.server.runner import main
main_profile = cProfile.Profile()
code = main_profile.runcall(main, argv)
stats = pstats.Stats(main_profile)
for profile in profiles:
    stats.add(profile)
stats.dump_stats(path)
sys.exit(code)
"""


def server_command(uri, rank, cprofile):
    """``python -m sparkps.server`` (every thread under cProfile for server 0 with ``cprofile``), as spawn_server
    builds it."""
    argv = ["--scheduler", uri, "--rank", str(rank)]
    if cprofile and rank == 0:
        return [sys.executable, "-c", PROFILED_SERVER, os.path.join(cprofile, "server0.prof")] + argv
    return [sys.executable, "-m", "sparkps.server"] + argv


def run(args):
    from sparkps.comm.timeouts import Timeouts
    from sparkps.runtime.supervisor import spawn
    from sparkps.scheduler import Scheduler
    scheduler = Scheduler(SERVERS, WORKERS, timeouts=Timeouts(register=120, request=120, barrier=300)).start()
    env = dict(report.child_env(), SPARKPS_SECRET=scheduler.secret, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    servers = [spawn("server %d" % r, server_command(scheduler.uri, r, args.cprofile), env=env) for r in range(SERVERS)]
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    job = {"uri": scheduler.uri, "secret": scheduler.secret, "rows": args.rows, "epochs": args.epochs,
           "batch": args.batch_size, "cprofile": args.cprofile}
    procs = [ctx.Process(target=worker_main, args=(job, results)) for _ in range(WORKERS)]
    try:
        for p in procs:
            p.start()
        out = [results.get(timeout=900) for _ in procs]
        failed = [r["error"] for r in out if "error" in r]
        if failed:
            raise RuntimeError("a worker failed: %s" % failed[0])
        out.sort(key=lambda r: r["rank"])
        for p in procs:
            p.join(60)
        scheduler.wait(60)
        for s in servers:
            s.wait(60)
        return out
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        for s in servers:
            if s.poll() is None:
                s.stop(5)
        scheduler.stop()


def top(path, limit):
    """The ``limit`` functions with the most time of their own in the cProfile dump at ``path`` (lines)."""
    stats = pstats.Stats(path)
    rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:limit]
    total = sum(v[2] for v in stats.stats.values())
    lines = ["%s: %.2f s in all" % (os.path.basename(path), total)]
    for (file, line, name), (_, calls, own, cumulative, _) in rows:
        lines.append("  %7.3f s own %7.3f s cum %8d calls  %s:%d %s" % (own, cumulative, calls,
                                                                       os.path.relpath(file, report.ROOT)
                                                                       if file.startswith(report.ROOT) else file,
                                                                       line, name))
    return lines


def requests_a_step(worker):
    """The requests a worker sent per step, by kind (``KVWorker.counters``), as one string."""
    steps = (worker["counters"] or {}).get("steps")
    if not steps:
        return ""
    return ", ".join("%s %.2f" % (k, v / steps) for k, v in sorted(worker["counters"].get("sent", {}).items()))


SECTIONS = ("profile_ctr_steps",)


def render(run):
    """The section of a run record (pure function of it)."""
    data = run["data"]
    return markdown(data["workers"], argparse.Namespace(**data["options"]), data["constants"], run)


def markdown(workers, args, constants, run):
    """The workers' figures as the ``profile_ctr_steps`` section of docs/benchmarks.md."""
    lines = ["## A CTR training step without Spark (benchmarks/profile_ctr_steps.py)", "",
             "dist_sync FM, %d worker and %d server processes on this machine (scheduler in the driver, servers by "
             "`spawn_server`), %d planted Criteo-shaped rows (26 categorical fields, 13 numeric), %d epoch(s), batch "
             "%d, one BLAS thread%s. A step: first to last batch end over the steps run." % (
                 constants["workers"], constants["servers"], args.rows, args.epochs, args.batch_size,
                 "; worker 0 and server 0 under cProfile" if args.cprofile else ""), "",
             "| worker | steps | ms a step | samples/s | requests a step |", "|---|---|---|---|---|"]
    for r in workers:
        lines.append("| %d | %d | %.1f | %.0f | %s |" % (r["rank"], r["steps"], r["ms_per_step"], r["samples_per_s"],
                                                        requests_a_step(r)))
    lines += ["", "One-minute load at the start / end of the run: %.1f / %.1f (%d cores, shared)." % (
                  run["load"]["start"][0], run["load"]["end"][0], run["machine"]["cores"])]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=80000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--cprofile", metavar="DIR", help="profile worker 0 and server 0 into DIR and print their top")
    p.add_argument("--top", type=int, default=25)
    report.add_output_args(p)
    args = p.parse_args(argv)
    if args.cprofile:
        os.makedirs(args.cprofile, exist_ok=True)
    record = report.Run("profile_ctr_steps", argv)
    print("load at start: %.1f %.1f %.1f" % tuple(record.load_start), flush=True)
    out = run(args)
    for r in out:
        steps = (r["counters"] or {}).get("steps")
        print("worker %d: %d steps, %.1f ms a step, %.0f samples/s%s" % (
            r["rank"], r["steps"], r["ms_per_step"], r["samples_per_s"],
            "" if not steps else ", requests a step: %s" % json.dumps(
                {k: round(v / steps, 2) for k, v in sorted(r["counters"].get("sent", {}).items())})))
    print(record.publish(args, "profile_ctr_steps", {"options": report.options(args), "constants":
                                                  {"workers": WORKERS, "servers": SERVERS}, "workers": out}, render))
    if args.cprofile:
        for name in ("worker0.prof", "server0.prof"):
            path = os.path.join(args.cprofile, name)
            if os.path.exists(path):
                print("\n".join(top(path, args.top)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What authenticating every frame costs, against the header-only MAC, measured in the same run.

1. Primitives: the MAC candidates over one 16 MiB frame and over one 200-byte header: HMAC-SHA256 streamed
   over the frames (what the wire uses), keyed BLAKE2b streamed, HMAC-SHA256 over the frames' BLAKE2b
   digests, and Poly1305 (only when the ``cryptography`` package is installed).
2. Codec: ``encode`` + ``decode`` + the replay check of a 16 MiB PUSH and of a small PULL, every frame MACed
   vs the header only.
3. Training over tcp, 1 worker (this process) + 1 server subprocess per variant, both variants alive and
   timed in interleaved rounds: the dist_sync MLP 784-128-64-10 step at batch 128 (as ``bench_ps``), a CTR
   sparse step (dist_async, a dim-16 AdaGrad table pulled and pushed for a Zipf batch, as ``bench_sparse``)
   and a 16 MiB ``kv.pushpull``.  The "header only" variant is this code with ``MacKey.sign_frames`` made to
   ignore the array frames on both sides (the MAC scope of the previous wire format); sessions, sequence
   numbers and the replay window are the same in both.

    python -m benchmarks.bench_security [--repeat 7] [--steps 20] [--write-docs] [--json PATH]
    python -m benchmarks.bench_security --serve {frames,header} SCHEDULER_URI   (a server; secret in env)
"""
import argparse
import hashlib
import hmac
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from benchmarks import report
from benchmarks.bench_ps import MIB16, interleaved, training_step
from benchmarks.bench_sparse import ADAGRAD, DIM, zipf_batch
from sparkps import kvstore, optimizer
from sparkps.comm import message as wire
from sparkps.comm.freshness import Freshness
from sparkps.comm.message import MacKey, Sequencer
from sparkps.comm.timeouts import Timeouts
from sparkps.rows.values import RowSparse
from sparkps.scheduler import Scheduler

DOC = os.path.join(report.ROOT, "docs", "security.md")
VARIANTS = ("frames", "header")


class HeaderOnlyKey(MacKey):
    """The previous MAC scope, for comparison only: the header frame, not the array frames."""

    __slots__ = ()

    def sign_frames(self, body, frames):
        return super().sign_frames(body, ())


def serve(variant, uri):
    """Run a server node (``sparkps.server``) with the MAC scope ``variant``."""
    if variant == "header":
        full = MacKey.sign_frames
        MacKey.sign_frames = lambda self, body, frames: full(self, body, ())
    from sparkps.server.runner import main as server_main
    return server_main(["--scheduler", uri])


# ---- 1. primitives ------------------------------------------------------------------------------------------
def best(fn, count, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(count):
            fn()
        times.append((time.perf_counter() - start) / count)
    return min(times)


def primitives(repeat):
    key, header = os.urandom(32), os.urandom(200)
    big = np.ones(MIB16, np.float32).view(np.uint8)
    mac = MacKey(key)
    blake = hashlib.blake2b(key=key, digest_size=32)

    def keyed_blake2b(body, frames):
        h = blake.copy()
        h.update(body)
        for f in frames:
            h.update(f)
        return h.digest()

    def hmac_of_digests(body, frames):
        digests = b"".join(hashlib.blake2b(f, digest_size=32).digest() for f in frames)
        return hmac.digest(key, body + digests, "sha256")

    candidates = {"HMAC-SHA256 streamed (used)": mac.sign_frames, "keyed BLAKE2b streamed": keyed_blake2b,
                  "HMAC-SHA256 over BLAKE2b digests": hmac_of_digests}
    try:
        from cryptography.hazmat.primitives.poly1305 import Poly1305

        def poly1305(body, frames):  # a one-time key per message, derived from the session and sequence
            p = Poly1305(hashlib.blake2b(body[:24], key=key, digest_size=32).digest())
            p.update(body)
            for f in frames:
                p.update(f)
            return p.finalize()
        candidates["Poly1305 (one-time key per message)"] = poly1305
    except ImportError:
        pass
    return {name: {"16 MiB": best(lambda f=f: f(header, [big]), 3, repeat),
                   "200 B": best(lambda f=f: f(header, []), 2000, repeat)} for name, f in candidates.items()}


# ---- 2. codec -------------------------------------------------------------------------------------------------
def codec(repeat):
    keys = {"frames": MacKey(b"k" * 32), "header": HeaderOnlyKey(b"k" * 32)}
    big, small = np.ones(MIB16, np.float32), np.ones(1, np.float32)
    out = {}
    for variant, key in keys.items():
        seq, fresh = Sequencer(), Freshness()

        def round_trip(array, key=key, seq=seq, fresh=fresh):
            msg = wire.Message("PUSH", 5, 1, False, {"keys": [0]}, [array], None, seq.session, seq.next())
            got = wire.decode(wire.encode(msg, key), key)
            assert fresh.admit(got.sender, got.session, got.seq) is None
        out[variant] = {"16 MiB": best(lambda: round_trip(big), 3, repeat),
                        "4 B": best(lambda: round_trip(small), 2000, repeat)}
    return out


# ---- 3. training over tcp -------------------------------------------------------------------------------------
class Cluster:
    """A scheduler here, one server subprocess with MAC scope ``variant``, this process as the worker."""

    def __init__(self, kvtype, variant):
        self.scheduler = Scheduler(1, 1, timeouts=Timeouts(register=60)).start()
        env = dict(report.child_env(), SPARKPS_SECRET=self.scheduler.secret)
        self.server = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_security", "--serve", variant,
                                        self.scheduler.uri], env=env)
        self.kv = kvstore.create(kvtype, scheduler_uri=self.scheduler.uri, secret=self.scheduler.secret)
        if variant == "header":
            endpoint = self.kv.postoffice._endpoint
            endpoint._key = endpoint.van._key = HeaderOnlyKey(self.scheduler.secret)

    def close(self):
        self.kv.close()
        self.scheduler.wait(60)
        self.server.wait(60)
        self.scheduler.stop()


def ctr_step(kv, rng, rows=1_000_000, batch=256, fields=20):
    """``step()`` of a CTR worker as ``bench_sparse`` takes it: pull rows + dense key, push both."""
    kv.init_table("bench", RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM)),
                  {"optimizer": ADAGRAD})
    dense, dense_grad = np.zeros(DIM, np.float32), np.ones(DIM, np.float32)
    kv.init([0], [dense])
    kv.set_optimizer(optimizer.create("sgd", learning_rate=0.05))
    batches = [np.unique(zipf_batch(rng, rows, batch * fields)[0]).view(np.int64) for _ in range(16)]
    grads = rng.normal(size=(batch * fields, DIM)).astype(np.float32)
    state = {"i": 0}

    def step():
        uniq = batches[state["i"] % len(batches)]
        state["i"] += 1
        out = np.empty((uniq.size, DIM), np.float32)
        kv.pull_step([0], out=[dense], rows={"bench": (uniq, out)})
        kv.push([0], [dense_grad])
        kv.push("bench", RowSparse(uniq, grads[:uniq.size].copy(), (None, DIM)))
    return step


def pushpull_step(kv):
    big, out = np.ones(MIB16, np.float32), np.empty(MIB16, np.float32)
    kv.init([7], [big])
    return lambda: kv.pushpull([7], [big], out=[out])


def training(repeat, steps):
    results, rng = {}, np.random.default_rng(0)
    for name, kvtype, make, count in (("dist_sync MLP step, batch 128", "dist_sync", training_step, steps),
                                      ("CTR sparse step (dist_async)", "dist_async", lambda kv: ctr_step(kv, rng),
                                       steps),
                                      ("16 MiB kv.pushpull", "dist_async", pushpull_step, max(2, steps // 8))):
        clusters = {v: Cluster(kvtype, v) for v in VARIANTS}
        try:
            results[name] = interleaved({v: (make(c.kv), count) for v, c in clusters.items()}, repeat)
        finally:
            for c in clusters.values():
                if kvtype == "dist_sync":
                    c.kv.end_training()
                c.close()
    return results


# ---- report ---------------------------------------------------------------------------------------------------
def ms(seconds):
    return "%.3f" % (seconds * 1e3)


SECTIONS = ("security",)


def render(run):
    """The section of a run record (pure function of it): every round's training times are in it."""
    data = run["data"]
    return "### What it costs\n\n" + report_text(data["prims"], data["codecs"], data["train"],
                                                 argparse.Namespace(**data["options"]), run)


def report_text(prims, codecs, train, args, run):
    lines = ["Figures: medians over %d interleaved rounds (training), best of %d (primitives, codec); "
             "`%s`. The machine was shared while this ran (one-minute load %.1f at the start, %.1f at the end): "
             "compare the two columns of one row, not rows across runs."
             % (args.repeat, args.repeat, run["command"], run["load"]["start"][0], run["load"]["end"][0]), ""]
    if prims:
        lines += ["| MAC over | 16 MiB frame ms | GB/s | 200-byte header µs |", "|---|---|---|---|"]
        for name, t in prims.items():
            lines.append("| %s | %s | %.2f | %.2f |" % (name, ms(t["16 MiB"]), (MIB16 * 4) / t["16 MiB"] / 1e9,
                                                        t["200 B"] * 1e6))
        lines.append("")
    if codecs:
        lines += ["| encode + decode + replay check | every frame MACed ms | header only ms | added ms |",
                  "|---|---|---|---|"]
        for size in ("4 B", "16 MiB"):
            a, b = codecs["frames"][size], codecs["header"][size]
            lines.append("| PUSH of %s | %s | %s | %+.3f |" % (size, ms(a), ms(b), (a - b) * 1e3))
        lines.append("")
    if train:
        lines += ["| step over tcp (1 worker + 1 server) | every frame MACed ms | header only ms | ratio |",
                  "|---|---|---|---|"]
        for name, times in train.items():
            a, b = statistics.median(times["frames"]), statistics.median(times["header"])
            ratio = statistics.median(x / y for x, y in zip(times["frames"], times["header"]))
            lines.append("| %s | %s | %s | %.3f× |" % (name, ms(a), ms(b), ratio))
    return "\n".join(lines)


def figures(prims, codecs, train):
    out = {}
    for name, t in (prims or {}).items():
        out["mac %s 16MiB" % name] = report.lower(t["16 MiB"] * 1e3, "ms")
        out["mac %s 200B" % name] = report.lower(t["200 B"] * 1e6, "us")
    for variant, t in (codecs or {}).items():
        for size, seconds in t.items():
            out["codec %s %s" % (variant, size)] = report.lower(seconds * 1e3, "ms")
    for name, times in (train or {}).items():
        for variant in VARIANTS:
            out["%s %s" % (name, variant)] = report.lower(statistics.median(times[variant]) * 1e3, "ms")
        out["%s frames/header" % name] = report.lower(
            statistics.median(x / y for x, y in zip(times["frames"], times["header"])), "x")
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        return serve(argv[1], argv[2])
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_security", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--steps", type=int, default=20, help="training steps per round (default 20)")
    parser.add_argument("--skip-training", action="store_true", help="only the primitives and the codec")
    report.add_output_args(parser)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1, as bench_ps)")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits
    threadpool_limits(args.threads)
    run = report.Run("bench_security", argv)
    prims, codecs = primitives(args.repeat), codec(args.repeat)
    train = None if args.skip_training else training(args.repeat, args.steps)
    data = {"options": report.options(args), "prims": prims, "codecs": codecs, "train": train}
    print(run.publish(args, "security", data, render, doc=DOC))
    report.save_json(args, "bench_security", figures(prims, codecs, train))
    return 0


if __name__ == "__main__":
    sys.exit(main())

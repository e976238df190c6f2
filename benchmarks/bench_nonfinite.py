"""The cost of the NaN/infinity guards: the servers' check of a pushed gradient (sparkps.optimizer.finite) and
FeedForward's check of the loss outputs once per batch, the latter as fit step time with and without it.

The check of a push is timed alone on the MLP 784-128-64-10 gradient and on a 16 MiB one; the loss check is timed
alone on a 128 x 10 softmax output and inside FeedForward.fit (batch 128, kvstore None, 1 BLAS thread), the two
variants interleaved in one process, ``--repeats`` epochs of ``--steps`` steps each; medians.

    python -m benchmarks.bench_nonfinite [--repeats 7] [--steps 40] [--write-docs] [--json PATH]
"""
# the thread count must be fixed before numpy loads its BLAS, so imports follow it
# ruff: noqa: E402
import argparse
import os

from benchmarks import report

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics
import time
import timeit

import numpy as np

MLP_SIZES = (784 * 128, 128, 128 * 64, 64, 64 * 10, 10)
SECTIONS = ("nonfinite",)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=40)
    return report.add_output_args(parser).parse_args()


def per_call(fn, number):
    """Seconds per call of each of 5 repeats of ``number`` calls."""
    return [t / number for t in timeit.repeat(fn, number=number, repeat=5)]


def fit_step_times(repeats, steps):
    """Seconds per fit step of each epoch with the loss check and with it replaced by a no-op, interleaved."""
    import sparkps as sp
    from sparkps.train import feedforward
    rng = np.random.default_rng(0)
    X = rng.random((128 * steps, 784), dtype=np.float32)
    y = rng.integers(0, 10, 128 * steps).astype(np.float32)
    sym = sp.sym
    net = sym.Activation(sym.FullyConnected(sym.Variable("data"), num_hidden=128, name="fc1"), act_type="relu")
    net = sym.Activation(sym.FullyConnected(net, num_hidden=64, name="fc2"), act_type="relu")
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=10, name="fc3"), name="softmax")
    real, times = feedforward.DivergedLoss.check, {"with": [], "without": []}
    try:
        for repeat in range(repeats):
            for name in (("with", "without") if repeat % 2 else ("without", "with")):
                feedforward.DivergedLoss.check = real if name == "with" else (lambda self, *a: None)
                model = sp.FeedForward(net, num_epoch=1, optimizer="sgd", learning_rate=0.01, numpy_batch_size=128,
                                       seed=0)
                started = time.perf_counter()
                model.fit(X, y, kvstore=None)
                times[name].append((time.perf_counter() - started) / steps)
    finally:
        feedforward.DivergedLoss.check = real
    return times


def render(run):
    """The section of a run record (pure function of it): fastest of 5 repeats for the lone checks, medians of
    the interleaved epochs for the fit step."""
    data, options = run["data"], run["data"]["options"]
    push_mlp, push_big, loss = (min(data[k]) for k in ("push_mlp_s", "push_big_s", "loss_s"))
    fit = {k: statistics.median(v) for k, v in data["fit_step_s"].items()}
    return "\n".join([
        "The guards against NaN and infinity. Fit: MLP 784-128-64-10, batch 128, kvstore None, median of %d "
        "interleaved epochs of %d steps; the lone checks: fastest of 5 repeats." % (options["repeats"],
                                                                                     options["steps"]),
        "",
        "| what | time |",
        "|---|---|",
        "| server check of a push, MLP gradient (%d floats) | %.1f us |" % (sum(MLP_SIZES), push_mlp * 1e6),
        "| server check of a push, 16 MiB | %.2f ms |" % (push_big * 1e3),
        "| loss check of one batch (128 x 10 output) | %.1f us |" % (loss * 1e6),
        "| fit step with the loss check | %.3f ms |" % (fit["with"] * 1e3),
        "| fit step without it | %.3f ms |" % (fit["without"] * 1e3),
        "",
        "Command: `%s`" % run["command"],
    ])


def main(args):
    from sparkps.optimizer.finite import first_nonfinite
    from sparkps.train.feedforward import DivergedLoss
    run = report.Run("bench_nonfinite")
    rng = np.random.default_rng(0)
    mlp = rng.random(sum(MLP_SIZES), dtype=np.float32)
    big = rng.random(4 << 20, dtype=np.float32)
    out = [rng.random((128, 10), dtype=np.float32)]
    check = DivergedLoss(["softmax_output"], None)
    data = {"options": report.options(args),
            "push_mlp_s": per_call(lambda: first_nonfinite(mlp), 2000),
            "push_big_s": per_call(lambda: first_nonfinite(big), 20),
            "loss_s": per_call(lambda: check.check(out, 0, 0), 20000),
            "fit_step_s": fit_step_times(args.repeats, args.steps)}
    fit = {k: statistics.median(v) for k, v in data["fit_step_s"].items()}
    figures = {"push check mlp": report.lower(min(data["push_mlp_s"]) * 1e6, "us"),
               "push check 16MiB": report.lower(min(data["push_big_s"]) * 1e3, "ms"),
               "loss check": report.lower(min(data["loss_s"]) * 1e6, "us"),
               "fit step with": report.lower(fit["with"] * 1e3, "ms"),
               "fit step without": report.lower(fit["without"] * 1e3, "ms")}
    print(run.publish(args, "nonfinite", data, render))
    report.save_json(args, "bench_nonfinite", figures)


if __name__ == "__main__":
    main(parse_args())

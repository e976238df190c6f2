"""Executor step time against a hand-written numpy loop doing the same math.

MLP 784-128-64-10 (relu, SoftmaxOutput), batch 128, float32. One step = forward + backward
(gradients of the six parameters), and optionally a plain SGD update in both. The two contenders
run interleaved in the same process (repeat r: numpy block, executor block), each block timing
``--steps`` steps; we report the median step time of each and ratio = numpy / executor (goal >= 0.9).

    python -m benchmarks.bench_executor [--repeats 15] [--steps 50] [--threads 1] [--write-docs] [--json PATH]
"""
# The thread count is read from the command line and set before numpy is imported (numpy's BLAS reads it when it
# loads), so the arguments are parsed first and the other imports follow (ruff E402 is off for this file).
import argparse
import os

from benchmarks import report


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads for both contenders")
    return report.add_output_args(parser).parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:  # thread counts must be fixed before numpy loads its BLAS
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import statistics
import time

import numpy as np

LAYERS = (784, 128, 64, 10)
LR = 0.01
NUM_BATCHES = 16   # steps cycle through distinct batches (6 MB in all), as training reads fresh data
SECTIONS = ("executor",)
STEPS = (("forward + backward", "fwd+bwd", False), ("forward + backward + SGD update", "fwd+bwd+sgd", True))


def make_params(rng):
    params = {}
    names = ("fc1", "fc2", "fc3")
    for name, fan_in, fan_out in zip(names, LAYERS[:-1], LAYERS[1:]):
        params[name + "_weight"] = rng.normal(0, fan_in ** -0.5, (fan_out, fan_in)).astype(np.float32)
        params[name + "_bias"] = np.zeros(fan_out, dtype=np.float32)
    return params


class NumpyMLP:
    """The same network written by hand, the way one writes it in numpy."""

    def __init__(self, params):
        self.p = {k: v.copy() for k, v in params.items()}

    def step(self, x, label, sgd):
        p = self.p
        w1, b1, w2, b2, w3, b3 = (p[k] for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
                                                  "fc3_weight", "fc3_bias"))
        h1 = x @ w1.T + b1
        a1 = np.maximum(h1, 0)
        h2 = a1 @ w2.T + b2
        a2 = np.maximum(h2, 0)
        h3 = a2 @ w3.T + b3
        e = np.exp(h3 - h3.max(axis=1, keepdims=True))
        prob = e / e.sum(axis=1, keepdims=True)
        d3 = prob.copy()
        d3[np.arange(len(label)), label.astype(np.intp)] -= 1
        grads = {"fc3_weight": d3.T @ a2, "fc3_bias": d3.sum(axis=0)}
        d2 = (d3 @ w3) * (h2 > 0)
        grads.update(fc2_weight=d2.T @ a1, fc2_bias=d2.sum(axis=0))
        d1 = (d2 @ w2) * (h1 > 0)
        grads.update(fc1_weight=d1.T @ x, fc1_bias=d1.sum(axis=0))
        if sgd:
            for name, grad in grads.items():
                p[name] -= LR * grad
        return prob, grads


def build_executor(params, batch, layers=LAYERS, ctx="cpu"):
    """The MLP ``layers`` (relu between, SoftmaxOutput head) bound on ``ctx`` with ``params``; data and label get
    no gradient."""
    import sparkps.symbol as sym
    net = sym.Variable("data")
    for i, width in enumerate(layers[1:], start=1):
        net = sym.FullyConnected(net, num_hidden=width, name="fc%d" % i)
        if i < len(layers) - 1:
            net = sym.Activation(net, act_type="relu", name="relu%d" % i)
    net = sym.SoftmaxOutput(net, name="softmax")
    reqs = {n: ("null" if n in ("data", "softmax_label") else "write") for n in net.list_arguments()}
    exe = net.simple_bind(ctx, grad_req=reqs, data=(batch, layers[0]), softmax_label=(batch,))
    exe.copy_params_from(params)
    return exe


def executor_step(exe, x, label, sgd):
    exe.forward(is_train=True, data=x, softmax_label=label)
    exe.backward()
    if sgd:
        for name, grad in exe.grad_dict.items():
            weight = exe.arg_dict[name]
            weight -= LR * grad


def check_same_math(exe, mlp, x, label):
    """Both contenders compute the same probabilities and gradients (before timing)."""
    prob, grads = mlp.step(x, label, sgd=False)
    executor_step(exe, x, label, sgd=False)
    np.testing.assert_allclose(exe.outputs[0], prob, rtol=1e-4, atol=1e-6)
    for name, grad in grads.items():
        np.testing.assert_allclose(exe.grad_dict[name], grad, rtol=1e-3, atol=1e-4)


def time_block(step, batches, steps):
    start = time.perf_counter()
    for i in range(steps):
        step(*batches[i % len(batches)])
    return (time.perf_counter() - start) / steps


def measure(args, sgd):
    rng = np.random.default_rng(0)
    params = make_params(rng)
    batches = [(rng.random((args.batch, LAYERS[0]), dtype=np.float32),
                rng.integers(0, LAYERS[-1], args.batch).astype(np.float32)) for _ in range(NUM_BATCHES)]
    mlp, exe = NumpyMLP(params), build_executor(params, args.batch)
    check_same_math(exe, mlp, *batches[0])
    numpy_step = lambda x, label: mlp.step(x, label, sgd)  # noqa: E731
    exe_step = lambda x, label: executor_step(exe, x, label, sgd)  # noqa: E731
    for batch in batches:  # warm caches and BLAS
        numpy_step(*batch), exe_step(*batch)
    numpy_times, exe_times = [], []
    for _ in range(args.repeats):
        numpy_times.append(time_block(numpy_step, batches, args.steps))
        exe_times.append(time_block(exe_step, batches, args.steps))
    return {"numpy_s": numpy_times, "executor_s": exe_times}


def summary(times):
    """(numpy ms, executor ms, ratio) of one step's repeats: medians, and the median per-repeat ratio numpy /
    executor (each repeat's two blocks ran back to back, so their ratio is immune to slow drifts in load)."""
    numpy_times, exe_times = times["numpy_s"], times["executor_s"]
    ratio = statistics.median(n / e for n, e in zip(numpy_times, exe_times))
    return statistics.median(numpy_times) * 1e3, statistics.median(exe_times) * 1e3, ratio


def render(run):
    """The section of a run record (pure function of it)."""
    data, options = run["data"], run["data"]["options"]
    rows = []
    for label, key, _sgd in STEPS:
        rows.append("| %s | %.3f | %.3f | **%.2f** |" % ((label,) + summary(data["steps"][key])))
    return "\n".join([
        "MLP 784-128-64-10, relu, SoftmaxOutput, batch %d, float32, %d BLAS thread(s). Median of %d interleaved "
        "repeats of %d steps each, cycling through %d distinct batches. Ratio = median over repeats of "
        "(numpy block time / executor block time of the same repeat), goal >= 0.9. The executor "
        "step includes copying the batch in, the NaN/inf check of the inputs and the label range check; "
        "data and label have grad_req 'null' (no input gradient), as in training."
        % (options["batch"], options["threads"], options["repeats"], options["steps"], NUM_BATCHES),
        "",
        "| step | hand-written numpy (ms) | executor (ms) | ratio |",
        "|---|---|---|---|",
        *rows,
        "",
        "Command: `%s`" % run["command"],
    ])


def main(args):
    run = report.Run("bench_executor")
    data, figures = {"options": report.options(args), "steps": {}}, {}
    for label, key, sgd in STEPS:
        data["steps"][key] = measure(args, sgd)
        numpy_ms, exe_ms, ratio = summary(data["steps"][key])
        print("%-32s numpy %.3f ms  executor %.3f ms  ratio %.2f (goal >= 0.9)" % (label, numpy_ms, exe_ms, ratio))
        figures.update({"%s numpy" % key: report.lower(numpy_ms, "ms"), "%s executor" % key: report.lower(exe_ms, "ms"),
                        "%s ratio numpy/executor" % key: report.higher(ratio, "x")})
    print(run.publish(args, "executor", data, render))
    report.save_json(args, "bench_executor", figures)


if __name__ == "__main__":
    main(ARGS)

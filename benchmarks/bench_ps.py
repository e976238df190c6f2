"""Parameter-server benchmarks, each against a baseline measured in the same run.

1. Throughput: push+pull of a 16 MB float32 array through one server over tcp loopback (one PUSHPULL
   request, and a separate push then pull) vs a raw pyzmq DEALER -> ROUTER echo of the same bytes.
2. Latency: round trip of a small pull (one float32) vs a raw pyzmq echo of a 4-byte message.
3. Training: per-step time of the MLP 784-128-64-10 (batch 128) with 1 worker + 1 server ``dist_sync``
   vs ``kvstore='local'``: forward, backward, push every gradient, pull every weight.

Everything runs in this process (server and echo peer on threads), over tcp://127.0.0.1.

    python benchmarks/bench_ps.py [--repeat 20] [--no-write]
"""
import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np
import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))

from benchmarks.report import write_section  # noqa: E402
from ps_cluster import PSCluster  # noqa: E402
from sparkps.comm.timeouts import Timeouts  # noqa: E402

MB16 = 4 * 1024 * 1024  # float32 elements in 16 MiB


class RawEcho:
    """A ROUTER on a thread that sends every message back; the baseline of a request/reply."""

    def __init__(self):
        self.context = zmq.Context()
        router = self.context.socket(zmq.ROUTER)
        router.setsockopt(zmq.LINGER, 0)
        port = router.bind_to_random_port("tcp://127.0.0.1")
        self.address = "tcp://127.0.0.1:%d" % port
        self._router = router
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self.dealer = self.context.socket(zmq.DEALER)
        self.dealer.setsockopt(zmq.LINGER, 0)
        self.dealer.connect(self.address)

    def _serve(self):
        while True:
            frames = self._router.recv_multipart(copy=False)
            if frames[-1].bytes == b"stop":
                return
            self._router.send_multipart(frames, copy=False)

    def round_trip(self, payload):
        self.dealer.send(payload, copy=False)
        return self.dealer.recv(copy=False)

    def close(self):
        self.dealer.send(b"stop")
        self._thread.join(5)
        self.dealer.close()
        self._router.close()
        self.context.term()


def timed(function, repeat, warmup=2):
    """Median and best seconds of ``repeat`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def bench_transfer(repeat):
    """16 MB through one server vs raw echo; small-message round trip vs raw echo."""
    data = np.random.default_rng(0).standard_normal(MB16).astype(np.float32)
    small = np.zeros(1, np.float32)
    echo = RawEcho()
    try:
        raw_big = timed(lambda: echo.round_trip(data), repeat)
        raw_small = timed(lambda: echo.round_trip(b"ping"), repeat * 50)
    finally:
        echo.close()
    timeouts = Timeouts(register=30, request=60, barrier=60)
    with PSCluster(1, 1, kvtype="dist_async", transport="tcp", timeouts=timeouts) as cluster:
        (kv,) = cluster.start_workers()
        out = np.zeros(MB16, np.float32)
        kv.init([0, 1], [data, small])
        ps_pushpull = timed(lambda: kv.pushpull(0, data, out=out), repeat)

        def push_then_pull():  # two round trips: the KVWorker under the kvstore, without merging
            kv.worker.wait(kv.worker.push([0], [data]))
            kv.worker.wait(kv.worker.pull([0], [out]))
        ps_push_pull = timed(push_then_pull, repeat)
        ps_small = timed(lambda: kv.pull(1, out=small), repeat * 50)
    return {"raw_big": raw_big, "pushpull": ps_pushpull, "push_pull": ps_push_pull,
            "raw_small": raw_small, "ps_small": ps_small}


def mlp_step_time(kvstore_factory, steps, batch=128):
    """Median seconds per training step of the 784-128-64-10 MLP with the kvstore from the factory."""
    import sparkps.symbol as sym
    from sparkps import optimizer
    data = sym.Variable("data")
    net = sym.FullyConnected(data, num_hidden=128, name="fc1")
    net = sym.Activation(net, act_type="relu", name="relu1")
    net = sym.FullyConnected(net, num_hidden=64, name="fc2")
    net = sym.Activation(net, act_type="relu", name="relu2")
    net = sym.FullyConnected(net, num_hidden=10, name="fc3")
    net = sym.SoftmaxOutput(net, name="softmax")
    exe = net.simple_bind(ctx="cpu", data=(batch, 784), softmax_label=(batch,))
    rng = np.random.default_rng(0)
    names = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    for n in names:
        exe.arg_dict[n][...] = rng.standard_normal(exe.arg_dict[n].shape).astype(np.float32) * 0.05
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, batch).astype(np.float32)
    keys = list(range(len(names)))
    weights = [exe.arg_dict[n] for n in names]
    grads = [exe.grad_dict[n] for n in names]
    kv, finish = kvstore_factory()
    try:
        kv.init(keys, weights)
        kv.set_optimizer(optimizer.create("sgd", learning_rate=0.1, momentum=0.9, rescale_grad=1.0 / batch))
        kv.pull(keys, out=weights)

        def step():
            exe.forward(is_train=True, data=x, softmax_label=y)
            exe.backward()
            kv.push(keys, grads)
            kv.pull(keys, out=weights)
        return timed(step, steps, warmup=5)
    finally:
        finish()


def bench_training(steps):
    from sparkps import kvstore
    local = mlp_step_time(lambda: (kvstore.create("local"), lambda: None), steps)
    cluster = PSCluster(1, 1, kvtype="dist_sync", transport="tcp", timeouts=Timeouts(register=30))

    def dist():
        (kv,) = cluster.start_workers()
        return kv, lambda: (kv.end_training(), cluster.close())
    return {"local": local, "dist": mlp_step_time(dist, steps)}


def report(transfer, training):
    mb = MB16 * 4 / 1e6
    ms = lambda s: "%.2f" % (s * 1e3)  # noqa: E731
    rate = lambda s: "%.0f" % (2 * mb / s)  # noqa: E731 (MB/s moved: 16 MB out and 16 MB back)
    lines = [
        "Command: `python benchmarks/bench_ps.py`. In one process over tcp://127.0.0.1: a scheduler and one "
        "server (threads) and one worker (`dist_async` for 1-2, `dist_sync` for 3); the raw baseline is a "
        "pyzmq DEALER talking to a ROUTER thread that echoes every message. For 1-2 the server runs no optimizer "
        "(it keeps the pushed value, as MXNet's server without an updater), so the rows measure the transport. "
        "`kv.pull` after `kv.push` of the same keys is sent as one PUSHPULL. Medians (best in brackets).",
        "",
        "| what | time per round trip (ms) | MB/s (both ways) | vs raw |",
        "|---|---|---|---|",
        "| raw pyzmq echo of 16 MiB | %s (%s) | %s | 1.00 |" % (ms(transfer["raw_big"][0]), ms(transfer["raw_big"][1]),
                                                           rate(transfer["raw_big"][0])),
    ]
    for name, label in (("pushpull", "kv.pushpull of 16 MiB (1 request)"),
                        ("push_pull", "KVWorker push, wait, pull, wait of 16 MiB (2 requests)")):
        median = transfer[name][0]
        lines.append("| %s | %s (%s) | %s | %.2f |" % (label, ms(median), ms(transfer[name][1]), rate(median),
                                                      transfer["raw_big"][0] / median))
    lines += [
        "| raw pyzmq echo of 4 bytes | %s (%s) | | 1.00 |" % (ms(transfer["raw_small"][0]),
                                                             ms(transfer["raw_small"][1])),
        "| kv.pull of one float32 | %s (%s) | | %.2f |" % (ms(transfer["ps_small"][0]), ms(transfer["ps_small"][1]),
                                                           transfer["raw_small"][0] / transfer["ps_small"][0]),
        "",
        "\"vs raw\" is raw time / our time (throughput ratio; goal for 16 MiB: >= 0.8).",
    ]
    if training is not None:
        local, dist = training["local"][0], training["dist"][0]
        lines += [
            "",
            "MLP 784-128-64-10, batch 128, SGD momentum, forward + backward + push + pull per step:",
            "",
            "| kvstore | ms per step |",
            "|---|---|",
            "| local | %s |" % ms(local),
            "| dist_sync, 1 worker + 1 server | %s |" % ms(dist),
            "",
            "dist_sync / local = **%.2f×** (goal <= 1.3×)." % (dist / local),
        ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--no-write", action="store_true", help="print only, do not update docs/benchmarks.md")
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args()
    transfer = bench_transfer(args.repeat)
    training = None if args.skip_training else bench_training(args.steps)
    text = report(transfer, training)
    print(text)
    if not args.no_write:
        write_section("ps", "## Parameter server\n\n" + text)


if __name__ == "__main__":
    main()

"""How low can a dist_sync step go on this machine? The same MLP step with a bare pyzmq "server" and no
sparkps code at all, as a floor for the parameter-server step figure in bench_ps.py.

MLP 784-128-64-10, batch 128, float32, 1 BLAS thread; parameters and gradients live in one flat buffer each
(as sparkps's executor lays them out). Contenders, timed in interleaved rounds in one run:

- local: forward + backward + SGD-momentum update in place (what ``fit(kvstore='local')`` does);
- inproc thread: the gradient buffer goes zero-copy over ``inproc://`` to a ROUTER thread in the same process,
  which applies the same update, copies the weights into a reply buffer and sends them back; the worker
  copies them into its weights (no header, no authentication, no rounds: a lower bound);
- tcp process: the same, with the ROUTER in a child process over tcp://127.0.0.1 (how sparkps runs a server
  beside a Spark worker).

    python -m benchmarks.bench_step_floor [--repeat 15] [--steps 50] [--write-docs] [--json PATH]
"""
# One BLAS thread, set before numpy is imported (numpy's BLAS reads it when it loads): the other imports follow.
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import subprocess
import sys
import threading

import numpy as np
import zmq

from benchmarks import report
from benchmarks.bench_ps import interleaved

SHAPES = [(128, 784), (128,), (64, 128), (64,), (10, 64), (10,)]
SIZE = sum(int(np.prod(s)) for s in SHAPES)
BATCH, LR, MOMENTUM = 128, 0.01, 0.9

SERVER = r'''
import sys, numpy as np, zmq
size, lr, momentum, batch = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
sock = zmq.Context().socket(zmq.ROUTER)
port = sock.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
weights, state, reply = np.zeros(size, np.float32), np.zeros(size, np.float32), np.zeros(size, np.float32)
while True:
    frames = sock.recv_multipart(copy=False)
    if len(frames[1]) != 4 * size:
        break
    grad = np.frombuffer(frames[1].buffer, np.float32)
    state *= momentum
    state -= (lr / batch) * grad
    weights += state
    np.copyto(reply, weights)
    sock.send_multipart([frames[0], reply], copy=False)
'''


def views(flat):
    out, offset = [], 0
    for shape in SHAPES:
        count = int(np.prod(shape))
        out.append(flat[offset:offset + count].reshape(shape))
        offset += count
    return out


class FlatMLP:
    """Forward + backward of the MLP, writing every gradient into one flat buffer."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.weights = (rng.standard_normal(SIZE) * 0.05).astype(np.float32)
        self.grads = np.zeros(SIZE, np.float32)
        self.state = np.zeros(SIZE, np.float32)
        self.w, self.g = views(self.weights), views(self.grads)
        self.x = rng.standard_normal((BATCH, 784)).astype(np.float32)
        self.label = rng.integers(0, 10, BATCH)

    def backward(self):
        (w1, b1, w2, b2, w3, b3), (g1, gb1, g2, gb2, g3, gb3) = self.w, self.g
        h1 = np.maximum(self.x @ w1.T + b1, 0)
        h2 = np.maximum(h1 @ w2.T + b2, 0)
        z = h2 @ w3.T + b3
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(BATCH), self.label] -= 1
        np.matmul(p.T, h2, out=g3)
        p.sum(axis=0, out=gb3)
        d2 = (p @ w3) * (h2 > 0)
        np.matmul(d2.T, h1, out=g2)
        d2.sum(axis=0, out=gb2)
        d1 = (d2 @ w2) * (h1 > 0)
        np.matmul(d1.T, self.x, out=g1)
        d1.sum(axis=0, out=gb1)

    def local_step(self):
        self.backward()
        self.state *= MOMENTUM
        self.state -= (LR / BATCH) * self.grads
        self.weights += self.state

    def remote_step(self, sock):
        self.backward()
        sock.send(self.grads, copy=False)
        np.copyto(self.weights, np.frombuffer(sock.recv(copy=False).buffer, np.float32))


def thread_server(context, endpoint, ready):
    sock = context.socket(zmq.ROUTER)
    sock.bind(endpoint)
    ready.set()
    weights, state, reply = (np.zeros(SIZE, np.float32) for _ in range(3))
    while True:
        frames = sock.recv_multipart(copy=False)
        if len(frames[1]) != 4 * SIZE:          # the stop message
            break
        state *= MOMENTUM
        state -= (LR / BATCH) * np.frombuffer(frames[1].buffer, np.float32)
        weights += state
        np.copyto(reply, weights)
        sock.send_multipart([frames[0], reply], copy=False)
    sock.close(0)


def measure(repeat, steps):
    context = zmq.Context()
    ready = threading.Event()
    thread = threading.Thread(target=thread_server, args=(context, "inproc://floor", ready), daemon=True)
    thread.start()
    ready.wait(10)
    child = subprocess.Popen([sys.executable, "-c", SERVER, str(SIZE), str(LR), str(MOMENTUM), str(BATCH)],
                             stdout=subprocess.PIPE, text=True)
    port = int(child.stdout.readline())
    inproc, tcp = context.socket(zmq.DEALER), context.socket(zmq.DEALER)
    inproc.connect("inproc://floor")
    tcp.connect("tcp://127.0.0.1:%d" % port)
    local, near, far = FlatMLP(), FlatMLP(), FlatMLP()
    try:
        return interleaved({"local": (local.local_step, steps),
                            "inproc thread": (lambda: near.remote_step(inproc), steps),
                            "tcp process": (lambda: far.remote_step(tcp), steps)}, repeat)
    finally:
        for sock in (inproc, tcp):
            sock.send(b"stop")
            sock.close(0)
        thread.join(10)
        child.wait(10)
        context.term()


SECTIONS = ("ps_floor",)


def render(run):
    """The section of a run record (pure function of it): every round's step times are in it."""
    options = run["data"]["options"]
    return report_text(run["data"]["times"], options["repeat"], options["steps"], run["command"])


def report_text(times, repeat, steps, command):
    median = {name: float(np.median(values)) for name, values in times.items()}
    ratio = {name: float(np.median(np.array(values) / np.array(times["local"]))) for name, values in times.items()}
    lines = ["## Floor of a dist_sync step (bare pyzmq, no sparkps)", "",
             "MLP 784-128-64-10, batch 128, 1 BLAS thread, flat parameter and gradient buffers; the \"server\" "
             "applies SGD momentum to the whole buffer and answers with a copy of the weights; no header, no "
             "authentication, no rounds. Medians of %d interleaved rounds of %d steps; ratio = median per-round "
             "step / local step." % (repeat, steps), "",
             "| step | ms | vs local |", "|---|---|---|"]
    lines += ["| %s | %.3f | %.2f× |" % (name, median[name] * 1e3, ratio[name]) for name in times]
    lines += ["", "This is what the sparkps dist_sync step (bench_ps) can approach at best on this machine: "
              "the round trip and the thread or process hand-over cost more than the 0.3 × local step that "
              "a 1.3× goal leaves.", "",
              "Command: `%s`" % command]
    return "\n".join(lines)


def figures(times):
    """The run's figures for ``--json``: the median step of each contender and its median ratio to the local step."""
    out = {}
    for name, values in times.items():
        out["%s step" % name] = report.lower(np.median(values) * 1e3, "ms")
        if name != "local":
            out["%s/local" % name] = report.lower(np.median(np.array(values) / np.array(times["local"])), "x")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--steps", type=int, default=50)
    args = report.add_output_args(parser).parse_args()
    run = report.Run("bench_step_floor")
    times = measure(args.repeat, args.steps)
    print(run.publish(args, "ps_floor", {"options": report.options(args), "times": times}, render))
    report.save_json(args, "bench_step_floor", figures(times))


if __name__ == "__main__":
    main()

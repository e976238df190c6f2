"""Comm-layer round trips between two processes: a Postoffice request/reply vs raw pyzmq.

The echo peer runs in a child process (no GIL shared with the requester), over tcp://127.0.0.1:
  raw    - a pyzmq ROUTER that sends every message back; the client is a DEALER.
  sparkps - a scheduler and a server node (echo handler) in the child, a worker Postoffice here.
Sizes: 4 bytes and 16 MiB (one float32 array).  Medians of ``--repeat`` blocks.

    python benchmarks/bench_comm.py [--repeat 7] [--no-write]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import zmq

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
sys.path.insert(0, ROOT)

from benchmarks.report import write_section  # noqa: E402
from sparkps.comm import Postoffice  # noqa: E402

RAW_PEER = """
import sys, zmq
ctx = zmq.Context(); sock = ctx.socket(zmq.ROUTER); sock.linger = 0
port = sock.bind_to_random_port("tcp://127.0.0.1"); print(port, flush=True)
while True:
    frames = sock.recv_multipart(copy=False)
    if frames[1].bytes == b"stop":
        break
    sock.send_multipart(frames, copy=False)
"""

PS_PEER = """
import sys
from sparkps.comm import Postoffice
from sparkps.scheduler import Scheduler
sched = Scheduler(1, 1).start(); print(sched.uri, sched.secret, flush=True)
server = Postoffice("server", sched.uri, sched.secret)
server.start(lambda msg, responder: responder.reply(arrays=msg.arrays))
sched.wait(); server.wait_for_termination(10); server.stop(); sched.stop()
"""


def peer(code):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)


def timed(round_trip, count, repeat):
    for _ in range(max(1, count // 10)):
        round_trip()
    blocks = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(count):
            round_trip()
        blocks.append((time.perf_counter() - start) / count)
    return statistics.median(blocks)


def raw_times(payloads, repeat):
    proc = peer(RAW_PEER)
    port = int(proc.stdout.readline())
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect("tcp://127.0.0.1:%d" % port)
    try:
        results = {}
        for name, (array, count) in payloads.items():
            def round_trip(array=array):
                sock.send_multipart([b"h" * 64, array], copy=False)
                sock.recv_multipart(copy=False)
            results[name] = timed(round_trip, count, repeat)
        sock.send_multipart([b"stop"])
        return results
    finally:
        sock.close(0)
        ctx.term()
        proc.wait(10)


def sparkps_times(payloads, repeat):
    proc = peer(PS_PEER)
    uri, secret = proc.stdout.readline().split()
    worker = Postoffice("worker", uri, secret)
    worker.start()
    try:
        results = {}
        for name, (array, count) in payloads.items():
            def round_trip(array=array):
                worker.wait(worker.request(1, "PULL", arrays=[array]))
            results[name] = timed(round_trip, count, repeat)
        worker.finish()
        return results
    finally:
        worker.stop()
        proc.wait(10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print only, do not update docs/benchmarks.md")
    args = parser.parse_args()
    payloads = {"4 bytes": (np.ones(1, np.float32), 2000), "16 MiB": (np.ones(4 << 20, np.float32), 20)}
    raw, ours = raw_times(payloads, args.repeat), sparkps_times(payloads, args.repeat)
    rows = ["| payload | raw pyzmq (ms) | sparkps Postoffice (ms) | raw / sparkps |", "|---|---|---|---|"]
    for name in payloads:
        rows.append("| %s | %.3f | %.3f | %.2f |" % (name, raw[name] * 1e3, ours[name] * 1e3, raw[name] / ours[name]))
    text = ("## Comm layer: request/reply between two processes\n\nCommand: `python benchmarks/bench_comm.py "
            "--repeat %d`. The echo peer is a child process on tcp://127.0.0.1; raw = pyzmq DEALER -> ROUTER echo, "
            "sparkps = worker Postoffice -> server Postoffice (HMAC-authenticated header, arrays zero-copy). "
            "Median time per round trip.\n\n%s\n" % (args.repeat, "\n".join(rows)))
    print(text)
    if not args.no_write:
        write_section("comm", text)


if __name__ == "__main__":
    main()

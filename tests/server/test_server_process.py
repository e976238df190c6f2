"""A server in its own process (``spawn_server`` / ``python -m sparkps.server``) over tcp://127.0.0.1."""
import os
import signal
import subprocess

import numpy as np
import pytest
import zmq

from cluster import cluster_timeouts
from sparkps.errors import ClusterError, NodeDied
from sparkps.runtime.server_node import spawn_server
from sparkps.runtime.supervisor import ExitWatch, describe_exit
from sparkps.scheduler import Scheduler
from sparkps.scheduler.client import report_abort
from sparkps.worker.dist_kvstore import create_dist_kvstore

TIMEOUTS = cluster_timeouts(register=30, request=30)


@pytest.fixture
def one_server_job(tmp_path):
    """A tcp scheduler, one subprocess server and one in-process worker kvstore; all stopped afterwards.

    As a worker task does (watch_server_exit), a server process that ends before registering fails the job at
    once with its exit; the fixture then fails naming that and the server's stderr (a file: a pipe nobody reads
    could fill and stop the server) instead of the registration timeout's "never registered"."""
    scheduler = Scheduler(1, 1, timeouts=TIMEOUTS).start()
    stderr_path = tmp_path / "server.stderr"
    with open(stderr_path, "wb") as stderr:
        proc = spawn_server(scheduler.uri, scheduler.secret, timeouts=TIMEOUTS, stderr=stderr)
    kv = None
    try:
        with ExitWatch(proc, lambda code: report_abort(scheduler.uri, scheduler.secret, "server", 0,
                                                       "its process ended: %s" % describe_exit(code))):
            try:
                kv = create_dist_kvstore("dist_sync", scheduler.uri, scheduler.secret, timeouts=TIMEOUTS)
            except ClusterError as exc:
                pytest.fail("%s\nthe server process: %s; its stderr:\n%s"
                            % (exc, describe_exit(proc.poll()), stderr_path.read_text(errors="replace")[-4000:]))
        yield scheduler, proc, kv
    finally:
        if kv is not None:
            try:
                kv.close()
            except NodeDied:
                pass
        scheduler.stop()
        if proc.poll() is None:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def test_subprocess_server_serves_and_exits_zero_when_the_workers_finish(one_server_job):
    scheduler, proc, kv = one_server_job
    w = np.ones(5, np.float32)
    kv.init(0, w)
    kv.push(0, np.full(5, 2.0, np.float32))
    kv.pull(0, out=w)
    np.testing.assert_array_equal(w, 2.0)  # no optimizer: the server keeps the pushed sum
    kv.close()
    scheduler.wait(10)
    assert proc.wait(10) == 0


def test_server_killed_mid_training_makes_the_worker_fail_naming_it(one_server_job):
    scheduler, proc, kv = one_server_job
    w = np.zeros(1000, np.float32)
    kv.init(0, w)
    kv.push(0, np.ones(1000, np.float32))
    kv.pull(0, out=w)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    with pytest.raises(NodeDied, match="server 0") as info:
        for _ in range(100000):  # bounded: heartbeats declare the server dead within the heartbeat timeout
            kv.push(0, np.ones(1000, np.float32))
            kv.pull(0, out=w)
    assert info.value.node.startswith("server 0") and "stopped sending heartbeats" in str(info.value)
    with pytest.raises(NodeDied, match="server 0"):
        scheduler.wait(10)


def test_garbage_frames_do_not_crash_the_server(one_server_job):
    scheduler, proc, kv = one_server_job
    address = [n["address"] for n in scheduler.status()["nodes"] if n["role"] == "server"][0]
    w = np.arange(6, dtype=np.float32)
    kv.init(0, w)
    context = zmq.Context()
    try:
        stranger = context.socket(zmq.DEALER)
        stranger.setsockopt(zmq.LINGER, 0)
        stranger.connect(address)
        rng = np.random.default_rng(0)
        for size in (0, 1, 31, 32, 33, 500, 70000):
            stranger.send_multipart([rng.bytes(size), rng.bytes(16)])
        stranger.send(b"")
        stranger.close()
    finally:
        context.term()
    out = np.zeros(6, np.float32)
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out, w)
    assert proc.poll() is None
    kv.close()                          # and the job still ends cleanly, the server with exit code 0
    scheduler.wait(10)
    assert scheduler.status()["errors"] == [] and proc.wait(10) == 0

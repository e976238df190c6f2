"""The process supervisor and the worker life cycle, with real child processes and a real cluster."""
import io
import os
import signal
import sys
import threading
import time

import pytest

from cluster import PSCluster, cluster_timeouts, run_in_threads
from sparkps import kvstore
from sparkps.errors import ClusterError
from sparkps.runtime.supervisor import ExitWatch, describe_exit, spawn, stop_all
from sparkps.worker.lifecycle import run_worker

STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
            "time.sleep(60)")


def _wait_for_line(child, text, timeout=20):
    deadline = time.monotonic() + timeout
    while child.last_line != text and time.monotonic() < deadline:
        time.sleep(0.02)
    assert child.last_line == text, "the child never printed %r" % text


def test_stop_kills_a_child_that_ignores_sigterm_after_the_grace_period():
    out = io.StringIO()
    child = spawn("stubborn", [sys.executable, "-c", STUBBORN], relay=out, own_group=True)
    _wait_for_line(child, "ready")
    child.stop(grace=0.5)      # the child would sleep 60 s: an exit by SIGKILL is the stop's, after the grace
    assert describe_exit(child.returncode) == "killed by SIGKILL"
    assert out.getvalue() == "[stubborn] ready\n"


def test_stop_all_reaches_the_grandchildren_of_a_process_group():
    code = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; "
            "time.sleep(60)']); print(p.pid, flush=True); time.sleep(60)")
    child = spawn("parent", [sys.executable, "-c", code], relay=io.StringIO(), own_group=True)
    deadline = time.monotonic() + 20
    while not child.last_line.isdigit() and time.monotonic() < deadline:
        time.sleep(0.02)
    grandchild = int(child.last_line)
    stop_all([child], grace=5)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(grandchild, signal.SIGKILL)
        pytest.fail("the grandchild outlived its stopped process group")


def test_exit_watch_reports_an_exit_once_and_nothing_after_it_closed():
    seen = []
    done = threading.Event()
    child = spawn("quitter", [sys.executable, "-c", "raise SystemExit(3)"])
    with ExitWatch(child, lambda code: (seen.append(code), done.set())):
        assert done.wait(20)
    assert seen == [3]
    calm = spawn("calm", [sys.executable, "-c", "import time; time.sleep(0.5)"])
    with ExitWatch(calm, seen.append) as watch:
        pass
    assert not watch._thread.is_alive()     # closed: its thread has ended, so nothing can be reported after
    calm.wait(20)
    assert seen == [3]


def test_a_failing_fit_is_reported_to_the_scheduler_and_the_kvstore_closed():
    cluster = PSCluster(num_servers=1, num_workers=1, timeouts=cluster_timeouts())
    closed = []
    try:
        def register():
            kv = kvstore.create("dist_sync", scheduler_uri=cluster.uri, secret=cluster.secret,
                                timeouts=cluster.timeouts, transport="inproc", zmq_context=cluster.context)
            closed.append(kv)
            return kv

        def fit(kv, start):
            assert not start.resuming and start.skip(None) is None     # no checkpoint: the data as it is
            raise ValueError("column 3 holds text")

        with pytest.raises(ValueError, match="column 3"):
            run_in_threads([lambda: run_worker(register, fit)], 60)
        with pytest.raises(ClusterError, match="ValueError: column 3 holds text"):
            cluster.scheduler.wait(20)
        assert closed and closed[0]._closed
    finally:
        cluster.close(check=False)


_FORK_TRAP = {"armed": False, "registered": False, "lock": threading.Lock()}


def _fork_trap_in_child():
    """A fork handler like the ones gRPC, OpenMP or telemetry libraries install: in a child forked while another
    thread held the lock it waits for, it waits forever (armed only inside the test below)."""
    if _FORK_TRAP["armed"]:
        _FORK_TRAP["lock"].acquire()


def test_a_child_starts_even_when_a_fork_handler_of_this_process_would_hang_it():
    """spawn never runs Python, nor the fork handlers of this (threaded) process, between fork and exec."""
    if not _FORK_TRAP["registered"]:
        os.register_at_fork(after_in_child=_fork_trap_in_child)
        _FORK_TRAP["registered"] = True
    child = None
    with _FORK_TRAP["lock"]:
        _FORK_TRAP["armed"] = True
        try:
            child = spawn("quick", [sys.executable, "-c", "pass"])
            code = child.wait_exit(20)
        finally:
            _FORK_TRAP["armed"] = False
            if child is not None and child.poll() is None:
                child.kill()
                child.wait()
    assert code == 0, "the child hung before it ran its program: %s" % describe_exit(code)


def test_a_child_gets_sigterm_when_the_process_that_spawned_it_dies(tmp_path):
    ready, termed = tmp_path / "ready", tmp_path / "termed"
    grandchild = ("import os, signal, sys, time\n"
                  "signal.signal(signal.SIGTERM, lambda *a: (open(sys.argv[2], 'w').close(), os._exit(0)))\n"
                  "open(sys.argv[1], 'w').close()\n"
                  "time.sleep(60)\n")
    parent = ("import os, sys, time\n"
              "from sparkps.runtime.supervisor import spawn\n"
              "spawn('sleeper', [sys.executable, '-c', sys.argv[1], sys.argv[2], sys.argv[3]])\n"
              "deadline = time.monotonic() + 30\n"
              "while not os.path.exists(sys.argv[2]) and time.monotonic() < deadline:\n"
              "    time.sleep(0.02)\n"
              "os._exit(0 if os.path.exists(sys.argv[2]) else 1)\n")
    middle = spawn("middle", [sys.executable, "-c", parent, grandchild, str(ready), str(termed)])
    assert middle.wait(40) == 0, "the grandchild never started"
    deadline = time.monotonic() + 30
    while not termed.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert termed.exists(), "the grandchild outlived the process that spawned it without a SIGTERM"

"""A worker task that started a server process notices at once when that process dies before the cluster
formed: registration fails with the exit code instead of waiting out the registration timeout."""
import subprocess
import sys

import pytest

from cluster import cluster_timeouts
from sparkps.comm import Postoffice
from sparkps.errors import ClusterError
from sparkps.scheduler import Scheduler
from sparkps.spark.task.barrier_task import watch_server_exit


def test_a_server_process_dying_at_start_fails_registration_with_its_exit_code():
    sched = Scheduler(1, 1, timeouts=cluster_timeouts(register=30)).start()
    worker = Postoffice("worker", sched.uri, sched.secret, rank=0, timeouts=sched.timeouts)
    server = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    try:
        with watch_server_exit(server, {"scheduler_uri": sched.uri, "secret": sched.secret}, 0):
            # without the watch the start would end after the registration timeout, in that timeout's words
            with pytest.raises(ClusterError, match=r"server 0 failed before registering: .*exited with code 3"):
                worker.start()
    finally:
        server.wait(10)
        worker.stop()
        sched.stop()


@pytest.mark.parametrize("code, fails", [(0, False), (3, True), (-9, True)])
def test_the_watch_fails_the_job_for_a_server_that_failed_not_for_one_the_job_ended(code, fails):
    """The watch spans the worker's whole life, its close included: a server ending with code 0 (TERMINATE, once
    every worker closed) is no failure; a non-zero code or a signal fails the job at once."""
    sched = Scheduler(1, 1, timeouts=cluster_timeouts(register=30)).start()
    script = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)" if code < 0 else "raise SystemExit(%d)" % code
    server = subprocess.Popen([sys.executable, "-c", script])
    try:
        with watch_server_exit(server, {"scheduler_uri": sched.uri, "secret": sched.secret}, 0) as watch:
            server.wait(10)
            # the watch's thread ends by itself once it has seen the exit and acted on it (an ABORT waits for the
            # scheduler's reply): after that, whatever it reported has arrived
            watch._thread.join(20)
            assert not watch._thread.is_alive()
        errors = sched.status()["errors"]
        assert bool(errors) is fails, errors
        if fails:
            assert "its process (started by worker 0)" in str(errors[0])
    finally:
        sched.stop()


def test_the_driver_ends_left_over_servers_on_local_and_local_cluster_masters():
    from sparkps.spark.driver.stage import same_machine
    assert same_machine("local[2]") and same_machine("local-cluster[2,1,1024]") and same_machine("local")
    assert not same_machine("spark://host:7077") and not same_machine("yarn")


def test_a_stopped_server_process_is_killed_and_reaped_after_the_grace_period():
    import os
    import signal

    from sparkps.spark.driver.stage import _running, reap
    stopped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(stopped.pid, signal.SIGSTOP)         # ignores SIGTERM until continued; SIGKILL still ends it
        reap([stopped.pid], 0.5)
        assert stopped.wait(10) == -signal.SIGKILL
        assert not _running(stopped.pid)
    finally:
        if stopped.poll() is None:
            stopped.kill()
            stopped.wait(10)


def test_the_servers_last_line_says_why_it_exited():
    """A server that cannot import sparkps (code shipped as a zip its environment does not name): the job's error
    carries the server's own last line, not only its exit code."""
    import io

    from sparkps.runtime.supervisor import spawn
    from sparkps.spark.task.barrier_task import last_line
    sched = Scheduler(1, 1, timeouts=cluster_timeouts(register=30)).start()
    log = io.StringIO()
    server = spawn("server 0", [sys.executable, "-c", "import sys; sys.stderr.write(\"python: Error while finding "
                                "module specification for 'sparkps.server' (ModuleNotFoundError: No module named "
                                "'sparkps')\\n\"); raise SystemExit(1)"], relay=log)
    try:
        with watch_server_exit(server, {"scheduler_uri": sched.uri, "secret": sched.secret}, 0,
                               last_words=lambda: last_line(server)) as watch:
            server.wait(10)
            watch._thread.join(20)
        errors = sched.status()["errors"]
        assert "its process (started by worker 0) exited with code 1: python: Error while finding module " \
               "specification for 'sparkps.server' (ModuleNotFoundError: No module named 'sparkps')" in str(errors[0])
        assert "[server 0] python: Error while finding" in log.getvalue()       # still in the executor's log
    finally:
        sched.stop()

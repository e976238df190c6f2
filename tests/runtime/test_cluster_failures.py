"""Dead nodes in real multi-process clusters: SIGKILL of a worker, a server or the scheduler, a failing
worker, and Ctrl-C/SIGTERM of the launcher.  Every survivor exits fast with an error naming the dead
node, and no process is left behind."""
import os
import signal
import threading
import time

import pytest

from cluster import cluster_timeouts, start_all
from launch_helpers import FAST_CLUSTER, Sparkps, alive, lines_matching, recorded_pids, write_digits
from sparkps.comm import Postoffice
from sparkps.errors import NodeDied

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def job_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("failures")
    train, _ = write_digits(directory)
    net = directory / "net.json"
    proc = Sparkps(["symbol", "mlp", "--layers", "64,32,10", "-o", str(net)])
    assert proc.finish(60) == 0, proc.output
    return {"train": train, "net": str(net), "dir": directory}


def launch_long_job(job_files, tmp_path, data=None):
    """A launched 2-server, 2-worker job that trains far longer than any test waits."""
    pids_file = str(tmp_path / "pids")
    proc = Sparkps(["launch", "-s", "2", "-w", "2"] + FAST_CLUSTER +
                   ["--", "train", "--symbol", job_files["net"], "--data", data or job_files["train"],
                    "--num-features", "64", "--batch-size", "16", "--epochs", "100000"],
                   env={"SPARKPS_LAUNCH_PIDS_FILE": pids_file, "SPARKPS_LOG_LEVEL": "info"})
    return proc, pids_file


def wait_until_training(proc):
    for rank in (0, 1):
        proc.wait_for_line(r"^\[worker %d\] .*rows of .* \(shard %d of 2\)" % (rank, rank), timeout=60)


def assert_nothing_left(pids_file):
    pids = recorded_pids(pids_file)
    assert len(pids) == 5
    assert [name for name, pid in pids.items() if alive(pid)] == []


@pytest.mark.parametrize("victim, node", [("worker 1", r"worker 1 \(node 4\)"), ("server 0", r"server 0 \(node 1\)")])
def test_sigkill_of_a_role_fails_the_launch_naming_it(job_files, tmp_path, victim, node):
    proc, pids_file = launch_long_job(job_files, tmp_path)
    try:
        wait_until_training(proc)
        os.kill(recorded_pids(pids_file)[victim], signal.SIGKILL)
        code = proc.finish(60)
    finally:
        proc.kill()
    assert code == 1, proc.output
    assert lines_matching(proc.output, r"^\[scheduler\] sparkps scheduler: NodeDied: %s stopped sending heartbeats"
                          % node), proc.output
    survivors = [r for r in ("server 0", "server 1", "worker 0", "worker 1") if r != victim]
    for role in survivors:
        assert lines_matching(proc.output, r"^sparkps launch: %s \(pid \d+\) failed: exit code 1: .*%s"
                              % (role, node)), (role, proc.output)
    assert lines_matching(proc.output, r"^sparkps launch: %s \(pid \d+\) failed: killed by SIGKILL" % victim)
    assert_nothing_left(pids_file)


def test_a_worker_that_fails_stops_the_job_with_its_error(job_files, tmp_path):
    lines = open(job_files["train"]).read().splitlines()
    broken = tmp_path / "broken.libsvm"
    lines[-1] = "7 1:0.5 oops"  # in one worker's shard
    broken.write_text("\n".join(lines) + "\n")
    proc, pids_file = launch_long_job(job_files, tmp_path, data=str(broken))
    try:
        code = proc.finish(60)
    finally:
        proc.kill()
    assert code == 1
    culprit = r"worker (0 \(node 3\)|1 \(node 4\)) failed: DataError: .*broken.libsvm:%d: malformed" % len(lines)
    assert lines_matching(proc.output, r"^\[scheduler\] sparkps scheduler: NodeDied: " + culprit), proc.output
    for role in ("server 0", "server 1"):
        assert lines_matching(proc.output, rf"^sparkps launch: {role} \(pid \d+\) failed: exit code 1: .*{culprit}")
    assert_nothing_left(pids_file)


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_stopping_the_launcher_stops_every_role(job_files, tmp_path, signum, code):
    proc, pids_file = launch_long_job(job_files, tmp_path)
    try:
        wait_until_training(proc)
        proc.process.send_signal(signum)
        assert proc.finish(60) == code, proc.output
    finally:
        proc.kill()
    assert "stopping every role" in proc.output
    assert_nothing_left(pids_file)


def test_nodes_notice_a_sigkilled_scheduler(tmp_path):
    uri_file = tmp_path / "uri"
    sched = Sparkps(["scheduler", "-s", "1", "-w", "1", "--uri-file", str(uri_file), "--heartbeat-interval", "0.1",
                     "--heartbeat-timeout", "1"], env={"SPARKPS_SECRET": "s3cret"})
    nodes = []
    try:
        uri = sched.wait_for_line(r"SPARKPS_SCHEDULER_URI=").split("=", 1)[1]
        timeouts = cluster_timeouts()
        nodes = [Postoffice("server", uri, "s3cret", timeouts=timeouts),
                 Postoffice("worker", uri, "s3cret", timeouts=timeouts)]
        assert start_all(nodes) == [None, None]
        sched.process.kill()
        outcome = {}

        def serve():
            try:
                nodes[0].wait_for_termination(10)
            except Exception as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=serve)
        thread.start()
        thread.join(15)
        assert isinstance(outcome.get("error"), NodeDied)
        assert "did not answer heartbeats" in str(outcome["error"]) and uri in str(outcome["error"])
        with pytest.raises(NodeDied, match="did not answer heartbeats"):
            nodes[1].wait_for_termination(10)
    finally:
        for node in nodes:
            node.stop()
        sched.kill()


def test_roles_do_not_outlive_a_sigkilled_launcher(job_files, tmp_path):
    proc, pids_file = launch_long_job(job_files, tmp_path)
    try:
        wait_until_training(proc)
        proc.process.kill()  # no chance to clean up: the roles get SIGTERM from the kernel (PDEATHSIG)
        proc.finish(30)
        pids = recorded_pids(pids_file)
        assert len(pids) == 5, pids  # the scheduler, 2 servers and 2 workers were all recorded
        deadline, pause = time.monotonic() + 20, threading.Event()
        while any(alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
            pause.wait(0.05)
        assert [name for name, pid in pids.items() if alive(pid)] == []
    finally:
        proc.kill()

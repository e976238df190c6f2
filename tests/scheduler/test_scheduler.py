"""The scheduler node with real Postoffices: ranks, registration errors, barriers, status, termination,
dead-node detection."""
import re
import threading
import time

import pytest

from cluster import NodeCluster, cluster_timeouts, start_all
from sparkps.comm import Endpoint, Postoffice
from sparkps.errors import ClusterError, NodeDied, PeerTimeout, RemoteError
from sparkps.scheduler import Scheduler, fetch_status
from sparkps.scheduler.client import report_abort


def until(condition, timeout=5.0):
    """Poll ``condition`` until it holds or ``timeout`` s passed; returns its last value."""
    deadline, pause = time.monotonic() + timeout, threading.Event()
    while not condition() and time.monotonic() < deadline:
        pause.wait(0.01)
    return condition()


@pytest.fixture
def stoppers():
    items = []
    yield items
    for item in reversed(items):
        item.stop()


def test_requested_ranks_decide_node_ids():
    c = NodeCluster(num_servers=2, num_workers=2, ranks={("worker", 0): 1, ("worker", 1): 0, ("server", 0): 1})
    try:
        assert [(w.rank, w.node_id) for w in c.workers] == [(1, 4), (0, 3)]
        assert [(s.rank, s.node_id) for s in c.servers] == [(1, 2), (0, 1)]
    finally:
        c.stop()


def test_registration_timeout_names_the_missing_roles_and_ranks(stoppers):
    sched = Scheduler(1, 2, transport="inproc", timeouts=cluster_timeouts(register=0.5)).start()
    stoppers.append(sched)
    worker = Postoffice("worker", sched.uri, sched.secret, rank=0, transport="inproc", timeouts=sched.timeouts)
    stoppers.append(worker)
    errors = start_all([worker])
    missing = r"1 of 1 servers \(rank 0\) and 1 of 2 workers \(rank 1\) never registered"
    assert isinstance(errors[0], ClusterError) and "registration timed out" in str(errors[0])
    with pytest.raises(PeerTimeout, match=missing):
        sched.wait(5)
    assert sched.status()["state"] == "failed"


def test_a_duplicate_rank_is_refused_and_the_job_goes_on(stoppers):
    sched = Scheduler(1, 2, transport="inproc", timeouts=cluster_timeouts()).start()
    stoppers.append(sched)
    first = Postoffice("worker", sched.uri, sched.secret, rank=0, transport="inproc", timeouts=sched.timeouts)
    dup = Postoffice("worker", sched.uri, sched.secret, rank=0, transport="inproc", timeouts=sched.timeouts)
    rest = [Postoffice("worker", sched.uri, sched.secret, transport="inproc", timeouts=sched.timeouts),
            Postoffice("server", sched.uri, sched.secret, transport="inproc", timeouts=sched.timeouts)]
    stoppers.extend([first, dup] + rest)
    outcome = {}
    started = threading.Thread(target=lambda: outcome.update(errors=start_all([first])))
    started.start()
    assert until(lambda: sched.status()["registered"] == 1), "the first worker never registered"
    with pytest.raises(ClusterError, match="worker rank 0 was already taken"):
        dup.start()
    assert start_all(rest) == [None, None]
    started.join(10)
    assert outcome == {"errors": [None]}
    assert (first.rank, rest[0].rank) == (0, 1)
    for w in (first, rest[0]):
        w.finish()
    sched.wait(5)


def test_every_worker_finishing_ends_the_job_and_stops_the_servers():
    c = NodeCluster(num_servers=2, num_workers=2)
    try:
        c.workers[0].finish()
        assert c.scheduler.state == "running"
        c.workers[1].finish()
        c.scheduler.wait(5)
        for s in c.servers:
            s.wait_for_termination(5)
        assert c.scheduler.status()["state"] == "finished"
    finally:
        c.stop()


def test_a_barrier_releases_when_the_missing_worker_finishes_instead():
    c = NodeCluster(num_servers=1, num_workers=2)
    outcome = {}

    def wait_in_barrier():
        try:
            c.workers[0].barrier("workers", 20)
            outcome["released"] = True
        except Exception as exc:  # a timeout here means the finish did not release the barrier
            outcome["error"] = exc

    try:
        waiting = threading.Thread(target=wait_in_barrier)
        waiting.start()
        c.workers[1].finish()
        waiting.join(30)
        assert not waiting.is_alive(), "the barrier neither released nor timed out"
        assert outcome == {"released": True}
    finally:
        c.stop()


def test_status_reports_nodes_progress_and_errors():
    c = NodeCluster(num_servers=1, num_workers=2, transport="tcp")
    try:
        worker = c.workers[1]
        worker.report_progress({"epoch": 2, "nbatch": 7, "samples": 448, "metrics": {"accuracy": 0.9}})
        status = worker.wait(worker.request(0, "STATUS")).meta["status"]  # after PROGRESS: same connection
        assert status["state"] == "running"
        assert [(n["id"], n["role"], n["rank"], n["alive"]) for n in status["nodes"]] == [
            (1, "server", 0, True), (2, "worker", 0, True), (3, "worker", 1, True)]
        # every node heartbeats within the timeout (a generous bound: the machine may be loaded)
        assert all(0 <= n["last_heartbeat_age"] < c.timeouts.heartbeat_timeout for n in status["nodes"])
        progress = status["progress"][worker.rank]
        assert (progress["epoch"], progress["nbatch"], progress["samples"]) == (2, 7, 448)
        assert progress["metrics"] == {"accuracy": 0.9}
        assert fetch_status(c.scheduler.uri, c.scheduler.secret)["progress"][worker.rank]["samples"] == 448
        assert status["errors"] == []
    finally:
        c.stop()


def test_status_over_the_wire_needs_the_secret(stoppers):
    sched = Scheduler(1, 1, timeouts=cluster_timeouts()).start()
    stoppers.append(sched)
    assert fetch_status(sched.uri, sched.secret)["state"] == "registering"
    with pytest.raises(PeerTimeout, match="is the secret right"):
        fetch_status(sched.uri, "not-the-secret", timeout=0.3)


def test_a_reported_error_fails_the_job_and_reaches_every_node():
    c = NodeCluster(num_servers=1, num_workers=2)
    try:
        culprit = c.workers[1]
        culprit.report_error("ValueError: label 11 out of range")
        expected = re.escape(culprit.name) + r" failed: ValueError: label 11 out of range"
        with pytest.raises(NodeDied, match=expected):
            c.scheduler.wait(5)
        with pytest.raises(NodeDied, match=expected):
            c.servers[0].wait_for_termination(5)
        with pytest.raises(NodeDied, match=expected):
            c.workers[0].wait_for_termination(5)
        with pytest.raises(NodeDied, match=expected):
            c.workers[0].request(1, "PULL")
        assert c.scheduler.status()["errors"][0]["node"] == culprit.name
    finally:
        c.stop()


def registered_endpoint(sched, role):
    """A node that registers and then never sends a heartbeat (as if it froze)."""
    endpoint = Endpoint("silent " + role, sched.secret, transport="inproc")
    endpoint.join(sched.job_id)
    endpoint.start()
    return endpoint, endpoint.request(sched.uri, "scheduler", "REGISTER",
                                      {"role": role, "rank": None, "address": endpoint.address})


def test_a_node_without_heartbeats_is_declared_dead_and_everyone_stops(stoppers):
    sched = Scheduler(1, 1, transport="inproc", timeouts=cluster_timeouts(heartbeat_interval=0.1,
                                                                          heartbeat_timeout=1.0)).start()
    stoppers.append(sched)
    server = Postoffice("server", sched.uri, sched.secret, transport="inproc", timeouts=sched.timeouts)
    stoppers.append(server)
    silent, rid = registered_endpoint(sched, "worker")
    stoppers.append(silent)
    server.start()
    assert silent.wait(rid, 5).meta["node_id"] == 2
    expected = r"worker 0 \(node 2\) stopped sending heartbeats: none for .* \(heartbeat timeout 1 s\)"
    with pytest.raises(NodeDied, match=expected):
        sched.wait(5)
    with pytest.raises(NodeDied, match=expected) as info:
        server.wait_for_termination(5)
    assert info.value.node == "worker 0 (node 2)"


def test_nodes_notice_a_scheduler_that_stopped_answering(stoppers):
    def fake_scheduler(msg, responder):
        if msg.cmd == "REGISTER" and not msg.job:   # the job's id first
            responder.reply({"job": b"j" * 16})
        elif msg.cmd == "REGISTER":  # answers registration, then ignores heartbeats
            responder.reply({"node_id": 1, "rank": 0, "num_servers": 1, "num_workers": 1,
                             "nodes": [{"id": 1, "role": "server", "rank": 0, "address": msg.meta["address"]}]})

    fake = Endpoint("mute scheduler", "s3cret", fake_scheduler, transport="inproc")
    fake.join(b"j" * 16)
    fake.start()
    stoppers.append(fake)
    server = Postoffice("server", fake.address, "s3cret", transport="inproc",
                        timeouts=cluster_timeouts(heartbeat_interval=0.1, heartbeat_timeout=1.0))
    stoppers.append(server)
    server.start()
    with pytest.raises(NodeDied, match=r"the scheduler at inproc://.* did not answer heartbeats for"):
        server.wait_for_termination(5)


def test_stopping_the_scheduler_early_stops_the_nodes_with_an_error():
    c = NodeCluster(num_servers=1, num_workers=1)
    try:
        c.scheduler.stop()
        with pytest.raises(ClusterError, match="scheduler was stopped before the job finished"):
            c.servers[0].wait_for_termination(5)
    finally:
        c.stop()


def test_unregistered_senders_and_late_registrations_are_refused():
    c = NodeCluster(num_servers=1, num_workers=1)
    stranger = Endpoint("stranger", c.scheduler.secret, transport="inproc")
    stranger.join(c.scheduler.job_id)
    stranger.start()
    try:
        with pytest.raises(RemoteError, match="not registered"):
            stranger.wait(stranger.request(c.scheduler.uri, "scheduler", "BARRIER", {"group": "all"}), 5)
        with pytest.raises(RemoteError, match="registration is closed: the job is running"):
            stranger.wait(stranger.request(c.scheduler.uri, "scheduler", "REGISTER",
                                           {"role": "worker", "rank": None, "address": stranger.address}), 5)
    finally:
        stranger.stop()
        c.stop()


def test_a_role_that_fails_before_registering_fails_the_job_at_once(stoppers):
    sched = Scheduler(1, 1, timeouts=cluster_timeouts(register=30)).start()
    stoppers.append(sched)
    worker = Postoffice("worker", sched.uri, sched.secret, rank=0, timeouts=sched.timeouts)
    stoppers.append(worker)
    outcome = {}
    waiting = threading.Thread(target=lambda: outcome.update(errors=start_all([worker])))
    waiting.start()
    assert until(lambda: sched.status()["registered"] == 1)
    report_abort(sched.uri, sched.secret, "server", 0, "its process exited with code 3")
    waiting.join(60)           # only against a hang: the registration timeout (30 s) would fail with its own words
    assert not waiting.is_alive()
    assert "registration timed out" not in str(outcome["errors"][0])
    assert re.search("server 0 failed before registering: its process exited with code 3", str(outcome["errors"][0]))
    with pytest.raises(NodeDied, match="exited with code 3"):
        sched.wait(5)


def test_an_abort_without_the_secret_is_dropped(stoppers):
    sched = Scheduler(1, 1, timeouts=cluster_timeouts(register=30)).start()
    stoppers.append(sched)
    with pytest.raises(PeerTimeout):
        report_abort(sched.uri, "not-the-secret", "server", 0, "forged", timeout=0.5)
    assert sched.status()["state"] == "registering"


@pytest.mark.parametrize("role", ["worker", "server"])
def test_a_node_stopped_early_fails_the_job_naming_itself_at_once(role):
    """The report, not the heartbeat timeout (60 s here), is what ends the job within the 10 s waited."""
    c = NodeCluster(num_servers=2, num_workers=2, timeouts=cluster_timeouts(heartbeat_timeout=60.0))
    try:
        quitter = (c.workers if role == "worker" else c.servers)[1]
        quitter.stop()
        expected = re.escape(quitter.name) + " stopped before the job finished"
        with pytest.raises(ClusterError, match=expected):
            c.scheduler.wait(10)
        survivors = [n for n in c.workers + c.servers if n is not quitter]
        for node in survivors:
            with pytest.raises(ClusterError, match=expected):
                node.wait_for_termination(10)
        assert c.scheduler.status()["errors"][0]["node"] == quitter.name
    finally:
        c.stop()

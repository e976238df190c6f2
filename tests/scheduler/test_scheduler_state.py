"""The scheduler's decisions, without sockets."""
import pytest

from sparkps.errors import ClusterError, ConfigError
from sparkps.scheduler.state import BarrierBook, HeartbeatMonitor, JobLifecycle, Registry


def test_requested_ranks_are_kept_and_the_rest_filled_in_arrival_order():
    r = Registry(2, 3)
    r.add("worker", None, "w-a")
    r.add("worker", 0, "w-b")
    r.add("server", 1, "s-a")
    r.add("worker", None, "w-c")
    r.add("server", None, "s-b")
    assert r.complete
    table = [(n["id"], n["role"], n["rank"], n["address"]) for n in r.assign()]
    assert table == [(1, "server", 0, "s-b"), (2, "server", 1, "s-a"),
                     (3, "worker", 0, "w-b"), (4, "worker", 1, "w-a"), (5, "worker", 2, "w-c")]


def test_ranks_are_the_same_whatever_the_arrival_order():
    orders = [[("worker", 2), ("worker", 0), ("worker", 1)], [("worker", 1), ("worker", 2), ("worker", 0)]]
    tables = []
    for order in orders:
        r = Registry(1, 3)
        r.add("server", None, "s")
        for role, rank in order:
            r.add(role, rank, "w%d" % rank)
        tables.append([(n["id"], n["address"]) for n in r.assign()])
    assert tables[0] == tables[1] == [(1, "s"), (2, "w0"), (3, "w1"), (4, "w2")]


def test_duplicate_and_out_of_range_ranks_are_refused():
    r = Registry(1, 2)
    r.add("worker", 1, "first")
    with pytest.raises(ClusterError, match="worker rank 1 was already taken by the node at first"):
        r.add("worker", 1, "second")
    with pytest.raises(ClusterError, match=r"worker rank 2 is out of range: the job has 2 workers \(ranks 0..1\)"):
        r.add("worker", 2, "third")
    with pytest.raises(ClusterError, match="role 'driver'"):
        r.add("driver", None, "x")


def test_a_full_role_refuses_more_nodes():
    r = Registry(1, 1)
    r.add("server", None, "s")
    with pytest.raises(ClusterError, match="already has its 1 server"):
        r.add("server", None, "s2")


def test_missing_names_roles_and_ranks():
    r = Registry(2, 3)
    r.add("worker", 2, "w")
    r.add("worker", None, "w")
    assert r.missing() == "2 of 2 servers (ranks 0, 1) and 1 of 3 workers (rank 1) never registered"
    r.add("server", None, "s")
    r.add("server", None, "s")
    r.add("worker", None, "w")
    assert r.missing() == ""


def test_bad_counts_are_config_errors():
    with pytest.raises(ConfigError, match="number of servers"):
        Registry(0, 1)
    with pytest.raises(ConfigError, match="number of workers"):
        Registry(1, "2")


def test_barrier_releases_when_every_expected_member_arrived():
    b = BarrierBook()
    assert b.enter("all", 1, "s", expected={1, 2, 3}) == []
    assert b.enter("workers", 2, "w2", expected={2, 3}) == []
    assert b.enter("workers", 3, "w3", expected={2, 3}) == ["w2", "w3"]
    assert b.enter("workers", 3, "again", expected={2, 3}) == []
    assert b.check("workers", expected={3}) == ["again"]
    assert b.drain() == ["s"] and b.waiting == {}


def test_heartbeats_overdue_oldest_first_and_forgotten_nodes_ignored():
    h = HeartbeatMonitor(timeout=1.0)
    for node, t in [(1, 0.0), (2, 0.5), (3, 2.0)]:
        h.beat(node, t)
    assert h.overdue(now=2.1) == [(1, 2.1), (2, pytest.approx(1.6))]
    h.forget(1)
    assert [n for n, _ in h.overdue(now=2.1)] == [2]
    assert h.age(3, now=2.5) == 0.5 and h.age(1, now=3) is None


def test_job_finishes_only_when_every_worker_finished():
    job = JobLifecycle(num_workers=2)
    job.start_running()
    assert job.worker_finished(0) is False and job.state == "running"
    assert job.worker_finished(0) is False
    assert job.worker_finished(1) is True and job.state == "finished"
    assert not job.fail("server 0 (node 1)", "late", RuntimeError("late"))
    assert job.state == "finished"


def test_job_fails_once_and_keeps_every_error():
    job = JobLifecycle(num_workers=2)
    job.start_running()
    first = RuntimeError("gone")
    assert job.fail("server 0 (node 1)", "gone", first)
    assert not job.fail("worker 1 (node 3)", "also gone", RuntimeError("x"))
    assert job.state == "failed" and job.failure is first
    assert [e["node"] for e in job.errors] == ["server 0 (node 1)", "worker 1 (node 3)"]

"""Request/reply, barriers and bounded tables between real Postoffices over inproc, ipc and tcp."""
import threading

import numpy as np
import pytest

from cluster import NodeCluster, live_threads, run_in_threads
from sparkps.errors import ClusterError, ConfigError, PeerTimeout, RemoteError


def echo(msg, responder):
    """Doubles every array and returns the meta it got."""
    responder.reply(meta={"got": msg.meta, "from": responder.sender}, arrays=[a * 2 for a in msg.arrays])


@pytest.fixture(params=["inproc", "tcp", "ipc"])
def cluster(request):
    c = NodeCluster(num_servers=2, num_workers=2, transport=request.param, handlers={"server": echo})
    yield c
    c.stop()


def test_nodes_get_ids_by_rank_and_know_each_other(cluster):
    assert [s.node_id for s in cluster.servers] == [1, 2] or sorted(s.node_id for s in cluster.servers) == [1, 2]
    for po in cluster.servers + cluster.workers:
        assert po.server_ids == [1, 2] and po.worker_ids == [3, 4]
        assert po.num_servers == 2 and po.num_workers == 2
        assert po.node_id == (1 + po.rank if po.role == "server" else 3 + po.rank)
    assert cluster.workers[0].peer_name(1) == "server 0 (node 1)"


def test_request_reply_carries_meta_and_arrays(cluster):
    worker = cluster.workers[0]
    payload = np.arange(10, dtype=np.float32)
    reply = worker.wait(worker.request(2, "PULL", meta={"keys": [1, 2]}, arrays=[payload]))
    assert reply.meta == {"got": {"keys": [1, 2]}, "from": worker.node_id}
    np.testing.assert_array_equal(reply.arrays[0], payload * 2)


def test_many_concurrent_requests_each_get_their_own_reply(cluster):
    errors = []

    def client(worker, tag):
        try:
            for i in range(100):
                rid = worker.request(1 + i % 2, "PUSH", meta={"i": i, "tag": tag}, arrays=[np.full(3, i, np.int64)])
                reply = worker.wait(rid)
                assert reply.meta["got"] == {"i": i, "tag": tag}
                assert reply.arrays[0].tolist() == [2 * i] * 3
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(w, t)) for w in cluster.workers for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in threads)


def test_a_16mb_array_survives_the_trip(cluster):
    worker = cluster.workers[1]
    big = np.random.default_rng(0).standard_normal(4 << 20).astype(np.float32)
    np.testing.assert_array_equal(worker.wait(worker.request(1, "PUSH", arrays=[big])).arrays[0], big * 2)


def test_barriers_release_each_group(cluster):
    groups = [(po, "workers") for po in cluster.workers] + [(po, "servers") for po in cluster.servers]
    groups += [(po, "all") for po in cluster.workers + cluster.servers]
    errors = []

    def enter(po, group):
        try:
            po.barrier(group, timeout=10)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=enter, args=item) for item in groups]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors and not any(t.is_alive() for t in threads)


def test_barrier_timeout_names_the_scheduler(cluster):
    with pytest.raises(PeerTimeout, match=r"scheduler \(node 0\) to BARRIER"):
        cluster.workers[0].barrier("workers", timeout=0.2)
    with pytest.raises(ConfigError, match="barrier group"):
        cluster.workers[0].barrier("everyone")


def test_unknown_peer_is_an_error(cluster):
    with pytest.raises(ClusterError, match="no node 99"):
        cluster.workers[0].request(99, "PULL")


def test_ten_thousand_requests_leave_no_tracking_behind():
    with_late = {"n": 0}

    def handler(msg, responder):
        responder.reply()

    c = NodeCluster(num_servers=1, num_workers=1, transport="inproc", handlers={"server": handler})
    try:
        worker = c.workers[0]
        rids = []
        for _ in range(10000):
            rids.append(worker.request(1, "PULL"))
            if len(rids) == 50:
                for rid in rids:
                    worker.wait(rid)
                rids = []
                with_late["n"] += 1
        for rid in rids:
            worker.wait(rid)
        for _ in range(100):
            worker.request(1, "PULL", track=False)
        worker.wait(worker.request(1, "PULL"))
        assert worker.in_flight() == 0
        assert c.servers[0].in_flight() == 0
    finally:
        c.stop()


def test_handler_errors_come_back_as_remote_errors():
    def handler(msg, responder):
        if msg.cmd == "INIT":
            raise ValueError("key 3 is not initialised")
        if msg.cmd == "PULL":
            responder.error("unknown key 8")

    c = NodeCluster(num_servers=1, num_workers=1, handlers={"server": handler})
    try:
        worker = c.workers[0]
        with pytest.raises(RemoteError, match=r"server 0 \(node 1\) answered INIT.*ValueError: key 3"):
            worker.wait(worker.request(1, "INIT"))
        with pytest.raises(RemoteError, match="unknown key 8"):
            worker.wait(worker.request(1, "PULL"))
        with pytest.raises(RemoteError, match=r"worker 0 \(node 2\) does not serve PUSH"):
            c.servers[0].wait(c.servers[0].request(2, "PUSH"))
    finally:
        c.stop()


def test_replies_may_come_later_from_another_thread_and_timeouts_name_the_peer():
    parked = []

    def handler(msg, responder):
        if msg.meta.get("park"):
            parked.append(responder)
        else:
            responder.reply()

    c = NodeCluster(num_servers=1, num_workers=1, handlers={"server": handler})
    try:
        worker = c.workers[0]
        rid = worker.request(1, "PULL", meta={"park": True})
        with pytest.raises(PeerTimeout, match=r"no reply from server 0 \(node 1\) to PULL"):
            worker.wait(rid, timeout=0.2)
        rid = worker.request(1, "PULL", meta={"park": True})
        worker.wait(worker.request(1, "PULL"))
        threading.Thread(target=lambda: [p.reply(meta={"late": True}) for p in parked]).start()
        assert worker.wait(rid).meta == {"late": True}
        assert worker.in_flight() == 0
    finally:
        c.stop()


def test_stopping_a_cluster_leaves_no_threads():
    before = live_threads()
    c = NodeCluster(num_servers=2, num_workers=2, transport="tcp", handlers={"server": echo})
    c.workers[0].wait(c.workers[0].request(1, "PULL"))
    c.finish()
    c.stop()
    c.stop()
    assert live_threads() - before == set()
    assert c.scheduler.status()["state"] == "finished"


def test_inline_handlers_cannot_wait_but_threaded_ones_can():
    from cluster import cluster_timeouts
    from sparkps.comm import Postoffice
    from sparkps.scheduler import Scheduler

    def relay(index):
        def handle(msg, responder):  # PULL asks the other server, then answers: needs its own thread
            node = nodes[index]
            if msg.cmd == "PULL":
                other = [i for i in node.server_ids if i != node.node_id][0]
                responder.reply(meta=node.wait(node.request(other, "INIT"), 5).meta)
            else:
                responder.reply(meta={"from": node.node_id})
        return handle

    sched = Scheduler(2, 1, transport="inproc", timeouts=cluster_timeouts()).start()
    nodes = [Postoffice("server", sched.uri, sched.secret, rank=r, transport="inproc", timeouts=sched.timeouts)
             for r in (0, 1)]
    worker = Postoffice("worker", sched.uri, sched.secret, transport="inproc", timeouts=sched.timeouts)
    try:
        starts = [lambda: nodes[0].start(relay(0), threaded=True), lambda: nodes[1].start(relay(1)),
                  lambda: worker.start()]
        run_in_threads(starts, 20)  # registration needs all three at once; a failed start is re-raised
        assert worker.wait(worker.request(1, "PULL"), 5).meta == {"from": 2}
        with pytest.raises(RemoteError, match="cannot wait for a reply.*threaded=True"):
            worker.wait(worker.request(2, "PULL"), 5)
    finally:
        for po in [worker] + nodes:
            po.stop()
        sched.stop()


def test_a_reply_can_be_waited_for_on_another_thread_than_the_sender(cluster):
    worker = cluster.workers[0]
    (rids,) = run_in_threads([lambda: [worker.request(1, "PULL", meta={"n": n}) for n in range(20)]], 10)
    assert [worker.wait(rid, 5).meta["got"]["n"] for rid in rids] == list(range(20))
    assert worker.in_flight() == 0


def test_short_lived_sender_threads_do_not_pile_up_sockets():
    c = NodeCluster(num_servers=1, num_workers=1, handlers={"server": echo})
    try:
        worker = c.workers[0]
        for _ in range(30):  # each call on a thread of its own that then ends; their errors are re-raised
            run_in_threads([lambda: worker.wait(worker.request(1, "PULL"), 5)], 10)
        worker.wait(worker.request(1, "PULL"), 5)
        assert len(worker._endpoint.van._channels._channels) <= 3  # the main thread's and at most a couple
    finally:
        c.stop()


def test_a_node_whose_handler_holds_its_io_thread_past_the_heartbeat_timeout_is_not_declared_dead():
    """A server's first sparse pull may spend seconds in its inline handler (numba loading the id index on a loaded
    machine): its heartbeats go on their own thread and channel, so the scheduler does not call it dead."""
    import time

    from cluster import cluster_timeouts

    def slow(msg, responder):
        if msg.meta.get("slow"):
            time.sleep(1.5)      # holds the I/O thread: the handler runs inline
        responder.reply()

    c = NodeCluster(num_servers=1, num_workers=1, transport="tcp", handlers={"server": slow},
                    timeouts=cluster_timeouts(heartbeat_interval=0.1, heartbeat_timeout=0.6))
    try:
        worker = c.workers[0]
        worker.wait(worker.request(1, "PULL", meta={"slow": True}), timeout=10)
        status = c.scheduler.status()
        assert status["state"] == "running" and status["errors"] == []
        assert c.servers[0].failure is None
        c.finish()
    finally:
        c.stop()


def test_the_heartbeat_thread_waits_between_heartbeats_instead_of_spinning(monkeypatch):
    """Before its first heartbeat a node's heartbeat channel has no socket to poll: it must wait, not spin. A poll
    that waited for nothing is followed by a wait of its slice, so the thread's next poll comes a slice later."""
    import threading
    import time

    from cluster import cluster_timeouts
    from sparkps.comm.van import Van

    calls, enough = {}, threading.Event()     # per thread: (start, slice, polled) of each poll_own
    poll_own = Van.poll_own

    def recorded(self, timeout_s):
        started = time.monotonic()
        polled = poll_own(self, timeout_s)
        mine = calls.setdefault(threading.current_thread().name, [])
        mine.append((started, timeout_s, polled))
        if sum(len(c) for c in calls.values()) >= 16:
            enough.set()
        return polled

    monkeypatch.setattr(Van, "poll_own", recorded)
    c = NodeCluster(num_servers=1, num_workers=1, handlers={"server": echo},
                    timeouts=cluster_timeouts(heartbeat_interval=1.0, heartbeat_timeout=10.0))
    try:
        assert enough.wait(30), calls
        idle = [(later[0] - start, step) for mine in map(list, list(calls.values()))
                for (start, step, polled), later in zip(mine, mine[1:]) if not polled]
        assert len(idle) >= 8 and all(gap >= 0.9 * step for gap, step in idle), idle[:20]
        c.finish()
    finally:
        c.stop()

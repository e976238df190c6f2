"""A job secret guards every node; strangers and garbage are dropped and the job still finishes."""
import select
import socket
import threading

import numpy as np
import pytest
import zmq

from cluster import NodeCluster, cluster_timeouts, start_all
from sparkps.comm import Endpoint, Message, Postoffice, encode
from sparkps.comm.message import curve_available
from sparkps.errors import ConfigError, PeerTimeout
from sparkps.scheduler import Scheduler


def echo(msg, responder):
    responder.reply(arrays=msg.arrays)


def assert_job_works(cluster):
    worker = cluster.workers[0]
    reply = worker.wait(worker.request(1, "PULL", arrays=[np.arange(4.0)]), timeout=5)
    np.testing.assert_array_equal(reply.arrays[0], np.arange(4.0))
    cluster.finish()
    assert cluster.scheduler.status()["state"] == "finished"


def test_a_node_without_the_secret_cannot_register_and_the_job_still_finishes():
    c = NodeCluster(num_servers=1, num_workers=1, transport="tcp", handlers={"server": echo})
    stranger = Postoffice("worker", c.scheduler.uri, "guessed-secret", timeouts=cluster_timeouts(register=0.3))
    try:
        with pytest.raises(PeerTimeout, match="is the job secret the same"):
            stranger.start()
        assert c.scheduler.status()["dropped_messages"] >= 1
        assert_job_works(c)
    finally:
        stranger.stop()
        c.stop()


def test_a_stranger_cannot_push_or_pull_on_a_server():
    c = NodeCluster(num_servers=1, num_workers=1, transport="tcp", handlers={"server": echo})
    stranger = Endpoint("stranger", "guessed-secret")
    stranger.start()
    try:
        rid = stranger.request(c.servers[0].address, "server 0", "PULL", {"keys": [0]})
        with pytest.raises(PeerTimeout):
            stranger.wait(rid, 0.3)
        assert c.servers[0].dropped_messages >= 1
        assert_job_works(c)
    finally:
        stranger.stop()
        c.stop()


def tcp_port(address):
    return int(address.rsplit(":", 1)[1])


def test_random_bytes_on_every_port_crash_nothing():
    c = NodeCluster(num_servers=1, num_workers=1, transport="tcp", handlers={"server": echo})
    rng = np.random.default_rng(1)
    addresses = [c.scheduler.uri] + [po.address for po in c.servers + c.workers]
    context = zmq.Context()
    try:
        for address in addresses:
            for size in (1, 10, 64, 4096):  # raw TCP garbage: not even a ZMTP greeting
                with socket.create_connection(("127.0.0.1", tcp_port(address)), timeout=2) as raw:
                    raw.sendall(rng.bytes(size))
            dealer = context.socket(zmq.DEALER)
            dealer.linger = 0
            dealer.connect(address)
            for n in range(1, 5):  # well-formed ZeroMQ messages with garbage frames
                dealer.send_multipart([rng.bytes(int(rng.integers(0, 300))) for _ in range(n)])
            dealer.send_multipart(encode(Message("PUSH", arrays=[np.ones(3)]), b"wrong key"))
            dealer.send_multipart([b""])
            dealer.close(0)
        assert_job_works(c)
        assert c.scheduler.status()["dropped_messages"] > 0
    finally:
        context.term()
        c.stop()


def test_a_secret_is_required_and_generated_when_not_given():
    with pytest.raises(ConfigError, match="secret is required"):
        Postoffice("worker", "tcp://127.0.0.1:1", "")
    sched = Scheduler(1, 1)
    assert len(sched.secret) == 64 and sched.secret != Scheduler(1, 1).secret
    sched.stop()


@pytest.mark.skipif(not curve_available(), reason="libzmq without CURVE")
def test_curve_encrypted_cluster_trains_and_plain_nodes_cannot_join():
    c = NodeCluster(num_servers=1, num_workers=1, transport="tcp", handlers={"server": echo}, curve=True)
    plain = Endpoint("plain", c.scheduler.secret)  # right secret, no CURVE: the handshake fails
    plain.start()
    try:
        rid = plain.request(c.servers[0].address, "server 0", "PULL")
        with pytest.raises(PeerTimeout):
            plain.wait(rid, 0.3)
        assert_job_works(c)
    finally:
        plain.stop()
        c.stop()


class WireTap:
    """A TCP relay on 127.0.0.1 in front of ``upstream`` (``tcp://host:port``) that keeps every byte it
    forwards, both ways. ``uri`` is where peers connect instead; ``close()`` ends it (idempotent)."""

    def __init__(self, upstream):
        host, port = upstream.rsplit("/", 1)[-1].rsplit(":", 1)
        self.upstream, self.captured, self._lock = (host, int(port)), bytearray(), threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.uri = f"tcp://127.0.0.1:{self._listener.getsockname()[1]}"
        self._sockets, self._closed = [self._listener], False
        self._thread = threading.Thread(target=self._pump, daemon=True, name="wire-tap")
        self._thread.start()

    def _pump(self):
        peers = {}
        while not self._closed:
            readable, _, _ = select.select(list(peers) + [self._listener], [], [], 0.05)
            for sock in readable:
                if sock is self._listener:
                    client, _ = self._listener.accept()
                    server = socket.create_connection(self.upstream)
                    peers[client], peers[server] = server, client
                    self._sockets += [client, server]
                    continue
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    other = peers.pop(sock, None)
                    peers.pop(other, None)
                    continue
                with self._lock:
                    self.captured += data
                peers[sock].sendall(data)

    def close(self):
        if not self._closed:
            self._closed = True
            self._thread.join(5)
            for sock in self._sockets:
                sock.close()

    def seen(self, text):
        with self._lock:
            return text in self.captured


def exchange_marked_traffic(curve):
    """A worker that reaches the scheduler through a WireTap sends a marked progress report and a marked
    array; returns the tap (closed) once the job finished cleanly."""
    timeouts = cluster_timeouts()
    sched = Scheduler(1, 1, transport="tcp", timeouts=timeouts, curve=curve).start()
    tap = WireTap(sched.uri)
    server = Postoffice("server", sched.uri, sched.secret, timeouts=timeouts, curve=curve)
    worker = Postoffice("worker", tap.uri, sched.secret, timeouts=timeouts, curve=curve)
    try:
        assert start_all([server, worker]) == [None, None]
        worker.report_progress({"epoch": 0, "nbatch": 1, "samples": 1, "metrics": {"MARKER-metric-4711": 0.5}})
        marked = np.frombuffer(b"MARKER-array-0815" * 4, np.uint8)
        status = worker.wait(worker.request(0, "STATUS", arrays=[marked]), 5).meta["status"]
        assert "MARKER-metric-4711" in status["progress"][0]["metrics"]  # it crossed the tap
        worker.finish()
        sched.wait(10)
        server.wait_for_termination(10)
    finally:
        worker.stop()
        server.stop()
        sched.stop()
        tap.close()
    return tap


@pytest.mark.skipif(not curve_available(), reason="libzmq without CURVE")
def test_curve_traffic_on_the_wire_carries_no_plaintext():
    plain = exchange_marked_traffic(curve=False)   # the tap does see plaintext when CURVE is off
    assert plain.seen(b"MARKER-metric-4711") and plain.seen(b"MARKER-array-0815") and plain.seen(b"PROGRESS")
    tapped = exchange_marked_traffic(curve=True)
    assert len(tapped.captured) > 1000
    for text in (b"MARKER-metric-4711", b"MARKER-array-0815", b"PROGRESS", b"REGISTER", b"worker"):
        assert not tapped.seen(text), text


def test_a_holder_of_the_secret_cannot_speak_as_a_registered_node_from_another_session():
    c = NodeCluster(num_servers=1, num_workers=1, transport="tcp", handlers={"server": echo})
    worker = c.workers[0]
    impostor = Endpoint("impostor", c.scheduler.secret)  # the right secret, the worker's node id, its own session
    impostor.node_id = worker.node_id
    impostor.join(c.scheduler.job_id)   # and the job's id (a STATUS reply carries it)
    impostor.start()
    try:
        rid = impostor.request(c.servers[0].address, "server 0", "PULL", arrays=[np.ones(2)])
        with pytest.raises(PeerTimeout):
            impostor.wait(rid, 0.5)
        reason = "not the registered session of node %d" % worker.node_id
        assert c.servers[0].refused_reasons == {reason: 1}
        rid = impostor.request(c.scheduler.uri, "scheduler", "FINISH")
        with pytest.raises(PeerTimeout):
            impostor.wait(rid, 0.5)
        status = c.scheduler.status()
        assert status["state"] == "running" and status["refused_messages"] == 1  # the forged FINISH was refused
        assert_job_works(c)
    finally:
        impostor.stop()
        c.stop()


def test_a_message_of_another_job_with_the_same_secret_is_refused_and_counted():
    """Job A's REGISTER and PULL, signed with the secret job B reuses, are refused by B's scheduler and server
    (each message carries its job's id, drawn by the job's scheduler and sent in the node table)."""
    a = NodeCluster(num_servers=1, num_workers=1, transport="tcp", handlers={"server": echo})
    timeouts = cluster_timeouts()
    b_sched = Scheduler(1, 1, transport="tcp", secret=a.scheduler.secret, timeouts=timeouts).start()
    b_nodes = [Postoffice(role, b_sched.uri, b_sched.secret, timeouts=timeouts) for role in ("server", "worker")]
    replayer = Endpoint("job A's worker", a.scheduler.secret)   # sends what job A's worker sent: A's job id
    replayer.join(a.scheduler.job_id)
    replayer.node_id = -1
    replayer.start()
    try:
        assert a.workers[0]._endpoint.job == a.scheduler.job_id != b_sched.job_id
        rid = replayer.request(b_sched.uri, "scheduler", "REGISTER",
                               {"role": "worker", "rank": None, "address": replayer.address})
        with pytest.raises(PeerTimeout):
            replayer.wait(rid, 0.5)
        assert b_sched.status()["refused_messages"] == 1 and b_sched.status()["registered"] == 0
        assert not any(start_all(b_nodes, {"server": echo}))       # B's own nodes still register
        server, worker = b_nodes
        replayer.node_id = a.workers[0].node_id
        rid = replayer.request(server.address, "server 0", "PULL", arrays=[np.ones(2)])
        with pytest.raises(PeerTimeout):
            replayer.wait(rid, 0.5)
        assert server.refused_reasons == {"from another job": 1}
        reply = worker.wait(worker.request(server.server_ids[0], "PULL", arrays=[np.arange(3.0)]), timeout=5)
        np.testing.assert_array_equal(reply.arrays[0], np.arange(3.0))
        worker.finish()
        b_sched.wait(10)
        assert b_sched.status()["state"] == "finished"
        assert_job_works(a)
    finally:
        replayer.stop()
        for node in b_nodes:
            node.stop()
        b_sched.stop()
        a.stop()

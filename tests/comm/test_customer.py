"""Request tracking without sockets."""
import threading

import pytest

from sparkps.comm import Customer, Message
from sparkps.errors import NodeDied, PeerTimeout, RemoteError


def test_wait_returns_the_reply_and_forgets_the_request():
    c = Customer()
    rid = c.new_request("server 0 (node 1)", "PULL")
    threading.Timer(0.01, c.complete, args=(rid, Message("PULL", reply=True))).start()
    assert c.wait(rid, timeout=5).cmd == "PULL"
    assert c.in_flight() == 0


def test_timeout_names_peer_command_and_request():
    c = Customer()
    rid = c.new_request("server 1 (node 2)", "PUSH")
    with pytest.raises(PeerTimeout, match=r"server 1 \(node 2\) to PUSH \(request %d\)" % rid) as info:
        c.wait(rid, timeout=0.01)
    assert info.value.node == "server 1 (node 2)"
    assert c.in_flight() == 0


def test_error_reply_raises_remote_error_with_the_remote_text():
    c = Customer()
    rid = c.new_request("server 0 (node 1)", "INIT")
    c.complete(rid, Message("ERROR", reply=True, err="key 3 has shape (2,), expected (4,)"))
    with pytest.raises(RemoteError, match=r"server 0 \(node 1\) answered INIT .*key 3 has shape"):
        c.wait(rid, timeout=1)


def test_late_and_unknown_replies_are_dropped():
    c = Customer()
    rid = c.new_request("peer", "PULL")
    with pytest.raises(PeerTimeout):
        c.wait(rid, timeout=0.001)
    assert c.complete(rid, Message("PULL")) is False
    assert c.complete(12345, Message("PULL")) is False
    assert c.in_flight() == 0


def test_failure_wakes_present_and_future_waiters():
    c = Customer()
    rid = c.new_request("peer", "PULL")
    threading.Timer(0.01, c.fail_all, args=(NodeDied("server 0 (node 1) stopped sending heartbeats"),)).start()
    with pytest.raises(NodeDied, match="heartbeats"):
        c.wait(rid, timeout=5)
    with pytest.raises(NodeDied):
        c.wait(c.new_request("peer", "PUSH"), timeout=5)


def test_discard_forgets_a_request():
    c = Customer()
    rid = c.new_request("peer", "PULL")
    c.discard(rid)
    assert c.in_flight() == 0
    with pytest.raises(KeyError):
        c.wait(rid, timeout=0.01)

"""A node whose id is not known yet holds the requests it gets and serves them, in order, once it is."""
import pytest

from sparkps.comm.postoffice import Endpoint
from sparkps.errors import PeerTimeout

SECRET = "registration-order-secret"


def echo(msg, responder):
    responder.reply(meta={"i": msg.meta["i"]})


@pytest.fixture
def pair():
    server = Endpoint("server (unregistered)", SECRET, echo, hold_requests=True)
    client = Endpoint("client", SECRET)
    server.start()
    client.start()
    client.node_id = 7
    yield server, client
    client.stop()
    server.stop()


def test_requests_before_registration_are_answered_after_it_as_the_registered_node(pair):
    server, client = pair
    rids = [client.request(server.address, "server 0", "PULL", {"i": i}) for i in range(5)]
    with pytest.raises(PeerTimeout):  # held: nothing is answered before the node knows its id
        client.wait(client.request(server.address, "server 0", "PULL", {"i": -1}), 0.5)
    server.registered(1, "server 0 (node 1)")
    replies = [client.wait(rid, 10) for rid in rids]
    assert [r.meta["i"] for r in replies] == list(range(5))
    assert {r.sender for r in replies} == {1}
    assert server.name == "server 0 (node 1)"
    assert client.wait(client.request(server.address, "server 0", "PULL", {"i": 9}), 10).sender == 1


def test_an_endpoint_that_does_not_hold_serves_at_once():
    server, client = Endpoint("scheduler", SECRET, echo), Endpoint("client", SECRET)
    server.start()
    client.start()
    try:
        assert client.wait(client.request(server.address, "scheduler", "PULL", {"i": 3}), 10).meta == {"i": 3}
    finally:
        client.stop()
        server.stop()

"""The request layer under both sides, and the server's seams (tables, round policies), without sockets."""
import numpy as np
import pytest

from cluster import RecordingResponder
from sparkps.comm import protocol
from sparkps.comm.codec import create_codec
from sparkps.comm.message import Message
from sparkps.errors import ClusterError, ConfigError, MalformedMessage
from sparkps.server.kvserver import KVServer
from sparkps.server.policy import ROUND_POLICIES, AsyncUpdates, create_policy
from sparkps.server.tables import TABLE_KINDS, create_table, register_table_kind
from sparkps.server.tables.dense import DenseTable


@pytest.mark.parametrize("request_", [
    protocol.Init([[0, 0, 3]], [[0, [3]]], sync=True, values=None),
    protocol.Push([1, 2], round=4, table="emb"),
    protocol.Pull([1], round=2),
    protocol.PushPull([0], round=1),
    protocol.SetOptimizer({"name": "sgd"}),
    protocol.Command("set_lr", lr=0.5),
    protocol.Command("save", path="/tmp/x"),
    protocol.Leave(7),
])
def test_every_request_survives_its_encoding(request_):
    arrays = [np.zeros(3, np.float32)] if isinstance(request_, (protocol.Push, protocol.PushPull)) else []
    msg = Message(protocol.command_of(request_), meta=request_.meta(), arrays=arrays)
    parsed = protocol.parse_request(msg)
    assert type(parsed) is type(request_)
    assert parsed._replace(**({"values": None} if arrays else {})) == request_


@pytest.mark.parametrize("cmd,meta,arrays,field", [
    ("PUSH", {"keys": "0"}, 1, "'keys'"),
    ("PUSH", {"keys": [0, -1]}, 1, "'keys'"),
    ("PUSH", {"keys": [0], "round": "1"}, 1, "'round'"),
    ("PUSH", {"keys": [0]}, 0, "one float32 or float16 array"),
    ("PULL", {"keys": [0], "table": 5}, 0, "'table'"),
    ("INIT", {"pieces": [[0, 0]], "shapes": []}, 0, "'pieces'"),
    ("INIT", {"pieces": [], "shapes": [[0, [-1]]]}, 0, "'shapes'"),
    ("INIT", {"pieces": [], "shapes": [], "sync": 1}, 0, "'sync'"),
    ("SET_OPTIMIZER", {"config": "sgd"}, 0, "'config'"),
    ("COMMAND", {"name": "reboot"}, 0, "'name'"),
    ("COMMAND", {"name": "set_lr", "lr": True}, 0, "'lr'"),
    ("COMMAND", {"name": "save"}, 0, "'path'"),
    ("LEAVE", {"round": 1.5}, 0, "'round'"),
    ("HEARTBEAT", {}, 0, "does not serve HEARTBEAT"),
])
def test_a_malformed_request_is_refused_naming_the_field(cmd, meta, arrays, field):
    msg = Message(cmd, meta=meta, arrays=[np.zeros(2, np.float32)] * arrays)
    with pytest.raises(MalformedMessage, match=field):
        protocol.parse_request(msg)


class _Postoffice:
    worker_ids = [5, 6]


def _Responder():
    return RecordingResponder('ERROR')


def test_server_sync_push_without_a_round_names_the_field_and_pulls_wait_for_the_round():
    server = KVServer(_Postoffice())
    init = protocol.Init([[0, 0, 2]], [[0, [2]]], sync=True)
    server.handle(Message("INIT", sender=5, meta=init.meta(), arrays=[np.ones(2, np.float32)]), _Responder())
    with pytest.raises(MalformedMessage, match="'round'"):
        server.handle(Message("PUSH", sender=5, meta={"keys": [0]}, arrays=[np.ones(2, np.float32)]), _Responder())
    pull = _Responder()
    for sender in (5, 6):
        server.handle(Message("PUSH", sender=sender, meta=protocol.Push([0], 1).meta(),
                              arrays=[np.full(2, 2.0, np.float32)]), _Responder())
        if sender == 5:
            server.handle(Message("PULL", sender=5, meta=protocol.Pull([0], 1).meta()), pull)
            assert pull.replies == []  # parked until the round is complete
    assert pull.replies[0][1][0].tolist() == [4.0, 4.0]  # no optimizer: the summed gradient
    with pytest.raises(ConfigError, match="no table 'emb'"):
        server.handle(Message("PULL", sender=5, meta=protocol.Pull([0], 1, table="emb").meta()), pull)


def test_table_kinds_and_round_policies_are_registries():
    assert TABLE_KINDS["dense"] is DenseTable and isinstance(create_table("dense"), DenseTable)
    with pytest.raises(ConfigError, match="unknown server table 'rows' \\(known: dense"):
        create_table("rows")
    with pytest.raises(ConfigError, match="already registered"):
        register_table_kind("dense", dict)
    assert set(ROUND_POLICIES) >= {"sync", "async"}
    with pytest.raises(ConfigError, match="unknown round policy 'easgd'"):
        create_policy("easgd", [1])


def test_async_policy_applies_every_push_at_once():
    policy = AsyncUpdates([1, 2])
    (done,) = policy.push(1, 0, {"dense": "update"})
    assert (done.updates, done.scale) == ({"dense": "update"}, 1.0)
    assert policy.wait_pull(9, "token") is True and policy.leave(2) == [] and policy.parked() == []


def test_sync_policy_refuses_a_stranger():
    with pytest.raises(ClusterError, match="node 9"):
        create_policy("sync", [1]).push(9, 1, {})


def test_a_step_carries_the_dense_push_and_every_table_and_names_a_bad_table_field():
    ids = np.array([3, 2 ** 63], np.uint64)
    step = protocol.PushPull([0, 1], round=5, tables=(
        protocol.TableStep("user", ids, np.ones(8, np.float32), ids[:1]),
        protocol.TableStep("item", pull_ids=ids)))
    arrays = [np.zeros(4, np.float32)] + [a for t in step.tables for a in t.arrays()]
    parsed = protocol.parse_request(Message("PUSHPULL", meta=step.meta(), arrays=arrays))
    assert (parsed.keys, parsed.round, [t.name for t in parsed.tables]) == ([0, 1], 5, ["user", "item"])
    np.testing.assert_array_equal(parsed.tables[0].grads, np.ones(8))
    np.testing.assert_array_equal(parsed.tables[1].pull_ids, ids)
    assert parsed.tables[1].push_ids is None and parsed.as_push().values.size == 4
    arrays[3] = ids.astype(np.int64)
    with pytest.raises(MalformedMessage, match="table 'user': field 'pull ids' must be a uint64"):
        protocol.parse_request(Message("PUSHPULL", meta=step.meta(), arrays=arrays))
    with pytest.raises(MalformedMessage, match="needs 5 arrays"):
        protocol.parse_request(Message("PUSHPULL", meta=step.meta(), arrays=arrays[:4]))


def test_a_step_with_a_codec_header_carries_its_dense_gradient_encoded_and_its_rows_as_they_are():
    ids = np.array([3], np.uint64)
    step = protocol.PushPull([0], round=1, tables=(protocol.TableStep("user", ids, np.full(4, 0.7, np.float32)),))
    words, header = create_codec({"type": "2bit", "threshold": 0.5}).encode(np.array([0.7, -0.6, 0.1], np.float32), 0)
    meta = dict(step.meta(), codec=header)
    parsed = protocol.parse_request(Message("PUSHPULL", meta=meta, arrays=words + step.tables[0].arrays()))
    assert parsed.values.tolist() == [0.5, -0.5, 0.0]
    np.testing.assert_array_equal(parsed.tables[0].grads, np.full(4, 0.7, np.float32))
    with pytest.raises(MalformedMessage, match="2bit gradient of 3 values needs 1 int32 words"):
        protocol.parse_request(Message("PUSHPULL", meta=meta, arrays=[np.zeros(3, np.float32)]
                                       + step.tables[0].arrays()))


@pytest.mark.parametrize("name", sorted(ROUND_POLICIES))
def test_every_round_policy_declares_what_the_server_asks_of_it(name):
    policy = create_policy(name, [1, 2])
    assert isinstance(policy.needs_round, bool) and isinstance(policy.answers_round, bool)
    for method in ("push", "leave", "wait_pull", "mark_applied", "parked", "unapplied"):
        assert callable(getattr(policy, method)), method
    assert policy.unapplied(1) == 0        # nothing pushed yet: nothing waits unapplied
    if policy.answers_round:
        assert policy.applied == 0 and policy.is_stale(1) is False


def test_a_pulls_counts_frame_must_match_its_ids_in_length_and_dtype():
    ids = np.array([3, 9, 2 ** 63], np.uint64)
    pull = protocol.Pull([], None, "user", ids=ids, counts=np.array([1, 2, 3], np.uint32))
    parsed = protocol.parse_request(Message("PULL", meta=pull.meta(), arrays=pull.arrays()))
    assert parsed.counts.tolist() == [1, 2, 3] and parsed.peek is False
    for counts in (np.ones(2, np.uint32), np.ones(3, np.float32), np.ones(3, np.int64), np.ones((3, 1), np.uint32)):
        with pytest.raises(MalformedMessage, match=r"PULL of rows: field 'counts' must be a uint32 array of the 3 "
                                                   r"pulled ids' counts"):
            protocol.parse_request(Message("PULL", meta=pull.meta(), arrays=[ids, counts]))
    with pytest.raises(MalformedMessage, match="PULL of counted rows needs a uint64 ids array and a uint32 counts"):
        protocol.parse_request(Message("PULL", meta=pull.meta(), arrays=[ids]))
    with pytest.raises(MalformedMessage, match="fields 'counts' and 'peek' exclude each other"):
        protocol.parse_request(Message("PULL", meta={**pull.meta(), "peek": True}, arrays=pull.arrays()))
    peek = protocol.Pull([], None, "user", ids=ids, peek=True)
    assert protocol.parse_request(Message("PULL", meta=peek.meta(), arrays=peek.arrays())).peek is True
    step = protocol.PushPull([], tables=(protocol.TableStep("user", pull_ids=ids, pull_counts=np.ones(3, np.uint32)),))
    arrays = [np.zeros(0, np.float32)] + step.tables[0].arrays()
    assert protocol.parse_request(Message("PUSHPULL", meta=step.meta(), arrays=arrays)).tables[0].pull_counts.size == 3
    with pytest.raises(MalformedMessage, match=r"PUSHPULL step, table 'user': field 'counts' must be a uint32 array "
                                               r"of the 3 pulled ids' counts, got uint32 \(2,\)"):
        protocol.parse_request(Message("PUSHPULL", meta=step.meta(), arrays=arrays[:2] + [np.ones(2, np.uint32)]))
    with pytest.raises(MalformedMessage, match=r"\[table name, pushes, pulls, counted\] \(counted only with pulls\)"):
        protocol.parse_request(Message("PUSHPULL", meta={"keys": [], "tables": [["user", False, False, True]]},
                                       arrays=[np.zeros(0, np.float32)]))

"""NaN and infinity never reach the weights: a push holding one is refused naming the key or the table row, by
the local kvstore and by the servers (naming the worker too); with the server setting nonfinite='skip' the push
is dropped and counted and its sync round completes without it."""

import numpy as np
import pytest

from cluster import cluster_timeouts
from sparkps import kvstore, optimizer
from sparkps.errors import ConfigError, RemoteError
from sparkps.optimizer.finite import NonFinite, first_nonfinite, nonfinite_mode
from sparkps.rows.values import RowSparse

SHAPE = (3, 4)
PATIENT = cluster_timeouts(heartbeat_timeout=30.0)


def nan_at(index, value=np.nan):
    grad = np.ones(SHAPE, np.float32)
    grad.flat[index] = value
    return grad


def test_the_check_finds_nan_and_infinity_and_not_a_sum_that_overflows():
    assert first_nonfinite(np.full(10, 3e38, np.float32)) is None        # the fast sum overflows; the values are fine
    assert first_nonfinite(nan_at(5)) == 5
    assert first_nonfinite(nan_at(7, -np.inf)) == 7
    with pytest.raises(ConfigError, match=r"nonfinite must be 'fail' or 'skip', got 'ignore'"):
        nonfinite_mode("ignore")


def test_the_local_kvstore_refuses_a_nan_push_naming_the_key_and_row():
    kv = kvstore.create('local')
    kv.init('fc_weight', np.zeros(SHAPE, np.float32))
    kv.init('user', RowSparse(np.empty(0, np.int64), np.empty((0, 4), np.float32), (None, 4)))
    kv.set_optimizer(optimizer.create('sgd', learning_rate=0.1))
    with pytest.raises(NonFinite, match=r"kvstore push: a non-finite gradient value \(nan\) for key fc_weight "
                                        r"\(element 6 of its piece\)"):
        kv.push('fc_weight', nan_at(6))
    out = np.empty(SHAPE, np.float32)
    kv.pull('fc_weight', out=out)
    assert (out == 0).all()
    with pytest.raises(NonFinite, match=r"a non-finite gradient value \(inf\) for row 42 of table 'user'"):
        kv.push('user', RowSparse([41, 42], np.array([[1, 1, 1, 1], [1, np.inf, 1, 1]], np.float32), (None, 4)))


@pytest.mark.parametrize("kvtype", ["dist_sync", "dist_async"])
def test_the_servers_refuse_a_nan_push_naming_the_worker_and_the_key(ps_cluster, kvtype):
    def work(kv):
        kv.init(0, np.zeros(SHAPE, np.float32))
        kv.init('user', RowSparse(np.empty(0, np.int64), np.empty((0, 4), np.float32), (None, 4)))
        kv.set_optimizer(optimizer.create('sgd', learning_rate=0.1))
        if kv.rank != 1:
            return None
        messages = []
        for push in (lambda: kv.push(0, nan_at(9)),
                     lambda: kv.push('user', RowSparse([5], np.array([[0, np.nan, 0, 0]], np.float32), (None, 4)))):
            with pytest.raises(RemoteError) as caught:
                push()
                kv.pull(0, out=np.empty(SHAPE, np.float32))      # an async push's error comes with the next wait
            messages.append(str(caught.value))
        return messages

    with ps_cluster(num_servers=1, num_workers=2, kvtype=kvtype, timeouts=PATIENT) as cluster:
        _, (dense, rows) = cluster.run_workers(work, timeout=60)
        assert (cluster.servers[0].dense.weight(0) == 0).all()
    assert "NonFinite: worker 1 (node " in dense and "a non-finite gradient value (nan) for key 0 (element 9" in dense
    assert "NonFinite: worker 1 (node " in rows and "for row 5 of table 'user'" in rows


def test_with_nonfinite_skip_a_sync_round_completes_without_the_nan_push(ps_cluster, monkeypatch):
    monkeypatch.setenv("SPARKPS_NONFINITE", "skip")

    def work(kv):
        kv.init(0, np.zeros(SHAPE, np.float32))
        kv.set_optimizer(optimizer.create('sgd', learning_rate=1.0, rescale_grad=1.0))
        out = np.empty(SHAPE, np.float32)
        for _ in range(3):
            kv.pushpull(0, nan_at(0) if kv.rank == 1 else np.ones(SHAPE, np.float32), out=out)
        return out, kv.server_stats() if kv.rank == 0 else None

    with ps_cluster(num_servers=1, num_workers=2, kvtype="dist_sync", timeouts=PATIENT) as cluster:
        (out, _), _ = cluster.run_workers(work, timeout=60)
        skipped = dict(cluster.servers[0].skipped)
    np.testing.assert_array_equal(out, np.full(SHAPE, -3.0, np.float32))   # worker 0's three steps only
    assert list(skipped.values()) == [3]


def test_init_with_nan_or_infinity_is_refused_naming_the_key(ps_cluster):
    def work(kv):
        messages = []
        for key, bad in ((3, np.nan), (4, np.inf)):
            with pytest.raises(RemoteError) as caught:
                kv.init(key, nan_at(4, bad))
            messages.append(str(caught.value))
        return messages

    with ps_cluster(num_servers=1, num_workers=1, timeouts=PATIENT) as cluster:
        (messages,) = cluster.run_workers(work, timeout=60)
        assert 3 not in cluster.servers[0].dense.slots and 4 not in cluster.servers[0].dense.slots
    assert all("INIT: a non-finite initial value" in m for m in messages), messages
    assert "(nan) for key 3 (element 4" in messages[0] and "(inf) for key 4 (element 4" in messages[1]


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("kvtype", ["dist_sync", "dist_async"])
def test_finite_pushes_that_drive_a_weight_to_infinity_are_refused(ps_cluster, kvtype):
    def work(kv):
        kv.init(0, np.zeros(SHAPE, np.float32))
        kv.set_optimizer(optimizer.create('sgd', learning_rate=1.0, rescale_grad=1.0))
        out = np.empty(SHAPE, np.float32)
        kv.pushpull(0, np.full(SHAPE, 3e38, np.float32), out=out)
        with pytest.raises(RemoteError) as caught:
            kv.pushpull(0, np.full(SHAPE, 3e38, np.float32), out=out)
        return str(caught.value)

    with ps_cluster(num_servers=1, num_workers=1, kvtype=kvtype, timeouts=PATIENT) as cluster:
        (message,) = cluster.run_workers(work, timeout=60)
    assert "the update made a weight non-finite (-inf) for key 0 (element 0 of its piece)" in message, message


def test_a_refused_sync_push_fails_its_round_for_every_waiting_worker_at_once(ps_cluster):
    """Worker 1's NaN push is refused; worker 0's pull of that round gets the refusal now, not a timeout."""
    def work(kv):
        kv.init(0, np.zeros(SHAPE, np.float32))
        kv.set_optimizer(optimizer.create('sgd', learning_rate=1.0))
        out = np.empty(SHAPE, np.float32)
        with pytest.raises(RemoteError) as caught:
            kv.push(0, nan_at(2) if kv.rank == 1 else np.ones(SHAPE, np.float32))
            kv.pull(0, out=out)
        return str(caught.value)

    with ps_cluster(num_servers=1, num_workers=2, kvtype="dist_sync",
                    timeouts=cluster_timeouts(heartbeat_timeout=30.0, request=20.0)) as cluster:
        waiting, pusher = cluster.run_workers(work, timeout=60)
    assert "a non-finite gradient value (nan) for key 0 (element 2" in pusher
    # the round's refusal, not the request timeout (20 s), is what worker 0's pull got
    assert "round 1 failed: NonFinite: worker 1 (node" in waiting and "(nan) for key 0 (element 2" in waiting

"""The sync_replicas and ssp round policies, fed events directly (no sockets)."""
import numpy as np
import pytest

from sparkps.errors import ClusterError, ConfigError
from sparkps.server.policy import BoundedStaleness, SyncReplicas, create_policy
from sparkps.server.policy.rounds import SyncRounds
from sparkps.server.tables.dense import DenseGradient


def grad(value):
    return {"dense": DenseGradient([0], [3], np.full(3, value, np.float32))}


def applied(rounds):
    return [(c.round, c.contributors, c.scale, c.updates["dense"].flat.tolist()) for c in rounds]


def test_a_round_applies_the_first_n_of_m_gradients_scaled_to_their_mean():
    policy = SyncReplicas([1, 2, 3, 4], replicas_to_aggregate=3)
    assert policy.push(1, 1, grad(1.0)) == [] and policy.push(3, 1, grad(2.0)) == []
    # workers scale by 1/M: sum * M/N is the mean of the N contributions (times M/M)
    assert applied(policy.push(4, 1, grad(6.0))) == [(1, 3, 4 / 3, [9.0, 9.0, 9.0])]


@pytest.mark.parametrize("make", [lambda: SyncRounds([1, 2, 3]),
                                  lambda: SyncReplicas([1, 2, 3], replicas_to_aggregate=3)])
def test_a_round_sums_its_gradients_in_the_order_of_the_workers_whatever_order_they_arrive_in(make):
    # in float32 (1e8 + 1) - 1e8 is 0 but (1e8 - 1e8) + 1 is 1: the order of a sum shows in its result
    values = {1: 1e8, 2: 1.0, 3: -1e8}
    sums = set()
    for order in ([1, 2, 3], [3, 2, 1], [2, 3, 1], [3, 1, 2]):
        policy = make()
        done = [c for worker in order for c in policy.push(worker, 1, grad(values[worker]))]
        sums.add(tuple(done[0].updates["dense"].flat.tolist()))
    assert sums == {(0.0, 0.0, 0.0)}


def test_a_round_that_a_worker_left_sums_every_push_that_waited_for_it():
    sums = set()
    for order in ([1, 3], [3, 1]):
        policy = SyncRounds([1, 2, 3])
        policy.leave(2)
        done = [c for worker in order for c in policy.push(worker, 1, grad({1: 1.0, 3: 2.0}[worker]))]
        sums.add(tuple(done[0].updates["dense"].flat.tolist()))
    assert sums == {(3.0, 3.0, 3.0)}      # worker 3's push, waiting for worker 2's, is in the sum


def test_gradients_of_an_applied_round_are_dropped_and_counted_per_worker():
    policy = SyncReplicas([1, 2, 3], replicas_to_aggregate=2)
    policy.push(1, 1, grad(1.0))
    assert len(policy.push(2, 1, grad(1.0))) == 1
    policy.mark_applied(1)
    assert policy.push(3, 1, grad(5.0)) == []  # worker 3 computed on round 0's weights: too late
    assert policy.dropped == 1 and policy.status()["dropped_by_worker"] == {"1": 0, "2": 0, "3": 1}
    # worker 3 continues from the current round: its next push (round 2) counts
    policy.push(3, 2, grad(1.0))
    assert applied(policy.push(1, 2, grad(1.0)))[0][:2] == (2, 2)


def test_a_pull_waits_for_its_round_and_is_released_when_it_is_applied():
    policy = SyncReplicas([1, 2], replicas_to_aggregate=1)
    assert policy.wait_pull(1, "w1") is False
    assert [c.round for c in policy.push(2, 1, grad(1.0))] == [1]
    assert policy.mark_applied(1) == ["w1"] and policy.parked() == []


def test_rounds_complete_with_the_workers_left_when_fewer_than_n_remain():
    policy = SyncReplicas([1, 2, 3], replicas_to_aggregate=2)
    policy.push(1, 1, grad(1.0))
    assert policy.leave(2) == []          # two workers still active: round 1 still waits for one of them
    assert policy.leave(3) != []          # only worker 1 is left, and it pushed
    assert applied(policy.push(1, 2, grad(2.0))) == [(2, 1, 3.0, [2.0, 2.0, 2.0])]


def test_a_worker_cannot_push_one_round_twice_or_after_leaving():
    policy = SyncReplicas([1, 2])
    policy.push(1, 1, grad(1.0))
    with pytest.raises(ClusterError, match="node 1 pushed round 1 twice"):
        policy.push(1, 1, grad(1.0))
    policy.leave(2)
    with pytest.raises(ClusterError, match="after it left"):
        policy.push(2, 2, grad(1.0))


@pytest.mark.parametrize("options,match", [
    ({"replicas_to_aggregate": 4}, "replicas_to_aggregate must be an int in 1..3"),
    ({"total_num_replicas": 5}, "total_num_replicas=5 but the cluster has 3 workers"),
    ({"replicas": 2}, "no option.s. replicas .known: replicas_to_aggregate, total_num_replicas"),
])
def test_bad_sync_replicas_options_are_config_errors_naming_them(options, match):
    with pytest.raises(ConfigError, match=match):
        create_policy("sync_replicas", [1, 2, 3], options)


def test_staleness_bound_holds_for_every_pull_of_a_random_schedule():
    rng = np.random.default_rng(7)
    s, workers = 2, [1, 2, 3]
    policy = BoundedStaleness(workers, max_staleness=s)
    clocks, waiting = {w: 0 for w in workers}, {}
    for _ in range(300):
        w = int(rng.choice([w for w in workers if w not in waiting]))
        clocks[w] += 1
        completed = policy.push(w, clocks[w], grad(1.0))
        released = [t for c in completed for t in policy.mark_applied(c.round)]
        if not policy.wait_pull(clocks[w], w):
            waiting[w] = clocks[w]
        for token in released:
            waiting.pop(token)
        for token in released + [w for w in [w] if w not in waiting]:
            assert clocks[token] - min(clocks.values()) <= s
        assert all(c - min(clocks.values()) > s for c in waiting.values())
    assert policy.waits > 0


def test_a_leaving_worker_no_longer_holds_the_others_back():
    policy = BoundedStaleness([1, 2], max_staleness=0)
    policy.push(1, 1, grad(1.0))
    assert policy.wait_pull(1, "p") is False
    done = policy.leave(2)
    assert [t for c in done for t in policy.mark_applied(c.round)] == ["p"]


def test_max_staleness_must_be_a_non_negative_int():
    with pytest.raises(ConfigError, match="max_staleness must be a non-negative int, got -1"):
        create_policy("ssp", [1], {"max_staleness": -1})

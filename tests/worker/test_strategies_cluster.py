"""dist_sync_replicas, bounded staleness and 2-bit pushes against a real in-process cluster."""
import threading
import time

import numpy as np
import pytest

from cluster import run_in_threads
from sparkps import kvstore, optimizer
from sparkps.errors import ConfigError

SHAPE = (4, 5)
LR = 0.5


def start(cluster, **options):
    """Create the cluster's worker kvstores with strategy ``options`` (what ``run_workers`` then uses)."""
    make = [lambda: kvstore.create(cluster.kvtype, scheduler_uri=cluster.uri, secret=cluster.secret,
                                   timeouts=cluster.timeouts, transport=cluster.transport,
                                   zmq_context=cluster.context, compression=cluster.compression, **options)
            for _ in range(cluster.num_workers)]
    cluster.kvstores = sorted(run_in_threads(make, 30), key=lambda kv: kv.rank)
    return cluster.kvstores


def gradient(rank, step):
    return np.random.default_rng(100 * rank + step).standard_normal(SHAPE).astype(np.float32)


def setup(kv, rescale):
    weights = np.ones(SHAPE, np.float32)
    kv.init(0, weights)
    kv.set_optimizer(optimizer.create("sgd", learning_rate=LR, rescale_grad=rescale))
    kv.pull(0, out=weights)
    return weights


def wait_until(condition, timeout=20.0):
    """Poll ``condition`` (state of a server thread) until it holds; fails after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition still false after %g s" % timeout
        time.sleep(0.01)


def test_rounds_go_on_without_a_held_worker_whose_late_gradient_is_dropped(ps_cluster):
    steps, held = 4, threading.Event()
    with ps_cluster(num_servers=2, num_workers=3, kvtype="dist_sync_replicas") as cluster:
        start(cluster, replicas_to_aggregate=2, total_num_replicas=3)

        def work(kv):
            weights = setup(kv, rescale=1 / 3)
            if kv.rank == 2:  # the test hook: rank 2 computes on round 0's weights, then waits
                late = gradient(2, 0)
                held.wait(30)
                kv.pushpull(0, late, out=weights)        # stale: dropped, weights of the current round back
                kv.pushpull(0, gradient(2, 1), out=weights)
            else:
                for step in range(steps):
                    kv.pushpull(0, gradient(kv.rank, step), out=weights)
                if kv.rank == 0:
                    stats = kv.server_stats()
                    held.set()
                    assert [s["applied"] for s in stats] == [steps, steps]  # rank 2 slowed no round
            kv.end_training()
            kv.pull(0, out=weights)
            return weights, kv.worker.stale_pushes, kv.server_stats()

        results = cluster.run_workers(work, timeout=60)
    expected = np.ones(SHAPE, np.float32)
    for step in range(steps):  # each round: the mean of ranks 0 and 1
        expected -= LR * (gradient(0, step) + gradient(1, step)) / 2
    expected -= LR * gradient(2, 1)  # the last round: rank 2 alone (the others left)
    for weights, _, _ in results:
        np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-5)
    assert [stale for _, stale, _ in results] == [0, 0, 1]
    assert [s["dropped"] for s in results[0][2]] == [1, 1]  # both servers dropped rank 2's late push
    assert sorted(results[0][2][0]["dropped_by_worker"].values()) == [0, 0, 1]


def test_uneven_data_ends_cleanly_when_fewer_than_n_workers_remain(ps_cluster):
    with ps_cluster(num_servers=1, num_workers=3, kvtype="dist_sync_replicas") as cluster:
        start(cluster, replicas_to_aggregate=2)

        def work(kv):
            weights = setup(kv, rescale=1 / 3)
            for step in range(1 + 3 * kv.rank):  # 1, 4 and 7 steps
                kv.pushpull(0, gradient(kv.rank, step), out=weights)
            kv.end_training()
            return kv.server_stats()[0]

        stats = cluster.run_workers(work, timeout=60)
    assert stats[0]["applied"] >= 7


def test_unknown_strategy_options_are_config_errors_naming_them(ps_cluster):
    with pytest.raises(ConfigError, match="kvstore 'dist_sync' has no option.s. max_staleness"):
        kvstore.create("dist_sync", scheduler_uri="tcp://127.0.0.1:1", secret="x", max_staleness=2)
    with pytest.raises(ConfigError, match="'dist_sync_replicas' has no option.s. replicas .known: replicas_to"):
        kvstore.create("dist_sync_replicas", scheduler_uri="tcp://127.0.0.1:1", secret="x", replicas=2)


def test_a_worker_more_than_max_staleness_rounds_ahead_waits_for_the_slowest(ps_cluster):
    steps, held, done = 4, threading.Event(), []
    with ps_cluster(num_servers=1, num_workers=2, kvtype="dist_async") as cluster:
        start(cluster, max_staleness=1)

        def work(kv):
            weights = setup(kv, rescale=1.0)
            if kv.rank == 1:
                held.wait(30)
            for step in range(steps):
                kv.pushpull(0, gradient(kv.rank, step), out=weights)
                done.append((kv.rank, step))
            kv.end_training()
            kv.pull(0, out=weights)
            return weights

        results = []
        workers = threading.Thread(target=lambda: results.extend(cluster.run_workers(work, timeout=60)))
        workers.start()
        wait_until(lambda: 0 in cluster.servers and cluster.servers[0]._policy is not None   # started, then parked
                   and len(cluster.servers[0]._policy.parked()) == 1)
        assert done == [(0, 0)]  # rank 0 pushed clock 2 but may not run 2 rounds ahead of rank 1 (clock 0)
        held.set()
        workers.join(60)
        assert cluster.servers[0]._policy.waits >= 1
    expected = np.ones(SHAPE, np.float32) - LR * sum(gradient(r, s) for r in (0, 1) for s in range(steps))
    for weights in results:
        np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-5)


def test_two_bit_pushes_apply_what_was_quantised_and_carry_the_rest(ps_cluster):
    t = 0.5
    with ps_cluster(num_servers=2, num_workers=1, kvtype="dist_sync", compression={"type": "2bit", "threshold": t}) \
            as cluster:
        def work(kv):
            weights = setup(kv, rescale=1.0)
            first = np.full(SHAPE, 0.3, np.float32)
            first[0] = [0.5, -0.5, 0.0, 0.7, -1.2]
            kv.pushpull(0, first, out=weights)
            after_one = weights.copy()
            kv.pushpull(0, np.full(SHAPE, 0.3, np.float32), out=weights)  # 0.3 + 0.3 carried: +t everywhere
            return after_one, weights.copy(), kv.bytes_per_step

        after_one, after_two, per_step = cluster.run_workers(work)[0]
    sent = np.zeros(SHAPE, np.float32)
    sent[0] = [t, -t, 0, t, -t]
    np.testing.assert_allclose(after_one, 1 - LR * sent)
    second = np.full(SHAPE, t, np.float32)
    second[0] = [0, 0, 0, t, 0]  # row 0 carried 0, 0, 0, 0.2, -0.7; plus 0.3 only 0.5 reaches t
    np.testing.assert_allclose(after_two, 1 - LR * (sent + second))
    assert per_step == 2 * 4  # 20 values on two servers (10 each): one int32 word per server


def test_progress_carries_the_bytes_a_step_pushes_and_the_stale_pushes(ps_cluster):
    with ps_cluster(num_servers=1, num_workers=1, kvtype="dist_sync_replicas",
                    compression={"type": "2bit", "threshold": 0.5}) as cluster:
        def work(kv):
            weights = setup(kv, rescale=1.0)
            kv.pushpull(0, gradient(0, 0), out=weights)
            kv.report_progress(epoch=0, nbatch=1, force=True)
            po = kv.postoffice
            return po.wait(po.request(0, "STATUS")).meta["status"]["progress"][kv.rank]["metrics"]

        metrics = cluster.run_workers(work)[0]
    assert metrics == {"push_bytes_per_step": 8.0, "stale_pushes": 0.0}  # 20 values: two int32 words

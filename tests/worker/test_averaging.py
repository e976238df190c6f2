"""dist_model_average and dist_easgd on quadratics with known answers, against a real in-process cluster."""
import threading

import numpy as np
import pytest

from cluster import run_in_threads
from sparkps import kvstore, optimizer
from sparkps.errors import ConfigError

SHAPE = (3, 4)
ETA = 0.1


def start(cluster, **options):
    make = [lambda: kvstore.create(cluster.kvtype, scheduler_uri=cluster.uri, secret=cluster.secret,
                                   timeouts=cluster.timeouts, transport=cluster.transport,
                                   zmq_context=cluster.context, **options)
            for _ in range(cluster.num_workers)]
    cluster.kvstores = sorted(run_in_threads(make, 30), key=lambda kv: kv.rank)


def target(rank):
    """Worker ``rank`` minimises 0.5 * |w - target|^2: its gradient is ``w - target``."""
    return np.full(SHAPE, 1.0 + 2.0 * rank, np.float32)


def descend(kv, steps, use_push_pull=False, lockstep=None):
    weights = np.zeros(SHAPE, np.float32)
    kv.init(0, weights)
    kv.pull(0, out=weights)
    kv.set_optimizer(optimizer.create("sgd", learning_rate=ETA, rescale_grad=1.0))
    for _ in range(steps):
        if lockstep is not None:
            lockstep.wait(30)
        if use_push_pull:
            kv.push(0, weights - target(kv.rank))
            kv.pull(0, out=weights)
        else:
            kv.pushpull(0, weights - target(kv.rank), out=weights)
    kv.end_training()
    kv.pull(0, out=weights)
    return weights


@pytest.mark.parametrize("use_push_pull", [False, True])
def test_model_average_every_k_steps_follows_the_closed_form(use_push_pull, ps_cluster):
    k, rounds = 3, 4
    with ps_cluster(num_servers=2, num_workers=2, kvtype="dist_model_average") as cluster:
        start(cluster, interval_steps=k)
        results = cluster.run_workers(lambda kv: descend(kv, k * rounds, use_push_pull))
    # k local steps take w to m + (1 - eta)^k (w - m) on average over the workers, m the mean target (2.0)
    expected = 2.0 * (1 - (1 - ETA) ** (k * rounds))
    for weights in results:
        np.testing.assert_allclose(weights, np.full(SHAPE, expected), rtol=1e-5)


def test_model_average_ends_cleanly_with_uneven_steps_and_keeps_the_last_ones(ps_cluster):
    with ps_cluster(num_servers=1, num_workers=2, kvtype="dist_model_average") as cluster:
        start(cluster, interval_steps=2)
        results = cluster.run_workers(lambda kv: descend(kv, 3 + 4 * kv.rank))
        assert cluster.kvstores[1]._local.meetings == 3
    # rank 0 steps 3 times, rank 1 seven (k = 2). Round 1 (step 2): both. Round 2: rank 0's final push
    # after its 3rd step with rank 1's 4th. Then rank 0 has left: rank 1 goes on alone from that average.
    def local(w, rank, steps):
        for _ in range(steps):
            w = w - ETA * (w - target(rank)[0, 0])
        return w
    w = (local(0.0, 0, 2) + local(0.0, 1, 2)) / 2
    w = (local(w, 0, 1) + local(w, 1, 2)) / 2
    expected = local(w, 1, 3)
    for weights in results:
        np.testing.assert_allclose(weights, np.full(SHAPE, expected), rtol=1e-5)


def test_easgd_with_one_worker_follows_the_elastic_recurrence(ps_cluster):
    tau, alpha, steps = 3, 0.3, 10
    with ps_cluster(num_servers=1, num_workers=1, kvtype="dist_easgd") as cluster:
        start(cluster, communication_period=tau, moving_rate=alpha)
        center = cluster.run_workers(lambda kv: descend(kv, steps))[0]
    local, want = np.zeros(SHAPE), np.zeros(SHAPE)
    for step in range(1, steps + 1):
        local -= ETA * (local - target(0))
        if step % tau == 0:
            d = local - want
            local, want = local - alpha * d, want + alpha * d
    np.testing.assert_allclose(center, want, rtol=1e-5)  # the final model is the center


def test_easgd_center_settles_at_the_minimum_of_the_summed_quadratics(ps_cluster):
    with ps_cluster(num_servers=2, num_workers=2, kvtype="dist_easgd") as cluster:
        start(cluster, communication_period=2)
        assert cluster.kvstores[0]._local.moving_rate == pytest.approx(0.9 / (2 * 2))
        lockstep = threading.Barrier(2)  # both workers take step i before either takes step i + 1
        results = cluster.run_workers(lambda kv: descend(kv, 400, lockstep=lockstep))
    # targets 1 and 3: at the fixed point the center is the workers' mean, 2; each meeting still moves it by
    # alpha * (local - center) (about 0.2 here) towards the worker that met, so it ends near, not at, 2
    for center in results:
        np.testing.assert_array_equal(center, results[0])
        assert np.all(np.abs(center - 2.0) < 0.35), center


@pytest.mark.parametrize("kvtype,options,match", [
    ("dist_model_average", {"interval_steps": 0}, "interval_steps must be a positive int, got 0"),
    ("dist_easgd", {"moving_rate": 1.5}, "moving_rate must be a number in .0, 1., got 1.5"),
    ("dist_easgd", {"interval_steps": 2}, "'dist_easgd' has no option.s. interval_steps"),
])
def test_bad_local_training_options_are_config_errors_naming_them(kvtype, options, match, ps_cluster):
    with ps_cluster(num_servers=1, num_workers=1, kvtype=kvtype) as cluster:
        with pytest.raises(ConfigError, match=match):
            start(cluster, **options)
        start(cluster)


@pytest.mark.parametrize("kvtype", ["dist_model_average", "dist_easgd"])
def test_a_sparse_table_is_refused_before_the_first_step(kvtype, ps_cluster):
    """Their optimizer runs on the worker's own weights; a sparse table's rows live on the servers only (before
    the refusal, EASGD trained the rows as SGD steps of rate 1 on the servers and the model could not score)."""
    import sparkps as sp
    from sparkps.train.feedforward import FeedForward
    ids = sp.sym.Variable("data")
    net = sp.sym.contrib.HashEmbedding(ids, output_dim=2, name="emb")
    net = sp.sym.SoftmaxOutput(sp.sym.FullyConnected(sp.sym.Flatten(net), num_hidden=2, name="fc"), name="softmax")
    with ps_cluster(num_servers=1, num_workers=1, kvtype=kvtype) as cluster:
        start(cluster)
        kv = cluster.kvstores[0]
        assert not kv.is_capable(kv.ROW_SPARSE) and not kv.is_capable(kv.PULL_STEP)
        model = FeedForward(net, num_epoch=1, optimizer="sgd", learning_rate=0.1, numpy_batch_size=4)
        with pytest.raises(ConfigError, match="kvstore '%s' cannot hold sparse embedding tables .* dist_sync" % kvtype):
            model.fit(np.arange(8, dtype=np.int64).reshape(8, 1), np.zeros(8, np.float32), kvstore=kv)


@pytest.mark.parametrize("kvtype,options,steps,held", [
    ("dist_model_average", {"interval_steps": 3}, 7, 6),     # 2 averages; the 7th step is only on the workers
    ("dist_easgd", {"communication_period": 2}, 5, 4),       # 2 elastic moves
])
def test_a_checkpoint_holds_each_workers_meetings_times_the_period(kvtype, options, steps, held, ps_cluster,
                                                                   tmp_path):
    """What a restart skips: the steps the servers' average / center holds, not the steps the workers took."""
    from sparkps.runtime.resume import read_point
    with ps_cluster(num_servers=2, num_workers=2, kvtype=kvtype) as cluster:
        start(cluster, **options)
        lockstep = threading.Barrier(2)

        def train(kv):
            weights = np.zeros(SHAPE, np.float32)
            kv.init(0, weights)
            kv.pull(0, out=weights)
            kv.set_optimizer(optimizer.create("sgd", learning_rate=ETA, rescale_grad=1.0))
            for _ in range(steps):
                kv.pushpull(0, weights - target(kv.rank), out=weights)
            lockstep.wait(30)              # both workers took every step before the save
            if kv.rank == 0:
                kv.save_checkpoint(str(tmp_path / "ckpt"), resume={"epoch": 0, "nbatch": steps, "step": steps})
            lockstep.wait(30)
            kv.end_training()

        run_in_threads([lambda kv=kv: train(kv) for kv in cluster.kvstores], 60)
    assert read_point(str(tmp_path / "ckpt")).steps == {"0": held, "1": held}

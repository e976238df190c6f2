"""DistKVStore against a real in-process cluster (scheduler, servers, workers over ZeroMQ inproc/tcp)."""
import numpy as np
import pytest

from sparkps import optimizer
from sparkps.comm.layout import KeyLayout
from sparkps.errors import ClusterError, ConfigError, RemoteError, ShapeError
from sparkps.param_group import ParameterGroup

SHAPES = {0: (6, 5), 1: (5,), 2: (5, 3), 3: (3,)}


def initial_weights():
    rng = np.random.default_rng(42)
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in SHAPES.items()}


def gradient(rank, step, key):
    rng = np.random.default_rng(1000 * rank + 10 * step + key)
    return rng.standard_normal(SHAPES[key]).astype(np.float32)


def train(kv, opt, steps, keys=None):
    """Init, set the optimizer, run ``steps`` push+pull steps; returns the weights after each step."""
    keys = sorted(SHAPES) if keys is None else keys
    weights = {k: w.copy() for k, w in initial_weights().items()}
    kv.init(keys, [weights[k] for k in keys])
    kv.set_optimizer(opt)
    kv.pull(keys, out=[weights[k] for k in keys])
    history = []
    for step in range(steps):
        kv.push(keys, [gradient(kv.rank, step, k) for k in keys])
        kv.pull(keys, out=[weights[k] for k in keys])
        history.append({k: w.copy() for k, w in weights.items()})
    kv.end_training()
    return history


def reference(opt_config, steps, contributors):
    """The same optimizer applied locally to the mean gradient of ``contributors(step)`` ranks."""
    opt = optimizer.from_config(opt_config)
    weights = initial_weights()
    states = {k: opt.create_state(k, w) for k, w in weights.items()}
    history = []
    for step in range(steps):
        ranks = contributors(step)
        for k in sorted(SHAPES):
            total = np.sum([gradient(r, step, k) for r in ranks], axis=0, dtype=np.float32)
            opt.update(k, weights[k], total * np.float32(2 / len(ranks)), states[k])
        history.append({k: w.copy() for k, w in weights.items()})
    return history


@pytest.mark.parametrize("name,kw", [("sgd", {"momentum": 0.9, "wd": 1e-3}), ("adam", {})])
def test_sync_every_worker_pulls_what_the_optimizer_computes_from_the_mean_gradient(name, kw, ps_cluster):
    opt = optimizer.create(name, learning_rate=0.05, rescale_grad=0.5, **kw)
    with ps_cluster(num_servers=2, num_workers=2) as cluster:
        histories = cluster.run_workers(lambda kv: train(kv, opt, steps=4))
    expected = reference(opt.to_config(), 4, lambda step: [0, 1])
    for history in histories:
        for got, want in zip(history, expected):
            for k in SHAPES:
                np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-7)


def test_sync_over_tcp_loopback(ps_cluster):
    opt = optimizer.create("sgd", learning_rate=0.1, rescale_grad=0.5)
    with ps_cluster(num_servers=1, num_workers=2, transport="tcp") as cluster:
        histories = cluster.run_workers(lambda kv: train(kv, opt, steps=2))
    expected = reference(opt.to_config(), 2, lambda step: [0, 1])
    for k in SHAPES:
        np.testing.assert_allclose(histories[1][-1][k], expected[-1][k], rtol=1e-6, atol=1e-7)


def flat_views(arrays):
    """Copies of ``arrays`` laid end to end in one ParameterGroup under the keys of SHAPES, as simple_bind
    lays out parameters."""
    keys = sorted(SHAPES)
    flat = np.concatenate([a.reshape(-1) for a in arrays])
    return ParameterGroup(["p%d" % k for k in keys], [a.shape for a in arrays], flat, keys=keys)


def test_parameter_group_span_only_joins_pieces_lying_end_to_end_in_order():
    group = ParameterGroup(["a", "b", "c"], [(3,), (4,), (2,)], np.arange(9, dtype=np.float32), keys=[5, 6, 7])
    assert group.span([(5, 0, 3), (6, 0, 4), (7, 0, 2)]).tolist() == list(range(9))
    assert group.span([(5, 2, 3), (6, 0, 1)]).tolist() == [2, 3]   # the end of one key, the start of the next
    assert group.span([(6, 0, 4), (5, 0, 3)]) is None              # out of order
    assert group.span([(5, 0, 3), (6, 1, 4)]) is None              # a gap
    assert group.span([(5, 0, 3), (8, 0, 1)]) is None              # a key the group does not hold
    assert group.array_of(6).tolist() == [3, 4, 5, 6] and group.offset_of(7) == 7


@pytest.mark.parametrize("servers", [1, 2])
def test_pushpull_of_flat_bound_parameters_over_tcp_equals_separate_arrays(servers, ps_cluster):
    """Gradients and weights that are views of one flat buffer go out without a copy and come back
    with one; the result is the same as with separate arrays (split across servers too)."""
    opt = optimizer.create("sgd", learning_rate=0.1, momentum=0.9, rescale_grad=0.5)
    keys = sorted(SHAPES)

    def run(kv, flat):
        weights = [initial_weights()[k] for k in keys]
        weights = flat_views(weights) if flat else [w.copy() for w in weights]
        kv.init(keys, weights)
        kv.set_optimizer(opt)
        for step in range(3):
            grads = [gradient(0, step, k) for k in keys]
            kv.pushpull(keys, flat_views(grads) if flat else grads, out=weights)
        kv.end_training()
        return [w.copy() for w in weights]
    results = []
    for flat in (True, False):
        with ps_cluster(num_servers=servers, num_workers=1, transport="tcp") as cluster:
            (got,) = cluster.run_workers(lambda kv, flat=flat: run(kv, flat))
            results.append(got)
    local = optimizer.from_config(opt.to_config())
    expected = initial_weights()
    states = {k: local.create_state(k, w) for k, w in expected.items()}
    for step in range(3):
        for k in keys:
            local.update(k, expected[k], gradient(0, step, k), states[k])
    for got in results:
        for k, w in zip(keys, got):
            np.testing.assert_allclose(w, expected[k], rtol=1e-6, atol=1e-7)


def sent_arrays(kv):
    """Record the numpy arrays every request of ``kv``'s node hands to the transport: [(cmd, [arrays])]."""
    sent, request = [], kv.postoffice.request

    def recording(peer_id, cmd, *args, **kwargs):
        given = list(args) + list(kwargs.values())
        sent.append((cmd, [a for x in given if isinstance(x, (list, tuple)) for a in x if isinstance(a, np.ndarray)]))
        return request(peer_id, cmd, *args, **kwargs)
    kv.postoffice.request = recording
    return sent


@pytest.mark.parametrize("servers", [1, 2])
def test_flat_bound_gradients_reach_the_transport_as_views_of_their_buffer(servers, ps_cluster):
    """Zero copy, checked: a pushpull of gradients bound as one flat buffer hands the transport one array
    per server, and each is a view of that buffer (no concatenation, no staging copy)."""
    keys = sorted(SHAPES)
    with ps_cluster(num_servers=servers, num_workers=1, transport="tcp") as cluster:
        (kv,) = cluster.start_workers()
        weights = flat_views([initial_weights()[k] for k in keys])
        kv.init(keys, weights)
        kv.set_optimizer(optimizer.create("sgd", learning_rate=0.1))
        grads = flat_views([gradient(0, 0, k) for k in keys])
        buffer = grads[0].base
        sent = sent_arrays(kv)
        kv.pushpull(keys, grads, out=weights)
        kv.end_training()
    pushed = [arrays for cmd, arrays in sent if cmd == "PUSHPULL"]
    assert len(pushed) == servers and all(len(arrays) == 1 for arrays in pushed)
    assert all(np.shares_memory(arrays[0], buffer) for arrays in pushed), "a gradient payload was copied"
    assert sum(arrays[0].size for arrays in pushed) == buffer.size


def test_uneven_worker_data_finishes_and_keeps_the_mean_gradient_scale(ps_cluster):
    opt = optimizer.create("sgd", learning_rate=0.1, rescale_grad=0.5)
    with ps_cluster(num_servers=2, num_workers=2) as cluster:
        cluster.start_workers()
        histories = cluster.run_workers(lambda kv: train(kv, opt, steps=5 if kv.rank == 0 else 2))
        final = {k: np.zeros(s, np.float32) for k, s in SHAPES.items()}
        cluster.kvstores[1].pull(sorted(SHAPES), out=[final[k] for k in sorted(SHAPES)])
    expected = reference(opt.to_config(), 5, lambda step: [0, 1] if step < 2 else [0])
    for k in SHAPES:
        np.testing.assert_allclose(histories[0][-1][k], expected[-1][k], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(final[k], expected[-1][k], rtol=1e-6, atol=1e-6)


def test_async_applies_each_push_on_arrival(ps_cluster):
    opt = optimizer.create("sgd", learning_rate=0.1)
    with ps_cluster(num_servers=2, num_workers=2, kvtype="dist_async") as cluster:
        cluster.start_workers()
        histories = cluster.run_workers(lambda kv: train(kv, opt, steps=3))
        final = {k: np.zeros(s, np.float32) for k, s in SHAPES.items()}
        cluster.kvstores[0].pull(sorted(SHAPES), out=[final[k] for k in sorted(SHAPES)])
    for k in SHAPES:
        total = sum(gradient(r, s, k) for r in (0, 1) for s in range(3))
        np.testing.assert_allclose(final[k], initial_weights()[k] - 0.1 * total, rtol=1e-5, atol=1e-5)
    # a lone worker's first pull already shows its own first push, without waiting for the other
    assert not np.array_equal(histories[0][0][1], initial_weights()[1])


def test_two_servers_hold_contiguous_ranges_and_get_one_request_per_step(ps_cluster):
    opt = optimizer.create("sgd", learning_rate=0.1)
    with ps_cluster(num_servers=2, num_workers=2) as cluster:
        cluster.run_workers(lambda kv: train(kv, opt, steps=3))
        layout = KeyLayout(2)
        layout.add(SHAPES)
        sizes = [sum(p.size for p in layout.pieces_on(s)) for s in (0, 1)]
        for rank, server in cluster.servers.items():
            held = [(k, server.dense.slots[k].lo, server.dense.slots[k].hi) for k in server.dense.keys()]
            assert held == [(p.key, p.lo, p.hi) for p in layout.pieces_on(rank)]
            assert len(server.dense.groups) == 1 and server.dense.groups[0].size == sizes[rank]
            for worker in cluster.scheduler.status()["nodes"]:
                if worker["role"] == "worker":
                    # one request per server per step: the push travels with the pull as a PUSHPULL
                    assert server.served["PUSHPULL", worker["id"]] == 3
                    assert server.served["PUSH", worker["id"]] == 0
                    assert server.served["PULL", worker["id"]] == 1  # the pull after init
    assert abs(sizes[0] - sizes[1]) <= 1


def test_workers_and_servers_get_the_ranks_they_ask_for(ps_cluster):
    with ps_cluster(num_servers=2, num_workers=3, start_servers=False) as cluster:
        cluster.start_server_thread(rank=1)
        cluster.start_server_thread(rank=0)
        kvs = cluster.start_workers(ranks=[2, 0, 1])
        assert [kv.rank for kv in kvs] == [0, 1, 2] and all(kv.num_workers == 3 for kv in kvs)
        ids = {n["id"]: (n["role"], n["rank"]) for n in cluster.scheduler.status()["nodes"]}
        assert ids == {1: ("server", 0), 2: ("server", 1), 3: ("worker", 0), 4: ("worker", 1), 5: ("worker", 2)}


def test_checkpoint_saved_on_two_servers_loads_on_three(tmp_path, ps_cluster):
    opt = optimizer.create("adam", learning_rate=0.01)
    keys = sorted(SHAPES)
    step_grads = [gradient(0, 9, k) for k in keys]

    def train_save_and_step(kv):
        train_steps(kv, opt, 3)
        kv.save_checkpoint(tmp_path / "ckpt")
        return push_pull(kv, step_grads)

    with ps_cluster(num_servers=2, num_workers=1) as cluster:
        (continued,) = cluster.run_workers(train_save_and_step)

    def load_and_step(kv):
        kv.load_checkpoint(tmp_path / "ckpt")
        return push_pull(kv, step_grads)

    with ps_cluster(num_servers=3, num_workers=1) as cluster:
        (resumed,) = cluster.run_workers(load_and_step)
        assert sorted(len(s.dense.keys()) > 0 for s in cluster.servers.values()) == [True] * 3
    for k in keys:
        np.testing.assert_array_equal(resumed[k], continued[k])


def train_steps(kv, opt, steps):
    keys = sorted(SHAPES)
    weights = initial_weights()
    kv.init(keys, [weights[k] for k in keys])
    kv.set_optimizer(opt)
    for step in range(steps):
        kv.push(keys, [gradient(0, step, k) for k in keys])
        kv.pull(keys, out=[weights[k] for k in keys])


def push_pull(kv, grads):
    keys = sorted(SHAPES)
    out = {k: np.zeros(SHAPES[k], np.float32) for k in keys}
    kv.pushpull(keys, grads, out=[out[k] for k in keys])
    return out


def test_set_learning_rate_changes_the_servers_step(ps_cluster):
    with ps_cluster(num_servers=2, num_workers=1) as cluster:
        (kv,) = cluster.start_workers()
        w = np.ones(10, np.float32)
        kv.init(7, w)
        kv.set_optimizer(optimizer.create("sgd", learning_rate=1.0))
        kv.set_learning_rate(0.25)
        kv.push(7, np.ones(10, np.float32))
        kv.pull(7, out=w)
        np.testing.assert_allclose(w, 0.75)


def test_fp16_compression_sends_half_precision_gradients(ps_cluster):
    grad = np.array([1 / 3, 1e-4, 7.1234567, -2.5], np.float32)
    with ps_cluster(num_servers=1, num_workers=1, compression={"type": "fp16"}) as cluster:
        (kv,) = cluster.start_workers()
        w = np.zeros(4, np.float32)
        kv.init(0, w)
        kv.set_optimizer(optimizer.create("sgd", learning_rate=1.0))
        kv.push(0, grad)
        kv.pull(0, out=w)
    np.testing.assert_array_equal(w, -grad.astype(np.float16).astype(np.float32))
    assert not np.array_equal(w, -grad)


def test_fp16_compression_carries_a_gradient_above_float16s_range(ps_cluster):
    grad = np.array([1e5, -2.5], np.float32)    # 1e5 > 65504: scaled on the wire, not an Inf refused by the server
    with ps_cluster(num_servers=1, num_workers=1, compression={"type": "fp16"}) as cluster:
        (kv,) = cluster.start_workers()
        w = np.zeros(2, np.float32)
        kv.init(0, w)
        kv.set_optimizer(optimizer.create("sgd", learning_rate=1.0))
        kv.push(0, grad)
        kv.pull(0, out=w)
    np.testing.assert_allclose(w, -grad, rtol=1e-3)


def test_bad_requests_are_answered_with_errors_and_the_server_keeps_serving(ps_cluster):
    with ps_cluster(num_servers=1, num_workers=1) as cluster:
        (kv,) = cluster.start_workers()
        w = np.arange(4, dtype=np.float32)
        kv.init(0, w)
        po = kv.postoffice
        server = po.server_ids[0]
        bad = [("PUSH", {"keys": "zero"}, []), ("PUSH", {"keys": [0], "round": 1}, [np.zeros(3, np.float32)]),
               ("PULL", {"keys": [0], "round": "x"}, []), ("COMMAND", {"name": "rm -rf"}, []),
               ("SET_OPTIMIZER", {"config": {"name": "nope"}}, []), ("BARRIER", {}, [])]
        for cmd, meta, arrays in bad:
            with pytest.raises(RemoteError, match="server 0"):
                po.wait(po.request(server, cmd, meta, arrays), timeout=5)
        out = np.zeros(4, np.float32)
        kv.pull(0, out=out)
        np.testing.assert_array_equal(out, w)


def test_wrong_shapes_and_unknown_keys_raise_before_anything_is_sent(ps_cluster):
    with ps_cluster(num_servers=1, num_workers=1) as cluster:
        (kv,) = cluster.start_workers()
        kv.init([0], [np.zeros(3, np.float32)])
        with pytest.raises(ShapeError, match="key 0 has shape \\(3,\\)"):
            kv.push(0, np.zeros(4, np.float32))
        with pytest.raises(ConfigError, match="never initialised"):
            kv.pull(5, out=np.zeros(3, np.float32))
        kv.end_training()
        with pytest.raises(ClusterError, match="end_training"):
            kv.push(0, np.zeros(3, np.float32))


def test_init_keeps_rank_0s_values_when_workers_give_different_ones(ps_cluster):
    """MXNet's rule: every worker calls init, the servers keep what rank 0 gave."""
    def init_and_pull(kv):
        kv.init([0, 1], [np.full(SHAPES[0], 10.0 + kv.rank, np.float32),
                         np.full(SHAPES[1], -kv.rank - 1.0, np.float32)])
        out = [np.zeros(SHAPES[0], np.float32), np.zeros(SHAPES[1], np.float32)]
        kv.pull([0, 1], out=out)
        kv.end_training()
        return out

    with ps_cluster(num_servers=2, num_workers=3) as cluster:
        pulled = cluster.run_workers(init_and_pull)
    for out in pulled:
        np.testing.assert_array_equal(out[0], np.full(SHAPES[0], 10.0, np.float32))
        np.testing.assert_array_equal(out[1], np.full(SHAPES[1], -1.0, np.float32))

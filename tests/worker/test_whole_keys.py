"""An optimizer that is not ``elementwise`` (LAMB: its step scales by the norms of the whole weight and of its whole
direction) never runs on pieces of a key: the layout keeps such an optimizer's keys whole on one server, so LAMB
trained on 3 servers gives the weights it gives on 1 server, and those of LAMB run locally on the whole arrays.

Both orders of MXNet's calls are covered: ``set_optimizer`` before ``init`` (the keys are laid out whole at once) and
``init`` before ``set_optimizer`` (MXNet's own order: the keys ``init`` cut across servers are re-laid whole, with
their values, before the optimizer runs). A real cluster: scheduler, servers and 2 workers over ZeroMQ on
127.0.0.1 (tcp); data: weights and gradients drawn from numpy Generators with documented seeds.
"""
import numpy as np
import pytest

from sparkps import optimizer
from sparkps.comm.layout import KeyLayout

# 40 + 3 + 16 = 59 elements: on 3 servers the flat buffer is cut at 19 and 39, so key 0 spans all three servers
SHAPES = {0: (5, 8), 1: (3,), 2: (4, 4)}
STEPS, WORKERS = 4, 2
LAMB = dict(learning_rate=0.05, wd=0.01, rescale_grad=0.5)


def initial_weights():
    rng = np.random.default_rng(7)
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in SHAPES.items()}


def gradient(rank, step, key):
    rng = np.random.default_rng(1000 * rank + 10 * step + key)
    return rng.standard_normal(SHAPES[key]).astype(np.float32)


def train(kv, optimizer_first):
    """Init and set LAMB in the given order, run STEPS push+pull steps; returns the pulled weights."""
    keys = sorted(SHAPES)
    weights = initial_weights()
    opt = optimizer.create('lamb', **LAMB)
    if optimizer_first:
        kv.set_optimizer(opt)
    kv.init(keys, [weights[k] for k in keys])
    if not optimizer_first:
        kv.set_optimizer(opt)
    for step in range(STEPS):
        kv.push(keys, [gradient(kv.rank, step, k) for k in keys])
        kv.pull(keys, out=[weights[k] for k in keys])
    kv.end_training()
    return weights


def local_lamb():
    """LAMB applied locally to each whole key, with the sum of the workers' gradients."""
    opt = optimizer.create('lamb', **LAMB)
    weights = initial_weights()
    states = {k: opt.create_state(k, w) for k, w in weights.items()}
    for step in range(STEPS):
        for k in sorted(SHAPES):
            total = np.sum([gradient(r, step, k) for r in range(WORKERS)], axis=0, dtype=np.float32)
            opt.update(k, weights[k], total, states[k])
    return weights


def test_three_servers_cut_key_zero_under_an_elementwise_optimizer():
    layout = KeyLayout(3)
    layout.add(SHAPES)
    assert [p.server for p in layout.pieces_of(0)] == [0, 1, 2]


@pytest.mark.parametrize('optimizer_first', [True, False], ids=['set_optimizer_first', 'init_first'])
def test_lamb_on_three_servers_gives_the_weights_of_one_server(optimizer_first, ps_cluster):
    trained = {}
    for servers in (1, 3):
        with ps_cluster(num_servers=servers, num_workers=WORKERS, kvtype='dist_sync', transport='tcp') as cluster:
            results = cluster.run_workers(lambda kv: train(kv, optimizer_first), timeout=90)
        for weights in results[1:]:                      # every worker pulled the same weights
            for k in SHAPES:
                np.testing.assert_array_equal(weights[k], results[0][k])
        trained[servers] = results[0]
    expected = local_lamb()
    for k in SHAPES:
        np.testing.assert_allclose(trained[3][k], trained[1][k], rtol=1e-5, atol=1e-6, err_msg=f"key {k}")
        np.testing.assert_allclose(trained[1][k], expected[k], rtol=1e-5, atol=1e-6, err_msg=f"key {k}")


def test_whole_keys_lie_on_the_server_of_their_middle_element_and_cut_keys_are_relaid_on_their_largest_piece():
    whole = KeyLayout(3, whole_keys=True)
    whole.add(SHAPES)               # key 0: elements [0, 40), middle 19 -> server 1; key 1 [40, 43) and 2 [43, 59) -> 2
    assert [tuple(p) for k in sorted(SHAPES) for p in whole.pieces_of(k)] == [(0, 1, 0, 40), (1, 2, 0, 3),
                                                                              (2, 2, 0, 16)]
    assert whole.cut_keys() == []
    cut = KeyLayout(3)
    cut.add(SHAPES)                 # key 0: [0, 19) on 0, [19, 39) on 1, [39, 40) on 2
    assert cut.cut_keys() == [0]
    assert cut.lay_whole([0]) == {0: [0, 1, 2]}
    assert [tuple(p) for p in cut.pieces_of(0)] == [(0, 1, 0, 40)] and cut.cut_keys() == []
    assert cut.servers_for([0]) == [1]


def test_a_relay_init_replaces_the_pieces_a_server_held_of_the_keys_it_names():
    from sparkps.comm import protocol
    from sparkps.comm.message import Message
    from sparkps.errors import MalformedMessage
    from sparkps.server.tables.dense import DenseTable

    held = DenseTable()       # this server held [0, 19) of key 0 and nothing of key 1 until the relay
    held.add_group([[0, 0, 19], [1, 0, 3]], [[0, [5, 8]], [1, [3]]], np.arange(22, dtype=np.float32))
    held.init(protocol.Init([[0, 0, 40]], [[0, [5, 8]]], values=np.ones(40, np.float32), relay=True))
    assert held.keys() == [0, 1] and held.weight(0).tolist() == [1.0] * 40 and held.weight(1).tolist() == [19, 20, 21]
    other = DenseTable()      # another server held [19, 39): it now holds nothing of key 0
    other.add_group([[0, 19, 39]], [[0, [5, 8]]], np.zeros(20, np.float32))
    other.init(protocol.Init([], [[0, [5, 8]]], values=np.zeros(0, np.float32), relay=True))
    assert other.keys() == []
    meta = protocol.Init([], [[0, [5, 8]]], relay=True).meta()
    assert meta["relay"] is True and "relay" not in protocol.Init([], []).meta()
    with pytest.raises(MalformedMessage, match="INIT field 'relay' must be a bool, got 1"):
        protocol.Init.parse(Message("INIT", meta=dict(meta, relay=1)))


def test_a_lamb_checkpoint_of_three_servers_resumes_whole_on_two(tmp_path, ps_cluster):
    """The saved optimizer is LAMB: a store that only loads the checkpoint (on 2 servers, where ``init`` would cut
    key 0) lays the keys whole too, and its next step is the step the saving cluster took."""
    keys, step = sorted(SHAPES), STEPS + 1

    def next_step(kv, weights):
        kv.push(keys, [gradient(kv.rank, step, k) for k in keys])
        kv.pull(keys, out=[weights[k] for k in keys])
        kv.end_training()
        return weights

    def train_save_and_step(kv):
        weights = initial_weights()
        kv.init(keys, [weights[k] for k in keys])
        kv.set_optimizer(optimizer.create('lamb', **LAMB))
        for s in range(STEPS):
            kv.push(keys, [gradient(kv.rank, s, k) for k in keys])
            kv.pull(keys, out=[weights[k] for k in keys])
        kv.barrier()
        if kv.rank == 0:
            kv.save_checkpoint(tmp_path / "ckpt")
        kv.barrier()
        return next_step(kv, weights)

    def load_and_step(kv):
        kv.load_checkpoint(tmp_path / "ckpt")
        assert kv.worker.layout.cut_keys() == []
        return next_step(kv, {k: np.zeros(s, np.float32) for k, s in SHAPES.items()})

    with ps_cluster(num_servers=3, num_workers=WORKERS, kvtype='dist_sync', transport='tcp') as cluster:
        continued = cluster.run_workers(train_save_and_step, timeout=90)[0]
    with ps_cluster(num_servers=2, num_workers=WORKERS, kvtype='dist_sync', transport='tcp') as cluster:
        resumed = cluster.run_workers(load_and_step, timeout=90)[0]
    for k in SHAPES:
        np.testing.assert_allclose(resumed[k], continued[k], rtol=1e-6, atol=1e-7, err_msg=f"key {k}")

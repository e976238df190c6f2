"""Server logic without sockets: key layout, sync rounds, optimizer application, checkpoints."""
import numpy as np
import pytest

from sparkps import optimizer
from sparkps.comm import manifest
from sparkps.comm.layout import KeyLayout
from sparkps.comm.protocol import Push
from sparkps.errors import ClusterError, ConfigError, DataError, MalformedMessage
from sparkps.server.policy import SyncRounds
from sparkps.server.tables.dense import DenseGradient, DenseTable
from sparkps.server.tables.dense_pieces import load_pieces, save_pieces

SHAPES = {0: (20, 8), 1: (8,), 2: (8, 4), 3: (4,)}


def test_layout_cuts_flat_buffer_into_contiguous_balanced_ranges():
    layout = KeyLayout(3)
    layout.add(SHAPES)
    total = sum(layout.size(k) for k in SHAPES)
    offsets = {k: sum(layout.size(j) for j in SHAPES if j < k) for k in SHAPES}
    covered = []
    for s in range(3):
        flat = [(offsets[p.key] + p.lo, offsets[p.key] + p.hi) for p in layout.pieces_on(s)]
        assert all(a[1] == b[0] for a, b in zip(flat, flat[1:])), "server %d range is not contiguous" % s
        assert flat[-1][1] - flat[0][0] in (total // 3, total // 3 + 1)
        covered.append((flat[0][0], flat[-1][1]))
    assert covered[0][0] == 0 and covered[-1][1] == total
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))


def test_layout_lets_one_huge_key_span_every_server():
    layout = KeyLayout(4)
    layout.add({7: (1000,)})
    assert [(p.server, p.lo, p.hi) for p in layout.pieces_of(7)] == [(0, 0, 250), (1, 250, 500),
                                                                   (2, 500, 750), (3, 750, 1000)]
    assert layout.servers_for([7]) == [0, 1, 2, 3]


def test_layout_refuses_unknown_and_repeated_keys():
    layout = KeyLayout(2)
    layout.add({0: (3,)})
    with pytest.raises(ConfigError, match="already initialised"):
        layout.add({0: (3,)})
    with pytest.raises(ConfigError, match=r"\[5\] were never initialised"):
        layout.pieces_on(0, [5])
    with pytest.raises(ConfigError, match="not a non-negative int"):
        layout.add({"w": (3,)})
    with pytest.raises(ConfigError, match="at least one server"):
        KeyLayout(0)


def test_sync_round_applies_once_when_every_worker_pushed():
    rounds = SyncRounds([5, 6, 7])
    received = np.full(3, 1.0, np.float32)
    grad = {"dense": DenseGradient([0], [3], received)}
    assert rounds.push(5, 1, grad) == [] and rounds.push(6, 1, grad) == []
    assert rounds.wait_pull(1, "pull-of-5") is False
    (done,) = rounds.push(7, 1, grad)
    assert (done.round, done.scale, done.contributors) == (1, 1.0, 3)
    np.testing.assert_array_equal(done.updates["dense"].flat, [3, 3, 3])
    np.testing.assert_array_equal(received, [1, 1, 1])  # the first gradient received is not modified
    assert rounds.mark_applied(1) == ["pull-of-5"]
    assert rounds.wait_pull(1, "late") is True


def test_sync_round_refuses_repeated_rounds_and_strangers():
    rounds = SyncRounds([5, 6])
    rounds.push(5, 1, {})
    with pytest.raises(ClusterError, match="pushed round 1 again"):
        rounds.push(5, 1, {})
    with pytest.raises(ClusterError, match="node 9, which is not a worker"):
        rounds.push(9, 1, {})


def test_sync_round_completes_rounds_in_order_when_a_worker_pushes_ahead():
    rounds = SyncRounds([1, 2])
    g = {"dense": DenseGradient([0], [1], np.ones(1, np.float32))}
    assert rounds.push(1, 1, g) == [] and rounds.push(1, 2, g) == [] and rounds.push(1, 3, g) == []
    assert [d.round for d in rounds.push(2, 1, g)] == [1]
    assert [d.round for d in rounds.leave(2)] == [2, 3]


def test_leaving_worker_is_no_longer_waited_for_and_scale_keeps_the_mean():
    rounds = SyncRounds([1, 2])
    g = {"dense": DenseGradient([0], [2], np.full(2, 4.0, np.float32))}
    rounds.push(1, 1, g)
    rounds.push(2, 1, g)
    assert rounds.push(1, 2, g) == []
    (done,) = rounds.leave(2)
    assert (done.round, done.contributors, done.scale) == (2, 1, 2.0)
    assert [d.round for d in rounds.push(1, 3, g)] == [3]
    with pytest.raises(ClusterError, match="after it left"):
        rounds.push(2, 3, g)


def _store(pieces, shapes, values):
    store = DenseTable()
    store.add_group(pieces, shapes, values)
    return store


def _grad(store, keys, flat):
    """The DenseGradient a push of ``flat`` for ``keys`` carries."""
    return store.gradient(Push(keys=list(keys), values=np.asarray(flat)))


def _per_key(store, parts):
    """Apply ``{key: gradient}`` one key at a time (each a push of its own)."""
    for key, grad in sorted(parts.items()):
        store.apply(_grad(store, [key], grad))


def test_store_gathers_adjacent_pieces_as_one_view_and_checks_sizes():
    store = _store([[0, 2, 6], [1, 0, 3]], [[0, [6]], [1, [3]]], np.arange(7, dtype=np.float32))
    whole = store.gather([0, 1])
    assert whole.base is not None and whole.tolist() == list(range(7))
    assert store.gather([1]).tolist() == [4, 5, 6]
    with pytest.raises(MalformedMessage, match="carries 5 values but keys \\[0, 1\\] hold 7"):
        _grad(store, [0, 1], np.zeros(5, np.float32))
    with pytest.raises(ConfigError, match="does not fit its shape"):
        store.add_group([[2, 0, 9]], [[2, [3]]])


@pytest.mark.parametrize("name,kw", [("sgd", {"momentum": 0.9, "wd": 0.01}), ("adam", {}),
                                     ("rmsprop", {"centered": True}), ("ftrl", {})])
def test_store_applies_optimizer_per_piece_like_the_whole_key(name, kw):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal(10).astype(np.float32)
    grads = [rng.standard_normal(10).astype(np.float32) for _ in range(3)]
    reference = optimizer.create(name, learning_rate=0.1, rescale_grad=0.5, **kw)
    expected, state = weight.copy(), reference.create_state(4, weight)
    config = reference.to_config()
    halves = [_store([[4, 0, 6]], [[4, [10]]], weight[:6]), _store([[4, 6, 10]], [[4, [10]]], weight[6:])]
    for store in halves:
        store.set_optimizer(config)
    for grad in grads:
        reference.update(4, expected, grad, state)
        halves[0].apply(_grad(halves[0], [4], grad[:6]))
        halves[1].apply(_grad(halves[1], [4], grad[6:]))
    got = np.concatenate([halves[0].gather([4]), halves[1].gather([4])])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


FUSED_KEYS = {0: (6, 4), 1: (6,), 2: (3, 6), 3: (3,)}


def _fused_pair(config):
    """Two stores holding the same four keys from one INIT, with the same optimizer."""
    sizes = {k: int(np.prod(s)) for k, s in FUSED_KEYS.items()}
    values = np.random.default_rng(1).standard_normal(sum(sizes.values())).astype(np.float32)
    stores = [_store([[k, 0, n] for k, n in sizes.items()], [[k, list(s)] for k, s in FUSED_KEYS.items()], values)
              for _ in range(2)]
    for store in stores:
        store.set_optimizer(config)
    return stores


@pytest.mark.parametrize("name,kw", [("sgd", {"momentum": 0.9}), ("adam", {"wd": 0.01}),
                                     ("sgd", {"momentum": 0.9, "wd": 0.1, "param_idx2name": {0: "a_weight",
                                              1: "a_bias", 2: "b_weight", 3: "b_bias"}}),
                                     ("adam", {"lr_mult": {2: 0.5}})])
def test_store_fused_update_of_all_keys_equals_key_by_key(name, kw):
    """A flat gradient for every key gives the weights, states and counts of per-key updates,
    also when keys differ (weight decay only on weights, a learning-rate multiplier)."""
    fused, per_key = _fused_pair(optimizer.create(name, learning_rate=0.1, rescale_grad=0.5, **kw).to_config())
    keys = fused.keys()
    rng = np.random.default_rng(2)
    for step in range(4):
        flat = rng.standard_normal(fused.size_of(keys)).astype(np.float32)
        fused.apply(_grad(fused, keys, flat), scale=2.0 if step == 2 else 1.0)
        for key, part in per_key.split(keys, flat).items():
            per_key.apply(_grad(per_key, [key], part), scale=2.0 if step == 2 else 1.0)
    np.testing.assert_allclose(fused.gather(keys), per_key.gather(keys), rtol=1e-6, atol=1e-7)
    assert fused.optimizer.update_counts() == per_key.optimizer.update_counts()
    for key in keys:
        for a, b in zip(fused.state_of(key), per_key.state_of(key)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_store_fused_gradient_mixed_with_per_key_gradients_is_summed_once():
    fused, per_key = _fused_pair(optimizer.create("sgd", learning_rate=0.1, momentum=0.9).to_config())
    keys = fused.keys()
    flat = np.arange(fused.size_of(keys), dtype=np.float32)
    extra = {1: np.ones(6, np.float32), 3: np.ones(3, np.float32)}
    # one worker pushed everything, another two keys: the round sums them into one update of every key
    grads = _grad(fused, keys, flat).add(_grad(fused, [1, 3], np.concatenate([extra[1], extra[3]])))
    assert grads.keys == tuple(keys)
    fused.apply(grads)
    summed = per_key.split(keys, flat.copy())
    for key, grad in extra.items():
        summed[key] = summed[key] + grad
    _per_key(per_key, summed)
    np.testing.assert_allclose(fused.gather(keys), per_key.gather(keys), rtol=1e-6)
    with pytest.raises(MalformedMessage, match="carries 5 values"):
        _grad(fused, keys, np.zeros(5, np.float32))


def test_store_fused_state_survives_a_checkpoint_round_trip(tmp_path):
    config = optimizer.create("adam", learning_rate=0.1).to_config()
    store, reference = _fused_pair(config)
    keys = store.keys()
    grad = np.ones(store.size_of(keys), np.float32)
    for target in (store, reference):
        target.apply(_grad(target, keys, grad))
    manifest.write_manifest(str(tmp_path), save_pieces(str(tmp_path), store), config)
    load_pieces(str(tmp_path), store)   # replaces the per-key states: the fused one is rebuilt
    for target in (store, reference):
        target.apply(_grad(target, keys, grad * 3))
    np.testing.assert_allclose(store.gather(keys), reference.gather(keys), rtol=1e-6)


def test_checkpoint_from_two_servers_loads_onto_three(tmp_path):
    shapes = {0: (6, 5), 1: (5,), 2: (7,)}
    rng = np.random.default_rng(1)
    values = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    config = optimizer.create("adam", learning_rate=0.01).to_config()

    def cluster(num_servers):
        layout = KeyLayout(num_servers)
        layout.add(shapes)
        stores = []
        for s in range(num_servers):
            meta = layout.to_meta(s)
            flat = [values[p.key].reshape(-1)[p.lo:p.hi] for p in layout.pieces_on(s)]
            store = _store(meta["pieces"], meta["shapes"], np.concatenate(flat))
            store.set_optimizer(config)
            stores.append(store)
        return layout, stores

    layout2, two = cluster(2)
    for step in range(3):
        for s, store in enumerate(two):
            grads = {p.key: np.full(p.size, step + 1.0, np.float32) for p in layout2.pieces_on(s)}
            _per_key(store, grads)
    described = [d for store in two for d in save_pieces(str(tmp_path), store)]
    manifest.write_manifest(str(tmp_path), described, config)
    layout3, three = cluster(3)
    for store in three:
        load_pieces(str(tmp_path), store)

    def whole(layout, stores, key, what):
        parts = []
        for p in layout.pieces_of(key):
            store = stores[p.server]
            parts.append(store.gather([key]) if what < 0 else store.optimizer.state_to_arrays(
                store.state_of(key))[what])
        return np.concatenate(parts)

    for key in shapes:
        for what in (-1, 0, 1):
            np.testing.assert_array_equal(whole(layout3, three, key, what), whole(layout2, two, key, what))
        for s, store in enumerate(three):  # every piece resumes at 3 updates, wherever it landed
            holds = any(p.server == s for p in layout3.pieces_of(key))
            assert store.optimizer.index_update_count.get(key, 0) == (3 if holds else 0), (key, s)
    assert three[2].optimizer.update_counts()["num_update"] == 3


def test_checkpoint_refuses_a_shape_mismatch_and_a_foreign_directory(tmp_path):
    store = _store([[0, 0, 4]], [[0, [4]]], np.ones(4, np.float32))
    manifest.write_manifest(str(tmp_path), save_pieces(str(tmp_path), store), None)
    other = _store([[0, 0, 3]], [[0, [3]]], np.ones(3, np.float32))
    with pytest.raises(ConfigError, match="key 0 has shape \\(4,\\), the kvstore holds \\(3,\\)"):
        load_pieces(str(tmp_path), other)
    with pytest.raises(DataError, match="cannot read kvstore checkpoint"):
        manifest.read_manifest(str(tmp_path / "missing"))

"""LocalKVStore: init/push/pull with and without an optimizer; create() by type."""
import numpy as np
import pytest

from sparkps import kvstore, optimizer
from sparkps.errors import ConfigError, ShapeError


def test_create_local_and_unknown():
    kv = kvstore.create('local')
    assert kv.type == 'local' and kv.rank == 0 and kv.num_workers == 1
    assert kvstore.create(kv) is kv
    with pytest.raises(ConfigError, match='bogus'):
        kvstore.create('bogus')


def test_push_without_optimizer_stores_the_sum_and_pull_fills_out():
    kv = kvstore.create('local')
    kv.init([0, 1], [np.zeros(3), np.ones(2)])
    kv.push([0, 1], [[np.ones(3), 2 * np.ones(3)], np.full(2, 5.0)])
    out0, out1, again = np.empty(3), np.empty(2), np.empty(3)
    kv.pull([0, 1], out=[[out0, again], out1])
    np.testing.assert_array_equal(out0, [3, 3, 3])
    np.testing.assert_array_equal(again, out0)
    np.testing.assert_array_equal(out1, [5, 5])


def test_push_with_optimizer_updates_stored_weight_like_the_optimizer():
    weight = np.array([1.0, -2.0, 0.5])
    grads = [np.array([0.1, 0.2, -0.3]), np.array([0.4, -0.1, 0.0])]
    kv = kvstore.create('local')
    kv.init(3, weight)
    kv.set_optimizer(optimizer.create('sgd', learning_rate=0.5, momentum=0.9, wd=0.01))
    reference = weight.copy()
    ref_opt = optimizer.create('sgd', learning_rate=0.5, momentum=0.9, wd=0.01)
    state = ref_opt.create_state(3, reference)
    for grad in grads:
        kv.push(3, [grad / 2, grad / 2])
        ref_opt.update(3, reference, grad, state)
    out = np.empty(3)
    kv.pull(3, out=out)
    np.testing.assert_allclose(out, reference, rtol=1e-12)
    np.testing.assert_array_equal(weight, [1.0, -2.0, 0.5])    # init stored a copy


def test_errors_name_the_key():
    kv = kvstore.create('local')
    kv.init('w', np.zeros(2))
    with pytest.raises(ConfigError, match="'w' is already"):
        kv.init('w', np.zeros(2))
    with pytest.raises(ConfigError, match="'v' was never"):
        kv.push('v', np.zeros(2))
    with pytest.raises(ShapeError, match=r"'w' holds shape \(2,\)"):
        kv.push('w', np.zeros(3))
    with pytest.raises(ShapeError, match="'w'"):
        kv.pull('w', out=np.zeros(4))
    with pytest.raises(ConfigError, match='2 keys but 1'):
        kv.push(['w', 'w'], [np.zeros(2)])
    kv.barrier()
    kv.close()

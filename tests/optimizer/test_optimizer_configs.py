"""Every optimizer survives the trip the parameter servers make it take: JSON config, state as arrays and
update counts, and resumes mid-training exactly; float16 weights train through float32 master copies."""
import json

import numpy as np
import pytest

from sparkps import lr_scheduler, optimizer
from sparkps.errors import ConfigError

SETTINGS = {'sgd': {'momentum': 0.9}, 'nag': {'momentum': 0.9}, 'signum': {'momentum': 0.9, 'wd_lh': 0.01},
            'sgld': {'seed': 5}, 'adam': {}, 'adagrad': {'eps': 1e-6},
            'rmsprop': {'centered': True, 'clip_weights': 2.0}, 'adadelta': {}, 'ftrl': {}, 'adamax': {},
            'nadam': {}, 'ftml': {}, 'lamb': {'lower_bound': 1e-3}}


def make(name):
    return optimizer.create(name, learning_rate=0.05, wd=0.01, rescale_grad=0.5, clip_gradient=0.8,
                            **SETTINGS[name])


def problem(dtype=np.float64):
    rng = np.random.default_rng(11)
    return rng.normal(size=(4, 3)).astype(dtype), [rng.normal(size=(4, 3)).astype(dtype) for _ in range(6)]


def run(opt, weight, grads, state=None, index=2):
    weight = weight.copy()
    state = opt.create_state_multi_precision(index, weight) if state is None else state
    for grad in grads:
        opt.update_multi_precision(index, weight, grad, state)
    return weight, state


def test_every_mxnet_optimizer_is_registered():
    assert set(SETTINGS) <= set(optimizer.OPTIMIZERS)


@pytest.mark.parametrize('name', sorted(SETTINGS))
def test_resume_from_config_state_and_counts_is_exact(name):
    weight, grads = problem()
    straight, _ = run(make(name), weight, grads)
    first = make(name)
    half, state = run(first, weight, grads[:3])
    config = json.loads(json.dumps(first.to_config()))
    second = optimizer.from_config(config)
    assert second.to_config() == first.to_config()
    second.set_update_counts(json.loads(json.dumps(first.update_counts())))
    resumed = second.state_from_arrays(2, half, first.state_to_arrays(state))
    if name == 'sgld':                      # the noise generator restarts with the config's seed
        second._rng = first._rng
    done, _ = run(second, half, grads[3:], state=resumed)
    np.testing.assert_array_equal(done, straight)


@pytest.mark.parametrize('name', ['sgd', 'adam', 'lamb', 'nadam'])
def test_float16_weights_follow_a_float32_master_copy(name):
    weight, grads = problem()
    full, _ = run(make(name), weight, grads)
    opt = optimizer.create(name, learning_rate=0.05, wd=0.01, rescale_grad=0.5, clip_gradient=0.8,
                           multi_precision=True, **SETTINGS[name])
    half = weight.astype(np.float16)
    got, state = run(opt, half, [g.astype(np.float16) for g in grads])
    assert got.dtype == np.float16 and state[0].dtype == np.float32
    np.testing.assert_allclose(got, full, rtol=2e-3, atol=2e-3)
    np.testing.assert_array_equal(got, state[0].astype(np.float16))
    arrays = opt.state_to_arrays(state)
    assert len(arrays) == 1 + len(opt.create_state(0, weight) or ())


def test_without_multi_precision_float16_updates_in_float16():
    opt = optimizer.create('sgd', learning_rate=0.1)
    weight = np.ones(3, np.float16)
    state = opt.create_state_multi_precision(0, weight)
    opt.update_multi_precision(0, weight, np.ones(3, np.float16), state)
    assert state is None and weight.dtype == np.float16 and weight[0] == np.float16(0.9)


def test_clip_weights_bounds_every_weight():
    opt = optimizer.create('sgd', learning_rate=1.0, clip_weights=0.5)
    weight = np.zeros(4)
    opt.update(0, weight, np.array([-3.0, -0.2, 0.2, 3.0]), None)
    np.testing.assert_allclose(weight, [0.5, 0.2, -0.2, -0.5])


def test_poly_scheduler_survives_its_config():
    sched = lr_scheduler.PolyScheduler(100, pwr=1.5, final_lr=0.01, base_lr=0.5, warmup_steps=10)
    again = lr_scheduler.scheduler_from_config(json.loads(json.dumps(sched.to_config())))
    assert [again(t) for t in (0, 5, 10, 50, 100, 200)] == [sched(t) for t in (0, 5, 10, 50, 100, 200)]


def test_named_multipliers_resolve_through_param_idx2name():
    opt = optimizer.create('sgd', param_idx2name={0: 'fc_weight', 1: 'fc_bias'}, lr_mult={'fc_bias': 2.0},
                           wd_mult={'fc_weight': 0.5})
    assert opt.lr_mult == {1: 2.0} and opt.wd_mult == {0: 0.5, 1: 0.0}
    with pytest.raises(ConfigError, match="'conv_weight'"):
        optimizer.create('sgd', param_idx2name={0: 'fc_weight'}, lr_mult={'conv_weight': 2.0})


def test_only_lamb_declares_itself_not_elementwise():
    assert [n for n in sorted(SETTINGS) if not optimizer.OPTIMIZERS[n].elementwise] == ['lamb']
    weight, grads = problem()
    whole, _ = run(make('lamb'), weight, grads[:1])
    halves = [run(make('lamb'), weight[:2], [grads[0][:2]])[0], run(make('lamb'), weight[2:], [grads[0][2:]])[0]]
    assert not np.allclose(np.concatenate(halves), whole)

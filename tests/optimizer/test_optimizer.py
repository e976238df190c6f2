"""Optimizers against hand-written numpy references; JSON configs; state as arrays; LR schedulers."""
import json
import math

import numpy as np
import pytest

from sparkps import lr_scheduler, optimizer
from sparkps.errors import ConfigError, DataError

RESCALE, CLIP, WD, LR = 0.5, 0.3, 0.01, 0.1


def _problem(seed=0, shape=(4, 3)):
    rng = np.random.default_rng(seed)
    weight = rng.normal(size=shape).astype(np.float64)
    grads = [rng.normal(size=shape) for _ in range(4)]
    return weight, grads


def _g(w, grad, wd=WD):
    return np.clip(grad * RESCALE, -CLIP, CLIP) + wd * w


def _g_clipped_after_decay(w, grad):
    return np.clip(grad * RESCALE + WD * w, -CLIP, CLIP)


def ref_sgd(w, grads, momentum):
    mom = np.zeros_like(w)
    for grad in grads:
        mom = momentum * mom - LR * _g(w, grad)
        w = w + mom
    return w


def ref_nag(w, grads, momentum):
    mom = np.zeros_like(w)
    for grad in grads:
        g = _g(w, grad)
        mom = momentum * mom
        w = w - mom + (momentum + 1) * (mom - LR * g)
        mom = mom - LR * g
    return w


def ref_adam(w, grads, b1=0.9, b2=0.999, eps=1e-8):
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, grad in enumerate(grads, 1):
        g = _g_clipped_after_decay(w, grad)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - LR * math.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    return w


def ref_adagrad(w, grads, eps=1e-7):
    h = np.zeros_like(w)
    for grad in grads:
        g = _g(w, grad, wd=0.0)
        h = h + g * g
        w = w - LR * (g / np.sqrt(h + eps) + WD * w)
    return w


def ref_rmsprop(w, grads, g1=0.9, g2=0.9, eps=1e-8, centered=False):
    n, a, d = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for grad in grads:
        g = _g_clipped_after_decay(w, grad)
        n = g1 * n + (1 - g1) * g * g
        if centered:
            a = g1 * a + (1 - g1) * g
            d = g2 * d - LR * g / np.sqrt(n - a * a + eps)
            w = w + d
        else:
            w = w - LR * g / np.sqrt(n + eps)
    return w


def ref_adadelta(w, grads, rho=0.9, eps=1e-5):
    acc_g, acc_d = np.zeros_like(w), np.zeros_like(w)
    for grad in grads:
        g = _g(w, grad, wd=0.0)
        acc_g = rho * acc_g + (1 - rho) * g * g
        d = np.sqrt(acc_d + eps) / np.sqrt(acc_g + eps) * g
        acc_d = rho * acc_d + (1 - rho) * d * d
        w = w - d - WD * w                      # MXNet's AdaDelta has no learning rate
    return w


def ref_ftrl(w, grads, lamda1=0.01, beta=1.0):
    z, n = np.zeros_like(w), np.zeros_like(w)
    for grad in grads:
        g = _g(w, grad, wd=0.0)
        z = z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / LR
        n = n + g * g
        w = np.where(np.abs(z) > lamda1, (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / LR + WD), 0.0)
    return w


CASES = [
    ('sgd', {}, lambda w, gs: ref_sgd(w, gs, 0.0)),
    ('sgd', {'momentum': 0.9}, lambda w, gs: ref_sgd(w, gs, 0.9)),
    ('nag', {'momentum': 0.9}, lambda w, gs: ref_nag(w, gs, 0.9)),
    ('adam', {}, ref_adam),
    ('adagrad', {}, ref_adagrad),
    ('rmsprop', {}, ref_rmsprop),
    ('rmsprop', {'centered': True}, lambda w, gs: ref_rmsprop(w, gs, centered=True)),
    ('adadelta', {}, ref_adadelta),
    ('ftrl', {}, ref_ftrl),
]
IDS = [f"{name}-{'-'.join(kw) or 'plain'}" for name, kw, _ in CASES]


def _run(opt, weight, grads, index=3):
    weight = weight.copy()
    state = opt.create_state(index, weight)
    for grad in grads:
        opt.update(index, weight, grad, state)
    return weight, state


def _make(name, kwargs):
    return optimizer.create(name, learning_rate=LR, wd=WD, rescale_grad=RESCALE, clip_gradient=CLIP,
                            **kwargs)


@pytest.mark.parametrize('name,kwargs,reference', CASES, ids=IDS)
def test_update_matches_numpy_reference(name, kwargs, reference):
    weight, grads = _problem()
    got, _ = _run(_make(name, kwargs), weight, grads)
    np.testing.assert_allclose(got, reference(weight, grads), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize('name,kwargs,reference', CASES, ids=IDS)
def test_update_is_in_place_and_leaves_grad_alone(name, kwargs, reference):
    weight64, grads = _problem(1)
    weight = weight64.astype(np.float32)
    grad = grads[0].astype(np.float32)
    grad_before = grad.copy()
    opt = _make(name, kwargs)
    state = opt.create_state(0, weight)
    backing = weight.reshape(-1)                  # a view of the caller's buffer
    before = backing.copy()
    opt.update(0, weight, grad, state)
    assert weight.dtype == np.float32 and np.shares_memory(backing, weight)
    assert not np.array_equal(backing, before), "the update did not write into the caller's array"
    np.testing.assert_array_equal(grad, grad_before)
    expected = reference(weight64, [grads[0]])
    np.testing.assert_allclose(weight, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('name,kwargs,reference', CASES, ids=IDS)
def test_config_round_trip_gives_identical_updates(name, kwargs, reference):
    weight, grads = _problem(2)
    opt = _make(name, kwargs)
    config = json.loads(json.dumps(opt.to_config()))
    rebuilt = optimizer.from_config(config)
    assert type(rebuilt) is type(opt) and rebuilt.to_config() == opt.to_config()
    np.testing.assert_array_equal(_run(opt, weight, grads)[0], _run(rebuilt, weight, grads)[0])


@pytest.mark.parametrize('name,kwargs,reference', CASES, ids=IDS)
def test_state_arrays_resume_training_exactly(name, kwargs, reference):
    weight, grads = _problem(3)
    straight, _ = _run(_make(name, kwargs), weight, grads)
    first = _make(name, kwargs)
    half, state = _run(first, weight, grads[:2])
    arrays = first.state_to_arrays(state)
    assert all(isinstance(a, np.ndarray) for a in arrays)
    counts = json.loads(json.dumps(first.update_counts()))
    second = optimizer.from_config(first.to_config())
    second.set_update_counts(counts)
    resumed_state = second.state_from_arrays(3, half, arrays)
    for grad in grads[2:]:
        second.update(3, half, grad, resumed_state)
    np.testing.assert_array_equal(half, straight)


def test_state_from_arrays_rejects_wrong_shapes():
    opt = optimizer.create('adam')
    weight = np.zeros((2, 2))
    with pytest.raises(DataError, match='2 arrays'):
        opt.state_from_arrays(0, weight, [np.zeros((2, 2))])
    with pytest.raises(DataError, match=r'\(3,\)'):
        opt.state_from_arrays(0, weight, [np.zeros(3), np.zeros(3)])


def test_unknown_optimizer_or_key_is_config_error():
    with pytest.raises(ConfigError, match='bogus'):
        optimizer.create('bogus')
    with pytest.raises(ConfigError, match='bogus'):
        optimizer.from_config({'name': 'bogus', 'params': {}})
    with pytest.raises(ConfigError, match='momentun'):
        optimizer.from_config({'name': 'sgd', 'params': {'momentun': 0.9}})
    with pytest.raises(ConfigError, match='extra'):
        optimizer.from_config({'name': 'sgd', 'params': {}, 'extra': 1})
    with pytest.raises(ConfigError, match='learning_rate'):
        optimizer.create('sgd', learning_rate='fast')


def test_gradient_shape_mismatch_is_data_error():
    opt = optimizer.create('sgd')
    with pytest.raises(DataError, match='parameter 7'):
        opt.update(7, np.zeros(3), np.zeros(4), None)


def test_update_counts_per_index_and_set_learning_rate():
    opt = optimizer.create('sgd', learning_rate=1.0)
    weight = np.zeros(2)
    for index in (0, 1, 0):
        opt.update(index, weight, np.ones(2), None)
    assert opt.index_update_count == {0: 2, 1: 1} and opt.num_update == 2
    opt.set_learning_rate(0.5)
    opt.update(1, weight, np.ones(2), None)
    np.testing.assert_allclose(weight, [-3.5, -3.5])


def test_no_weight_decay_on_biases_when_names_are_known():
    opt = optimizer.create('sgd', learning_rate=1.0, wd=0.5, param_idx2name={0: 'fc_weight', 1: 'fc_bias'})
    weight, bias = np.ones(2), np.ones(2)
    opt.update(0, weight, np.zeros(2), None)
    opt.update(1, bias, np.zeros(2), None)
    np.testing.assert_allclose(weight, [0.5, 0.5])
    np.testing.assert_allclose(bias, [1.0, 1.0])
    rebuilt = optimizer.from_config(json.loads(json.dumps(opt.to_config())))
    assert rebuilt.wd_mult == {1: 0.0}


def test_factor_scheduler():
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, stop_factor_lr=0.1, base_lr=1.0)
    assert [sched(t) for t in range(1, 10)] == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0.1]


def test_multifactor_scheduler():
    sched = lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    assert [sched(t) for t in (1, 2, 3, 5, 6)] == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01])
    with pytest.raises(ConfigError, match='increase'):
        lr_scheduler.MultiFactorScheduler(step=[5, 2])


def test_cosine_scheduler_with_warmup():
    sched = lr_scheduler.CosineScheduler(max_update=12, base_lr=1.0, final_lr=0.0, warmup_steps=2)
    assert sched(1) == pytest.approx(0.5)
    assert sched(2) == pytest.approx(1.0)
    assert sched(7) == pytest.approx(0.5)
    assert sched(12) == 0.0 and sched(100) == 0.0


def test_scheduler_drives_optimizer_and_survives_config():
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.5)
    opt = optimizer.create('sgd', learning_rate=1.0, lr_scheduler=sched)
    weight = np.zeros(1)
    for _ in range(3):
        opt.update(0, weight, np.ones(1), None)
    np.testing.assert_allclose(weight, [-(1.0 + 0.5 + 0.25)])
    rebuilt = optimizer.from_config(json.loads(json.dumps(opt.to_config())))
    rebuilt.set_update_counts(opt.update_counts())
    assert rebuilt.learning_rate == opt.learning_rate == 0.25
    with pytest.raises(ConfigError, match='nope'):
        lr_scheduler.scheduler_from_config({'name': 'nope', 'params': {}})


def test_updater_keeps_state_per_index():
    updater = optimizer.get_updater(optimizer.create('sgd', learning_rate=1.0, momentum=0.5))
    weight = np.zeros(1)
    updater(0, np.ones(1), weight)
    updater(0, np.ones(1), weight)
    np.testing.assert_allclose(weight, [-(1.0 + 1.5)])


def test_create_names_an_unknown_hyper_parameter():
    with pytest.raises(ConfigError, match=r"unknown hyper-parameter\(s\) \['momentom'\] for optimizer 'sgd'"):
        optimizer.create('sgd', learning_rate=0.1, momentom=0.9)

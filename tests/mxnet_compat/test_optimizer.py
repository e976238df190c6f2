"""Ports of Apache MXNet 1.9.1 tests/python/unittest/test_optimizer.py.

MXNet compares each optimizer with a Python re-implementation over grids of options (compare_optimizer); here
each sparkps optimizer is compared, over the same grids, with the numpy kernels of ``kernels.py`` (written
from src/operator/optimizer_op-inl.h), for three consecutive updates, weights and states alike. Row-sparse
and CSR variants of those MXNet tests are left out (dense arrays only here).
"""
import itertools
import json
import math

import numpy as np
import pytest

import sparkps as sp
from sparkps import lr_scheduler, optimizer

from .kernels import REFERENCES

SHAPE = (3, 4, 5)
CG = [{}, {'clip_gradient': 0.4}, {'clip_gradient': 0.5}]
RG = [{}, {'rescale_grad': 0.14}, {'rescale_grad': 0.8}]
WD = [{}, {'wd': 0.03}, {'wd': 0.05}, {'wd': 0.07}]
MP = [{}, {'multi_precision': False}, {'multi_precision': True}]


def compare_optimizer(name, kwargs, dtype, rtol=1e-4, atol=1e-5, steps=3, seed=0):
    """Run sparkps's optimizer ``name`` and the numpy kernel on the same weights and gradients."""
    rng = np.random.default_rng(seed)
    w0 = rng.uniform(size=SHAPE)
    grads = [rng.uniform(-1, 1, size=SHAPE) for _ in range(steps)]
    opt = optimizer.create(name, **kwargs)
    ref = REFERENCES[name](**kwargs)
    weight = w0.astype(dtype)
    state = opt.create_state_multi_precision(0, weight)
    ref_w = weight.astype(np.float64)
    ref_state = ref.state(ref_w)
    for t, grad in enumerate(grads, 1):
        opt.update_multi_precision(0, weight, grad.astype(dtype), state)
        ref_w = ref.step(t, ref_w, grad.astype(dtype).astype(np.float64), ref_state)
    np.testing.assert_allclose(weight.astype(np.float64), ref_w, rtol=rtol, atol=atol,
                               err_msg=f'{name} {kwargs} {np.dtype(dtype).name}')
    inner = list(state or ())
    if dtype == np.float16 and kwargs.get('multi_precision'):
        np.testing.assert_allclose(inner[0], ref_w, rtol=1e-4, atol=1e-5)
        inner = inner[1:]
    assert len(inner) == len(ref_state)
    for got, expected in zip(inner, ref_state):
        np.testing.assert_allclose(np.asarray(got, np.float64), expected, rtol=max(rtol, 1e-4), atol=max(atol, 1e-5))


def grid(*option_lists):
    for combo in itertools.product(*option_lists):
        yield {k: v for option in combo for k, v in option.items()}


def run_grid(name, option_lists, dtypes=(np.float16, np.float32, np.float64), fp16_tol=(1e-3, 1e-3), **tol):
    """compare_optimizer over every option combination and dtype; float16 only with multi_precision
    (MXNet skips the rest). Returns the number of cases compared."""
    cases = 0
    for dtype in dtypes:
        for kwargs in grid(*option_lists):
            if dtype == np.float16 and not kwargs.get('multi_precision'):
                continue
            if dtype == np.float16:
                compare_optimizer(name, kwargs, dtype, rtol=fp16_tol[0], atol=fp16_tol[1])
            else:
                compare_optimizer(name, kwargs, dtype, **tol)
            cases += 1
    assert cases > 0
    return cases


def test_learning_rate():
    """MXNet: test_learning_rate."""
    o1 = optimizer.Optimizer(learning_rate=0.01)
    o1.set_learning_rate(0.2)
    assert o1.learning_rate == 0.2
    o2 = optimizer.Optimizer(lr_scheduler=lr_scheduler.FactorScheduler(step=1), learning_rate=0.3)
    assert o2.learning_rate == 0.3
    o2.lr_scheduler.base_lr = 0.4
    assert o2.learning_rate == 0.4
    o3 = optimizer.Optimizer(lr_scheduler=lr_scheduler.FactorScheduler(step=1, base_lr=1024))
    assert o3.learning_rate == 1024


def test_learning_rate_expect_user_warning():
    """MXNet: test_learning_rate_expect_user_warning."""
    o = optimizer.Optimizer(lr_scheduler=lr_scheduler.FactorScheduler(step=1), learning_rate=0.3)
    with pytest.raises(UserWarning, match='LRScheduler of the optimizer has already been defined'):
        o.set_learning_rate(0.5)


def test_lr_wd_mult():
    """MXNet: test_lr_wd_mult. Op-level multipliers are given with AttrScope (sparkps's FullyConnected takes
    no lr_mult keyword); they reach the implicit fc1_weight/fc2_* arguments as in MXNet."""
    sym = sp.sym
    data = sym.Variable('data')
    bias = sym.Variable('fc1_bias', lr_mult=1.0)
    with sym.AttrScope(lr_mult='0'):
        fc1 = sym.FullyConnected(data=data, bias=bias, name='fc1', num_hidden=10)
    with sym.AttrScope(wd_mult='0.5'):
        fc2 = sym.FullyConnected(data=fc1, name='fc2', num_hidden=10)
    names = [n for n in fc2.list_arguments() if n != 'data']
    idx2name = dict(enumerate(names))
    opt = optimizer.create('sgd', learning_rate=1.0, wd=0.0, sym=fc2, param_idx2name=idx2name)
    assert {idx2name[i]: v for i, v in opt.lr_mult.items()} == {'fc1_bias': 1.0, 'fc1_weight': 0.0}
    assert {idx2name[i]: v for i, v in opt.wd_mult.items()} == {'fc2_bias': 0.5, 'fc2_weight': 0.5,
                                                                 'fc1_bias': 0.0}
    exe = fc2.simple_bind(sp.cpu(), data=(5, 10))
    rng = np.random.default_rng(0)
    for name in names:
        exe.arg_dict[name][...] = rng.uniform(-1, 1, size=exe.arg_dict[name].shape)
    before = {n: exe.arg_dict[n].copy() for n in names}
    exe.forward(is_train=True, data=rng.uniform(-1, 1, size=(5, 10)).astype(np.float32))
    exe.backward([exe.outputs[0].copy()])
    updater = optimizer.get_updater(opt)
    for i, name in idx2name.items():
        updater(i, exe.grad_dict[name], exe.arg_dict[name])
    np.testing.assert_allclose(exe.arg_dict['fc1_weight'], before['fc1_weight'], rtol=0, atol=1e-10)
    assert not np.allclose(exe.arg_dict['fc1_bias'], before['fc1_bias'], atol=1e-1)
    assert not np.allclose(exe.arg_dict['fc2_weight'], before['fc2_weight'], atol=1e-1)
    rebuilt = optimizer.from_config(json.loads(json.dumps(opt.to_config())))
    assert rebuilt.lr_mult == opt.lr_mult and rebuilt.wd_mult == opt.wd_mult


def test_sgd():
    """MXNet: test_sgd (dense part)."""
    run_grid('sgd', [[{}, {'momentum': 0.9}], CG, RG, WD, MP])


def test_nag():
    """MXNet: test_nag."""
    run_grid('nag', [[{}, {'momentum': 0.9}], CG, RG, WD, MP], rtol=1e-3, atol=1e-4)


def test_nag_momentum_is_scaled_by_the_learning_rate_in_force():
    """MXNet's nag_mom_update keeps momentum scaled by -lr: lowering lr leaves past steps' momentum as is."""
    opt = optimizer.create('nag', learning_rate=1.0, momentum=0.5)
    weight = np.zeros(1)
    state = opt.create_state(0, weight)
    opt.update(0, weight, np.ones(1), state)
    opt.set_learning_rate(0.1)
    opt.update(0, weight, np.zeros(1), state)
    np.testing.assert_allclose(state[0], [-0.5])                   # 0.5 * (-1.0 * lr_1) - 0.1 * 0
    np.testing.assert_allclose(weight, [-1.75])                    # an unscaled momentum would give -1.525


def test_lamb():
    """MXNet: test_lamb (float32 and, with multi_precision, float16)."""
    bc = [{}, {'bias_correction': False}, {'bias_correction': True}]
    lb = [{}, {'lower_bound': None}, {'lower_bound': 1e-3}]
    ub = [{}, {'upper_bound': None}, {'upper_bound': 10}]
    run_grid('lamb', [CG, RG, WD, bc, lb, ub, [{'multi_precision': False}, {'multi_precision': True}]],
             dtypes=(np.float16, np.float32))


@pytest.mark.parametrize('seed', [1234, 42])
def test_sgld(seed):
    """MXNet: test_sgld; the noise comes from the optimizer's own seeded generator on both sides."""
    for dtype in (np.float16, np.float32, np.float64):
        for kwargs in grid(CG, WD, MP):
            if dtype == np.float16 and not kwargs.get('multi_precision'):
                continue
            tol = (1e-3, 1e-2) if dtype == np.float16 else (1e-5, 1e-3)
            compare_optimizer('sgld', dict(kwargs, seed=seed), dtype, rtol=tol[0], atol=tol[1])


def test_sgld_noise_has_the_variance_of_the_learning_rate():
    opt = optimizer.create('sgld', learning_rate=0.04, seed=3)
    weight = np.zeros(200_000)
    opt.update(0, weight, np.zeros_like(weight), None)
    assert abs(weight.std() - 0.2) < 0.002 and abs(weight.mean()) < 0.002


def test_ftml():
    """MXNet: test_ftml."""
    b1 = [{}, {'beta1': 0.5}, {'beta1': 0.7}]
    b2 = [{}, {'beta2': 0.8}, {'beta2': 0.9}]
    run_grid('ftml', [b1, b2, CG, RG, WD], dtypes=(np.float32,), rtol=1e-3, atol=1e-4)


def test_adam():
    """MXNet: test_adam (dense part: lazy_update does not apply to dense gradients)."""
    run_grid('adam', [CG, RG, WD, MP], rtol=1e-4, atol=2e-5)


def test_adamax():
    """MXNet: test_adamax."""
    run_grid('adamax', [CG, RG, WD, MP])


def test_signum():
    """MXNet: test_signum."""
    lh = [{}, {'wd_lh': 0.015}, {'wd_lh': 0.0}]
    lr = [{'learning_rate': 0.05}, {'learning_rate': 0.01}]
    run_grid('signum', [CG, RG, WD, lh, lr, [{}, {'momentum': 0.9}, {'momentum': 0.0}]],
             dtypes=(np.float32, np.float64))


def test_rms():
    """MXNet: test_rms (dense part)."""
    cw = [{}, {'clip_weights': 0.01}]
    centered = [{}, {'centered': False}, {'centered': True}]
    run_grid('rmsprop', [cw, CG, centered, RG, WD, MP], dtypes=(np.float16, np.float32), fp16_tol=(0.1, 0.1),
             rtol=0.01, atol=0.01)
    run_grid('rmsprop', [cw, CG, centered, RG, WD], dtypes=(np.float64,), rtol=1e-9, atol=1e-12)


def test_ftrl():
    """MXNet: test_ftrl (dense part)."""
    cases = [{}, {'clip_gradient': 0.5}, {'clip_gradient': 0.4, 'rescale_grad': 0.14}, {'rescale_grad': 0.8},
             {'clip_gradient': 0.5, 'wd': 0.07}, {'clip_gradient': 0.4, 'rescale_grad': 0.14, 'wd': 0.03},
             {'rescale_grad': 0.8, 'wd': 0.05}, {'rescale_grad': 0.8, 'wd': 0.05, 'lamda1': 0.01},
             {'clip_gradient': 0.5, 'wd': 0.07, 'lamda1': 1.0}]
    for kwargs in cases:
        compare_optimizer('ftrl', kwargs, np.float32)


def test_nadam_numerics():
    """The Python update of MXNet's Nadam, one parameter (MXNet's test_nadam only checks convergence)."""
    b1 = [{}, {'beta1': 0.8}]
    run_grid('nadam', [b1, CG, RG, WD, MP])


def test_nadam():
    """MXNet: test_nadam: a 128-64-1 MLP fits 20 random points to an L1 loss below 0.11 in 60 epochs."""
    sym = sp.sym
    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, size=(20, 10)).astype(np.float32), rng.uniform(-1, 1, size=(20, 1)).astype(np.float32)
    net = sym.Activation(sym.FullyConnected(sym.Variable('data'), name='fc1', num_hidden=128), act_type='relu')
    net = sym.Activation(sym.FullyConnected(net, name='fc2', num_hidden=64), act_type='relu')
    net = sym.FullyConnected(net, name='fc3', num_hidden=1)
    # FeedForward hands labels over as a vector, so the (batch, 1) output is flattened to match it
    loss = sym.MakeLoss(sym.abs(sym.Reshape(net, shape=(-1,)) - sym.Variable('softmax_label')))
    model = sp.FeedForward(loss, num_epoch=60, optimizer='nadam', learning_rate=0.001, wd=0.0005,
                           initializer=sp.initializer.Xavier(magnitude=2), numpy_batch_size=5, seed=0)
    model.fit(X, y.ravel(), eval_metric='loss')
    fitted = sp.FeedForward(net, arg_params=model.arg_params, numpy_batch_size=5).predict(X)
    assert np.abs(fitted - y).mean() < 0.11


class MXNetNadam:
    """MXNet 1.9.1's Nadam.update (python/mxnet/optimizer/optimizer.py) line by line in numpy: one
    ``m_schedule`` for the whole optimizer, ``t`` the updated index's own count."""

    def __init__(self, lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004, wd=0.0):
        self.lr, self.beta1, self.beta2, self.epsilon, self.decay, self.wd = lr, beta1, beta2, epsilon, \
            schedule_decay, wd
        self.m_schedule, self.counts = 1.0, {}

    def update(self, index, weight, grad, state):
        self.counts[index] = t = self.counts.get(index, 0) + 1
        grad = grad + self.wd * weight
        momentum_t = self.beta1 * (1. - 0.5 * (pow(0.96, t * self.decay)))
        momentum_t_1 = self.beta1 * (1. - 0.5 * (pow(0.96, (t + 1) * self.decay)))
        self.m_schedule = self.m_schedule * momentum_t
        m_schedule_next = self.m_schedule * momentum_t_1
        m_t, v_t = state
        m_t[:] = m_t * self.beta1 + (1. - self.beta1) * grad
        v_t[:] = v_t * self.beta2 + (1. - self.beta2) * grad * grad
        grad_prime = grad / (1. - self.m_schedule)
        m_t_prime = m_t / (1. - m_schedule_next)
        v_t_prime = v_t / (1. - pow(self.beta2, t))
        m_t_bar = (1. - momentum_t) * grad_prime + momentum_t_1 * m_t_prime
        weight[:] -= self.lr * m_t_bar / (np.sqrt(v_t_prime) + self.epsilon)


def _nadam_run(opt_update, order, shapes, seed=0):
    rng = np.random.default_rng(seed)
    weights = [rng.uniform(size=s) for s in shapes]
    states = [(np.zeros(s), np.zeros(s)) for s in shapes]
    grads = [[rng.uniform(-1, 1, size=shapes[i]) for i in order] for _ in range(4)]
    for step in grads:
        for i, g in zip(order, step):
            opt_update(i, weights[i], g, states[i])
    return weights, states


def test_nadam_shared_schedule_is_mxnet_s_update_with_several_parameters():
    """schedule='shared' replays MXNet's one m_schedule over interleaved updates of three parameters."""
    shapes, order = [(3, 4), (5,), (2, 2)], [0, 1, 2, 1]
    ours = optimizer.create('nadam', learning_rate=0.01, wd=0.02, schedule='shared')
    got = _nadam_run(lambda i, w, g, s: ours.update(i, w, g, s), order, shapes)
    expected = _nadam_run(MXNetNadam(lr=0.01, wd=0.02).update, order, shapes)
    for w, e in zip(got[0], expected[0]):
        np.testing.assert_allclose(w, e, rtol=1e-12)
    assert ours.m_schedule == pytest.approx(_shared_product(order, 4), rel=1e-12)
    assert optimizer.from_config(ours.to_config()).schedule == 'shared'


def _shared_product(order, steps):
    counts, product = {}, 1.0
    for _ in range(steps):
        for i in order:
            counts[i] = counts.get(i, 0) + 1
            product *= 0.9 * (1 - 0.5 * 0.96 ** (counts[i] * 0.004))
    return product


def test_nadam_per_parameter_schedule_does_not_depend_on_the_other_parameters():
    alone = optimizer.create('nadam', learning_rate=0.01)
    together = optimizer.create('nadam', learning_rate=0.01)
    w_alone = _nadam_run(lambda i, w, g, s: alone.update(i, w, g, s), [0], [(3, 4)])[0][0]
    rng = np.random.default_rng(0)
    w0, w1 = rng.uniform(size=(3, 4)), np.ones(5)
    s0, s1 = (np.zeros((3, 4)), np.zeros((3, 4))), (np.zeros(5), np.zeros(5))
    for _ in range(4):
        together.update(0, w0, rng.uniform(-1, 1, size=(3, 4)), s0)
        together.update(1, w1, np.full(5, 0.3), s1)
    np.testing.assert_allclose(w0, w_alone, rtol=1e-12)
    shared = optimizer.create('nadam', learning_rate=0.01, schedule='shared')
    ws = _nadam_run(lambda i, w, g, s: shared.update(i, w, g, s), [0], [(3, 4)])[0][0]
    np.testing.assert_allclose(ws, w_alone, rtol=1e-12)                     # one parameter: both agree


def test_nadam_shared_schedule_survives_update_counts_restore():
    shapes, order = [(3, 4), (5,)], [0, 1]
    first = optimizer.create('nadam', learning_rate=0.01, schedule='shared')
    weights, states = _nadam_run(lambda i, w, g, s: first.update(i, w, g, s), order, shapes)
    resumed = optimizer.create('nadam', learning_rate=0.01, schedule='shared')
    resumed.set_update_counts(json.loads(json.dumps(first.update_counts())))
    assert resumed.m_schedule == first.m_schedule
    grad = np.full((3, 4), 0.2)
    a, b = weights[0].copy(), weights[0].copy()
    first.update(0, a, grad, tuple(s.copy() for s in states[0]))
    resumed.update(0, b, grad, tuple(s.copy() for s in states[0]))
    np.testing.assert_array_equal(a, b)


def test_nadam_refuses_an_unknown_schedule():
    with pytest.raises(sp.errors.ConfigError, match="nadam schedule must be one of"):
        optimizer.create('nadam', schedule='global')


@pytest.mark.parametrize('dtype, multi_precision', [(np.float64, False), (np.float32, False), (np.float16, True)])
def test_sgld_noise_is_mxnet_s_gaussian(dtype, multi_precision):
    """MXNet draws SGLD's noise from normal(0, sqrt(lr)) with its own generator; sparkps's stream differs, so
    the distribution is what is compared: over 5 updates of 40,000 weights, the increments beyond the
    deterministic step are N(0, sqrt(lr)) (Kolmogorov-Smirnov), independent between steps and elements."""
    from scipy import stats
    lr, wd, n = 0.01, 0.1, 40_000
    opt = optimizer.create('sgld', learning_rate=lr, wd=wd, rescale_grad=0.5, seed=5, multi_precision=multi_precision)
    rng = np.random.default_rng(9)
    weight = rng.uniform(-1, 1, size=n).astype(dtype)
    state = opt.create_state_multi_precision(0, weight)
    noises = []
    for _ in range(5):
        grad = rng.uniform(-1, 1, size=n).astype(dtype)
        before = (state[0] if multi_precision else weight).astype(np.float64)
        opt.update_multi_precision(0, weight, grad, state)
        after = (state[0] if multi_precision else weight).astype(np.float64)
        drift = -lr / 2 * (0.5 * grad.astype(np.float64) + wd * before)
        noises.append(after - before - drift)
    sigma = math.sqrt(lr)
    atol = 1e-3 if dtype == np.float16 else 1e-6
    for noise in noises:
        assert stats.kstest(noise, stats.norm(scale=sigma).cdf).pvalue > 1e-3
        assert abs(noise.std() / sigma - 1) < 0.02 and abs(noise.mean()) < 5 * sigma / math.sqrt(n) + atol
    assert abs(np.corrcoef(noises[0], noises[1])[0, 1]) < 0.03
    assert abs(np.corrcoef(noises[0][:-1], noises[0][1:])[0, 1]) < 0.03


def test_adagrad():
    """MXNet: test_adagrad (dense part); ``eps`` is MXNet 1.x's name, ``epsilon`` the older one."""
    run_grid('adagrad', [[{}, {'eps': 1e-8}], CG, RG, [{}, {'wd': 0.0}, {'wd': 0.05}]], dtypes=(np.float32,))
    assert optimizer.create('adagrad', epsilon=1e-3).eps == 1e-3
    assert optimizer.create('adagrad').float_stable_eps == 1e-7


def test_adadelta():
    """MXNet: test_adadelta."""
    kw = [[{'rho': 0.9}], [{}, {'epsilon': 1e-8}], CG, RG, [{}, {'wd': 0.0}, {'wd': 0.05}]]
    run_grid('adadelta', kw + [[{'multi_precision': True}]], dtypes=(np.float16,))
    run_grid('adadelta', kw, dtypes=(np.float32,))


def test_gamma_parameters_are_decayed_as_mxnet():
    opt = optimizer.create('sgd', wd=0.1, param_idx2name={0: 'bn_gamma', 1: 'bn_beta', 2: 'fc_weight'})
    assert opt.wd_mult == {1: 0.0}


def test_factor_scheduler():
    """MXNet: test_factor_scheduler."""
    sched = lr_scheduler.FactorScheduler(100, 0.1, stop_factor_lr=1e-4, base_lr=1, warmup_steps=20,
                                         warmup_begin_lr=0.1, warmup_mode='constant')
    assert sched(0) == 0.1
    np.testing.assert_almost_equal(sched(10), 0.1)
    assert sched(21) == 1
    np.testing.assert_almost_equal(sched(101), 0.1)
    np.testing.assert_almost_equal(sched(201), 0.01)
    np.testing.assert_almost_equal(sched(1000), 1e-4)


def test_multifactor_scheduler():
    """MXNet: test_multifactor_scheduler."""
    sched = lr_scheduler.MultiFactorScheduler([15, 25], 0.1, base_lr=0.1, warmup_steps=10, warmup_begin_lr=0.05,
                                              warmup_mode='linear')
    assert sched(0) == 0.05
    np.testing.assert_almost_equal(sched(5), 0.05 + (0.1 - 0.05) / 2)
    np.testing.assert_almost_equal(sched(15), 0.1)
    np.testing.assert_almost_equal(sched(16), 0.01)
    np.testing.assert_almost_equal(sched(20), 0.01)
    np.testing.assert_almost_equal(sched(26), 0.001)
    np.testing.assert_almost_equal(sched(100), 0.001)


def test_poly_scheduler():
    """MXNet: test_poly_scheduler."""
    sched = lr_scheduler.PolyScheduler(1000, base_lr=3, pwr=2, final_lr=0, warmup_steps=100, warmup_begin_lr=0,
                                       warmup_mode='linear')
    np.testing.assert_almost_equal(sched(0), 0)
    np.testing.assert_almost_equal(sched(50), 1.5)
    np.testing.assert_almost_equal(sched(100), 3)
    assert sched(101) < sched(100)
    assert sched(500) < 1.6
    np.testing.assert_almost_equal(sched(1000), 0)
    np.testing.assert_almost_equal(sched(550), 3 * (1 - 450 / 900) ** 2)


def test_cosine_scheduler():
    """MXNet: test_cosine_scheduler."""
    sched = lr_scheduler.CosineScheduler(1000, base_lr=3, final_lr=0.1)
    np.testing.assert_almost_equal(sched(0), 3)
    np.testing.assert_almost_equal(sched(1000), 0.1)
    assert sched(500) > 1.5
    assert math.isclose(sched(500), 0.1 + 2.9 / 2)


def test_custom_optimizer_written_for_mxnet():
    """MXNet's test_optimizer.py defines its references as Optimizer subclasses (PySGD, ...): create_state,
    update, _update_count, _get_lr/_get_wd and _index_update_count, registered with Optimizer.register."""

    @optimizer.Optimizer.register
    class PlainSGD(optimizer.Optimizer):
        def create_state(self, index, weight):
            return None

        def update(self, index, weight, grad, state):
            self._update_count(index)
            lr, wd = self._get_lr(index), self._get_wd(index)
            weight[:] = weight - lr * (grad * self.rescale_grad + wd * weight)
            self.last_t = self._index_update_count[index]

    opt = optimizer.Optimizer.create_optimizer('plainsgd', learning_rate=0.5, wd=0.1, rescale_grad=2.0)
    assert isinstance(opt, PlainSGD) and opt.name == 'plainsgd'
    updater = optimizer.get_updater(opt)
    weight = np.ones(3)
    updater(0, np.ones(3), weight)
    updater(0, np.ones(3), weight)
    np.testing.assert_allclose(weight, (1 - 0.5 * (2 + 0.1)) - 0.5 * (2 + 0.1 * (1 - 0.5 * 2.1)))
    assert opt.last_t == 2

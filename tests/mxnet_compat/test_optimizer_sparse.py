"""Ports of MXNet 1.9.1 tests/python/unittest/test_optimizer.py's sparse cases at the level of ``Optimizer.update``:
test_sparse_sgd, test_std_sparse_sgd, test_sparse_adam (lazy and ``lazy_update=False``), test_sparse_adagrad and
test_sparse_ftrl, with row-sparse gradients (``sparkps.rows.values.RowSparse``) on dense and row-sparse weights.
References are MXNet's Python optimizers of that file (PySparseSGD, PyAdam with lazy_update), written in numpy.
Weights are 2-D ((10, 4) and (3, 20) for MXNet's (3, 4, 5)): a RowSparse value holds rows of a table."""
import itertools
import math

import numpy as np
import pytest

from sparkps import backend
from sparkps import optimizer as opt
from sparkps.errors import DataError
from sparkps.rows.values import RowSparse

SHAPES = [(10, 4), (3, 20)]


def sparse_grad(rng, shape):
    ids = np.sort(rng.choice(shape[0], size=max(1, shape[0] // 2), replace=False))
    return RowSparse(ids, rng.normal(size=(ids.size, shape[1])).astype(np.float32), shape)


def py_sparse_sgd(w, mom, grad, lr, wd, momentum, rescale, clip, lazy):
    """MXNet's PySparseSGD (rows the gradient names; all rows with lazy=False, their gradient zero)."""
    dense = np.zeros_like(w)
    dense[grad.ids] = grad.rows
    rows = grad.ids if lazy else range(w.shape[0])
    for row in rows:
        g = dense[row] * rescale
        g = np.clip(g, -clip, clip) if clip is not None else g
        if momentum == 0:
            w[row] = (1 - lr * wd) * w[row] - lr * g
        else:
            mom[row] = momentum * mom[row] - lr * wd * w[row] - lr * g
            w[row] += mom[row]


def py_adam(w, mean, var, grad, t, lr, wd, beta1, beta2, eps, rescale, clip, lazy):
    """MXNet's PyAdam with lazy_update: rows outside the gradient are skipped when lazy."""
    dense = np.zeros_like(w)
    dense[grad.ids] = grad.rows
    lr = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    for row in (grad.ids if lazy else range(w.shape[0])):
        g = dense[row] * rescale + wd * w[row]
        g = np.clip(g, -clip, clip) if clip is not None else g
        mean[row] = beta1 * mean[row] + (1 - beta1) * g
        var[row] = beta2 * var[row] + (1 - beta2) * g * g
        w[row] -= lr * mean[row] / (np.sqrt(var[row]) + eps)


def run_both(optimizer, shape, reference, row_sparse_weight, steps=3):
    """``steps`` updates of sparkps's ``optimizer`` and of ``reference(w, state, grad, t)``; compares weights and
    states after each."""
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    w = rng.normal(size=shape).astype(np.float32)
    weight = RowSparse.from_dense(w.copy()) if row_sparse_weight else w.copy()
    state = optimizer.create_state(0, weight)
    ref_state = [np.zeros(shape, np.float32) for _ in range(2)]
    for t in range(1, steps + 1):
        grad = sparse_grad(rng, shape)
        optimizer.update(0, weight, grad, state)
        reference(w, ref_state, grad, t)
        got = weight.rows if row_sparse_weight else weight
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-6)
        for mine, theirs in zip(state or (), ref_state):
            np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-6)


OPTIONS = list(itertools.product([{}, {'momentum': 0.9}], [{}, {'clip_gradient': 0.4}], [{}, {'rescale_grad': 0.14}],
                                 [{}, {'wd': 0.03}]))


@pytest.mark.parametrize('row_sparse_weight', [True, False], ids=['rsp_weight', 'dense_weight'])
@pytest.mark.parametrize('options', OPTIONS, ids=str)
@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_sparse_sgd(shape, options, row_sparse_weight):
    # MXNet: test_sparse_sgd
    kw = {k: v for o in options for k, v in o.items()}
    sgd = opt.SGD(learning_rate=0.1, **kw)

    def reference(w, state, grad, t):
        py_sparse_sgd(w, state[0], grad, 0.1, kw.get('wd', 0), kw.get('momentum', 0), kw.get('rescale_grad', 1),
                      kw.get('clip_gradient'), lazy=True)
    run_both(sgd, shape, reference, row_sparse_weight)


@pytest.mark.parametrize('options', OPTIONS, ids=str)
def test_std_sparse_sgd(options):
    # MXNet: test_std_sparse_sgd (lazy_update=False: every row moves, absent rows by weight decay and momentum)
    kw = {k: v for o in options for k, v in o.items()}
    sgd = opt.SGD(learning_rate=0.1, lazy_update=False, **kw)

    def reference(w, state, grad, t):
        py_sparse_sgd(w, state[0], grad, 0.1, kw.get('wd', 0), kw.get('momentum', 0), kw.get('rescale_grad', 1),
                      kw.get('clip_gradient'), lazy=False)
    run_both(sgd, (10, 4), reference, row_sparse_weight=False)


ADAM_OPTIONS = list(itertools.product([{}, {'beta1': 0.5}], [{}, {'beta2': 0.8}], [{}, {'clip_gradient': 0.4}],
                                      [{}, {'rescale_grad': 0.14}], [{}, {'wd': 0.03}]))


@pytest.mark.parametrize('lazy_update, row_sparse_weight', [(True, True), (True, False), (False, False)])
@pytest.mark.parametrize('options', ADAM_OPTIONS, ids=str)
def test_sparse_adam(options, lazy_update, row_sparse_weight):
    # MXNet: test_sparse_adam
    kw = {k: v for o in options for k, v in o.items()}
    adam = opt.Adam(learning_rate=0.01, lazy_update=lazy_update, **kw)

    def reference(w, state, grad, t):
        py_adam(w, state[0], state[1], grad, t, 0.01, kw.get('wd', 0), kw.get('beta1', 0.9), kw.get('beta2', 0.999),
                1e-8, kw.get('rescale_grad', 1), kw.get('clip_gradient'), lazy=lazy_update)
    run_both(adam, (10, 4), reference, row_sparse_weight)


@pytest.mark.parametrize('name, kw', [('adagrad', {}), ('adagrad', {'clip_gradient': 0.4}), ('ftrl', {}),
                                      ('ftrl', {'lamda1': 0.05, 'wd': 0.03})])
def test_sparse_adagrad(name, kw):
    # MXNet: test_sparse_adagrad (and test_sparse_ftrl): the rows a gradient names move as the dense update moves
    # them, the others (weight and state) keep their values
    rng = np.random.default_rng(5)
    lazy, dense = opt.create(name, learning_rate=0.1, **kw), opt.create(name, learning_rate=0.1, **kw)
    w = rng.normal(size=(10, 4)).astype(np.float32)
    ref = w.copy()
    state, ref_state = lazy.create_state(0, w), dense.create_state(0, ref)
    for _ in range(3):
        grad = sparse_grad(rng, w.shape)
        before, before_state = w.copy(), [s.copy() for s in state]
        lazy.update(0, w, grad, state)
        rows, rows_state = ref[grad.ids], tuple(s[grad.ids] for s in ref_state)
        dense.update(0, rows, grad.rows, rows_state)
        ref[grad.ids] = rows
        for whole, part in zip(ref_state, rows_state):
            whole[grad.ids] = part
        np.testing.assert_allclose(w, ref, rtol=1e-5)
        untouched = np.setdiff1d(np.arange(10), grad.ids)
        np.testing.assert_array_equal(w[untouched], before[untouched])
        for mine, old in zip(state, before_state):
            np.testing.assert_array_equal(mine[untouched], old[untouched])


def test_an_optimizer_without_a_sparse_kernel_densifies_the_gradient():
    rng = np.random.default_rng(2)
    w = rng.normal(size=(6, 3)).astype(np.float32)
    grad = sparse_grad(rng, w.shape)
    a, b = opt.create('rmsprop', wd=0.01), opt.create('rmsprop', wd=0.01)
    wa, wb = w.copy(), w.copy()
    a.update(0, wa, grad, a.create_state(0, wa))
    b.update(0, wb, grad.to_dense(), b.create_state(0, wb))
    np.testing.assert_array_equal(wa, wb)


def test_a_row_sparse_weight_holding_some_rows_updates_those_the_gradient_names():
    weight = RowSparse(np.array([7, 2, 5]), np.ones((3, 2), np.float32), (10, 2))
    sgd = opt.SGD(learning_rate=0.5)
    sgd.update(0, weight, RowSparse(np.array([5, 7, 5]), np.ones((3, 2), np.float32), (10, 2)), None)
    np.testing.assert_allclose(weight.rows, [[0.5, 0.5], [1, 1], [0, 0]])   # id 5 twice: its rows summed
    with pytest.raises(DataError, match="names row 3, which its weight does not hold"):
        sgd.update(0, weight, RowSparse(np.array([3]), np.ones((1, 2), np.float32), (10, 2)), None)


def test_lazy_update_travels_in_the_config():
    back = opt.from_config(opt.SGD(lazy_update=False, momentum=0.9).to_config())
    assert back.lazy_update is False and opt.from_config(opt.Adam().to_config()).lazy_update is True


def test_sparse_sgd_multi_precision_keeps_the_float32_master_copy():
    # MXNet: test_sparse_sgd (mp_options: multi_precision=True on a float16 weight)
    rng = np.random.default_rng(9)
    w = rng.normal(size=(10, 4)).astype(np.float16)
    sgd, ref = opt.SGD(learning_rate=0.1, momentum=0.9, multi_precision=True), opt.SGD(learning_rate=0.1, momentum=0.9)
    state = sgd.create_state_multi_precision(0, w)
    master = w.astype(np.float32)
    ref_state = ref.create_state(0, master)
    for _ in range(3):
        grad = sparse_grad(rng, w.shape)
        sgd.update_multi_precision(0, w, grad, state)
        ref.update(0, master, grad, ref_state)
        np.testing.assert_array_equal(state[0], master)
        np.testing.assert_array_equal(w, master.astype(np.float16))


@pytest.mark.gpu
@pytest.mark.skipif(not backend.gpu_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize('name, kw', [('sgd', {'momentum': 0.9, 'wd': 0.03}), ('adam', {}),
                                      ('adam', {'lazy_update': False}), ('rmsprop', {})])
def test_sparse_update_on_the_gpu_equals_numpy(name, kw):
    # MXNet: test_sparse_sgd, test_sparse_adam (their GPU runs: CuPy weights and gradient rows)
    import cupy
    rng = np.random.default_rng(4)
    w = rng.normal(size=(10, 4)).astype(np.float32)
    host, device = opt.create(name, **kw), opt.create(name, **kw)
    wg = cupy.asarray(w)
    hs, ds = host.create_state(0, w), device.create_state(0, wg)
    for _ in range(3):
        grad = sparse_grad(rng, w.shape)
        host.update(0, w, grad, hs)
        device.update(0, wg, RowSparse(grad.ids, cupy.asarray(grad.rows), grad.shape), ds)
        np.testing.assert_allclose(cupy.asnumpy(wg), w, rtol=1e-5, atol=1e-7)

"""The three cases of Apache MXNet 1.9.1 tests/python/unittest/test_optimizer.py that need more than one dense
array: test_sparse_sgd (lazy SGD on row-sparse gradients), test_std_sparse_sgd (``lazy_update=False``) and
test_multilamb (one multi-tensor LAMB update).

Changes from MXNet: sparkps's row-sparse values are 2-D tables, so MXNet's (3, 4, 5) weight is the table
(3, 20) (rows are the same rows); a row-sparse gradient updates a row-sparse kvstore key (MXNet's
``w_stype='row_sparse'`` half; a dense key refuses row-sparse gradients, so the ``w_stype='default'`` half has no
counterpart); ``lazy_update=False`` is the row-sparse gradient pushed densified to a dense key. test_multilamb
uses the same layer pattern at 1/16 of MXNet's sizes to keep the run short.
"""
import itertools

import numpy as np
import pytest

import sparkps as sp
from sparkps import optimizer
from sparkps.rows.values import RowSparse

from .kernels import REFERENCES

CG = [{}, {'clip_gradient': 0.4}, {'clip_gradient': 0.5}]
RG = [{}, {'rescale_grad': 0.14}, {'rescale_grad': 0.8}]
WD = [{}, {'wd': 0.03}, {'wd': 0.05}, {'wd': 0.07}]


def grid(*option_lists):
    for combo in itertools.product(*option_lists):
        yield {k: v for option in combo for k, v in option.items()}


def clip(x, c):
    return x if c is None else np.clip(x, -c, c)


class PySparseSGD:
    """MXNet's PySparseSGD: SGD applied only to the rows the gradient names (the others keep weight and
    momentum)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=None, **_):
        self.lr, self.momentum, self.wd, self.rescale, self.clip = learning_rate, momentum, wd, rescale_grad, \
            clip_gradient

    def update(self, weight, ids, rows, mom):
        lr, wd = self.lr, self.wd
        for row, grad in zip(ids, rows):
            g = clip(grad * self.rescale, self.clip)
            if self.momentum == 0.0:
                weight[row] = (1 - lr * wd) * weight[row] - lr * g
            else:
                mom[row] = self.momentum * mom[row] - lr * wd * weight[row] - lr * g
                weight[row] += mom[row]


def _row_sparse_grads(rng, num_rows, dim, steps):
    """Gradients naming a random non-empty subset of the rows at each step."""
    grads = []
    for _ in range(steps):
        ids = np.sort(rng.choice(num_rows, size=rng.integers(1, num_rows + 1), replace=False))
        grads.append(RowSparse(ids, rng.uniform(-1, 1, size=(len(ids), dim)).astype(np.float32), (num_rows, dim)))
    return grads


@pytest.mark.parametrize('momentum', [{}, {'momentum': 0.9}])
def test_sparse_sgd(momentum):
    """MXNet: test_sparse_sgd (row-sparse weight, row-sparse gradient; three pushes so that rows skipped by a
    gradient show they keep their momentum)."""
    cases = 0
    for kwargs in grid([momentum], CG, RG, WD, [{}, {'multi_precision': False}, {'multi_precision': True}]):
        rng = np.random.default_rng(cases)
        weight = rng.uniform(size=(3, 4, 5)).astype(np.float32).reshape(3, 20)
        kv = sp.kvstore.create('local')
        kv.init(0, RowSparse.from_dense(weight))
        kv.set_optimizer(optimizer.create('sgd', **kwargs))
        reference, expected, mom = PySparseSGD(**kwargs), weight.astype(np.float64), np.zeros((3, 20))
        for grad in _row_sparse_grads(rng, 3, 20, 3):
            kv.push(0, grad)
            reference.update(expected, grad.ids, grad.rows.astype(np.float64), mom)
        got = np.zeros((3, 20), np.float32)
        kv.pull(0, out=got)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=str(kwargs))
        cases += 1
    assert cases == 108


@pytest.mark.parametrize('momentum', [{'momentum': 0.0}, {'momentum': 0.9}])
def test_std_sparse_sgd(momentum):
    """MXNet: test_std_sparse_sgd (SGD(lazy_update=False) on a row-sparse gradient = the standard update of
    the densified gradient: every row decays and carries momentum)."""
    for seed, kwargs in enumerate(grid([momentum], CG, RG, WD)):
        rng = np.random.default_rng(seed)
        weight = rng.uniform(size=(3, 20)).astype(np.float32)
        grad = _row_sparse_grads(rng, 3, 20, 1)[0]
        kv = sp.kvstore.create('local')
        kv.init(0, weight)
        kv.set_optimizer(optimizer.create('sgd', **kwargs))
        kv.push(0, grad.to_dense())
        reference = REFERENCES['sgd'](**kwargs)
        expected = reference.step(1, weight.astype(np.float64), grad.to_dense().astype(np.float64),
                                  reference.state(weight))
        got = np.zeros_like(weight)
        kv.pull(0, out=got)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=str(kwargs))
        untouched = np.setdiff1d(np.arange(3), grad.ids)
        if kwargs.get('wd') and len(untouched):
            assert not np.allclose(got[untouched], weight[untouched])      # unlike the lazy update


def _multilamb_shapes():
    dims_x, dims_y, occurrences = [64, 256, 64], [1, 1, 64], [2, 1, 2]
    return [(dx, dy) for _ in range(4) for dx, dy, n in zip(dims_x, dims_y, occurrences) for _ in range(n)]


@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
def test_multilamb(dtype):
    """MXNet: test_multilamb: one update of 20 tensors by a list of indices equals each tensor's own LAMB
    update (the numpy kernel of kernels.py), weights and states."""
    shapes = _multilamb_shapes()
    for seed, kwargs in enumerate(grid(CG, RG, WD, [{'bias_correction': False}, {'bias_correction': True}])):
        if dtype == np.float16:
            kwargs['multi_precision'] = True
        rng = np.random.default_rng(seed)
        weights = [rng.uniform(size=s).astype(dtype) for s in shapes]
        grads = [rng.uniform(size=s).astype(dtype) for s in shapes]
        opt = optimizer.create('lamb', **kwargs)
        states = [opt.create_state_multi_precision(i, w) for i, w in enumerate(weights)]
        start = [w.astype(np.float64) for w in weights]
        opt.update_multi_precision(list(range(len(shapes))), weights, grads, states)
        for i, (w0, g) in enumerate(zip(start, grads)):
            reference = REFERENCES['lamb'](**kwargs)
            ref_state = reference.state(w0)
            expected = reference.step(1, w0, g.astype(np.float64), ref_state)
            atol = 1e-2 if dtype == np.float16 else 1e-3
            np.testing.assert_allclose(weights[i].astype(np.float64), expected, rtol=1e-6, atol=atol,
                                       err_msg=f'tensor {i} {kwargs}')
            inner = list(states[i])[1:] if dtype == np.float16 else list(states[i])
            for got, want in zip(inner, ref_state):
                np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6, atol=1e-3)
        assert opt.index_update_count == {i: 1 for i in range(len(shapes))}


def test_multi_tensor_update_refuses_lists_of_different_lengths():
    opt = optimizer.create('lamb')
    w = [np.ones(2), np.ones(2)]
    with pytest.raises(sp.errors.ConfigError, match="2 indices, 2 weights, 1 gradients and 2 states must match"):
        opt.update([0, 1], w, [np.ones(2)], [opt.create_state(i, x) for i, x in enumerate(w)])

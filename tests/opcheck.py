"""Shared helpers for op tests: run a symbol on a backend, and check its backward graph against
central differences (in float64)."""
import numpy as np
import pytest

from sparkps import backend

CONTEXTS = ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not backend.gpu_available(), reason="needs CuPy and a CUDA device")])]


def run(symbol, ctx="cpu", is_train=False, dtype="float64", grad_req="null", **inputs):
    """Bind ``symbol`` to the inputs' shapes, run forward, return (executor, numpy outputs)."""
    shapes = {k: np.shape(v) for k, v in inputs.items()}
    exe = symbol.simple_bind(ctx, grad_req=grad_req, dtype=dtype, **shapes)
    exe.forward(is_train=is_train, **inputs)
    return exe, [backend.asnumpy(o).copy() for o in exe.outputs]


def check_gradients(symbol, inputs, wrt, objective=None, ctx="cpu", is_train=True, eps=1e-6,
                    rtol=1e-5, atol=1e-7, max_points=24, seed=0):
    """Compare exe.backward() with central differences of a scalar objective of the outputs.

    ``objective(outputs)`` defaults to sum(w_i * out_i) with fixed random weights w (which are
    then passed as out_grads); loss heads, which ignore out_grads, need their own objective.
    """
    rng = np.random.default_rng(seed)
    inputs = {k: np.asarray(v, dtype=np.float64) for k, v in inputs.items()}
    reqs = {n: ("write" if n in wrt else "null") for n in symbol.list_arguments()}
    exe = symbol.simple_bind(ctx, grad_req=reqs, dtype="float64", **{k: v.shape for k, v in inputs.items()})
    weights = None
    if objective is None:
        _, outs, _ = symbol.infer_shape(**{k: v.shape for k, v in inputs.items()})
        weights = [rng.normal(size=s) for s in outs]
        objective = lambda outputs: sum(float((w * o).sum()) for w, o in zip(weights, outputs))  # noqa: E731

    def value(feed):
        exe.seed(seed)
        exe.forward(is_train=is_train, **feed)
        return objective([backend.asnumpy(o) for o in exe.outputs])

    value(inputs)
    xp = backend.get_array_module(ctx)
    exe.backward(None if weights is None else [xp.asarray(w) for w in weights])
    analytic = {n: backend.asnumpy(exe.grad_dict[n]).copy() for n in wrt}
    for name in wrt:
        base = inputs[name]
        flat_points = rng.permutation(base.size)[:max_points]
        for flat in flat_points:
            index = np.unravel_index(flat, base.shape)
            plus, minus = base.copy(), base.copy()
            plus[index] += eps
            minus[index] -= eps
            numeric = (value({**inputs, name: plus}) - value({**inputs, name: minus})) / (2 * eps)
            got = analytic[name][index]
            assert abs(got - numeric) <= atol + rtol * abs(numeric), (
                "d/d%s%s: backward graph gives %r, central difference %r" % (name, index, got, numeric))
    return analytic


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def cross_entropy(label):
    """Objective for SoftmaxOutput: -sum log p[label]."""
    rows = np.arange(len(label))
    return lambda outputs: float(-np.log(outputs[0][rows, label.astype(int)]).sum())

"""dot, batch_dot, transpose, broadcast_*, unary math, scalar ops and value reductions: forward against
numpy, backward graph against central differences (tests/opcheck.py)."""
import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import check_gradients, run
from sparkps.errors import ShapeError

RNG = np.random.default_rng(7)
A, B = sym.var("a"), sym.var("b")


def _away_from(x, points, margin=0.05):
    """x nudged so that no element lies within ``margin`` of a non-differentiable point."""
    for p in points:
        close = np.abs(x - p) < margin
        x = np.where(close, p + np.sign(x - p + 1e-12) * margin * 2, x)
    return x


@pytest.mark.parametrize("ta,tb,ashape,bshape,expected", [
    (False, False, (3, 4), (4, 5), (3, 5)),
    (True, False, (4, 3), (4, 5), (3, 5)),
    (False, True, (3, 4), (5, 4), (3, 5)),
    (True, True, (4, 3), (5, 4), (3, 5)),
    (False, False, (2, 3, 4), (4, 5), (2, 3, 5)),
    (False, False, (4,), (4,), (1,)),
])
def test_dot_forward_and_gradient(ta, tb, ashape, bshape, expected):
    net = sym.dot(A, B, transpose_a=ta, transpose_b=tb)
    a, b = RNG.normal(size=ashape), RNG.normal(size=bshape)
    _, (out,) = run(net, a=a, b=b)
    ma = a.reshape(-1, a.shape[-1]) if not ta else a.reshape(a.shape[0], -1).T
    mb = b.reshape(b.shape[0], -1) if not tb else b.reshape(-1, b.shape[-1]).T
    assert out.shape == expected
    np.testing.assert_allclose(out.reshape(-1), (ma @ mb).reshape(-1), rtol=1e-12)
    check_gradients(net, {"a": a, "b": b}, ["a", "b"])


def test_dot_shape_mismatch_names_both_inputs():
    with pytest.raises(ShapeError, match="lhs 'a'.*rhs 'b'"):
        sym.dot(A, B).infer_shape(a=(2, 3), b=(4, 5))


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_dot_forward_and_gradient(ta, tb):
    a = RNG.normal(size=(2, 4, 3) if ta else (2, 3, 4))
    b = RNG.normal(size=(2, 5, 4) if tb else (2, 4, 5))
    net = sym.batch_dot(A, B, transpose_a=ta, transpose_b=tb)
    _, (out,) = run(net, a=a, b=b)
    ea = a.swapaxes(1, 2) if ta else a
    eb = b.swapaxes(1, 2) if tb else b
    np.testing.assert_allclose(out, ea @ eb, rtol=1e-12)
    check_gradients(net, {"a": a, "b": b}, ["a", "b"])


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, 0, 1)])
def test_transpose(axes):
    net = sym.transpose(A) if axes is None else sym.transpose(A, axes=axes)
    a = RNG.normal(size=(2, 3, 4))
    _, (out,) = run(net, a=a)
    np.testing.assert_array_equal(out, np.transpose(a, None if axes is None else [x % 3 for x in axes]))
    check_gradients(net, {"a": a}, ["a"])


BROADCAST = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
             "maximum": np.maximum, "minimum": np.minimum, "power": np.power, "hypot": np.hypot}


@pytest.mark.parametrize("kind", sorted(BROADCAST))
@pytest.mark.parametrize("ashape,bshape", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,))])
def test_broadcast_binary(kind, ashape, bshape):
    a = RNG.uniform(0.5, 2.0, size=ashape)
    b = RNG.uniform(0.5, 2.0, size=bshape)
    net = getattr(sym, "broadcast_" + kind)(A, B)
    _, (out,) = run(net, a=a, b=b)
    np.testing.assert_allclose(out, BROADCAST[kind](a, b), rtol=1e-12)
    check_gradients(net, {"a": a, "b": b}, ["a", "b"])


@pytest.mark.parametrize("kind,fn", [("equal", np.equal), ("not_equal", np.not_equal), ("greater", np.greater),
                                     ("greater_equal", np.greater_equal), ("lesser", np.less),
                                     ("lesser_equal", np.less_equal)])
def test_broadcast_comparisons_give_zero_gradient(kind, fn):
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = np.array([[2.0, 2.0, 2.0]])
    net = getattr(sym, "broadcast_" + kind)(A, B)
    _, (out,) = run(net, a=a, b=b)
    np.testing.assert_array_equal(out, fn(a, b).astype(float))
    exe = net.simple_bind("cpu", a=a.shape, b=b.shape, dtype="float64")
    exe.forward(is_train=True, a=a, b=b)
    exe.backward(np.ones_like(a))
    assert not exe.grad_dict["a"].any() and not exe.grad_dict["b"].any()


def test_broadcast_shapes_that_do_not_fit_are_named():
    with pytest.raises(ShapeError, match=r"\(2, 3\) \('a'\) and \(4,\) \('b'\) do not broadcast"):
        sym.broadcast_add(A, B).infer_shape(a=(2, 3), b=(4,))


def test_broadcast_to_axis_like():
    a = RNG.normal(size=(2, 1, 3))
    cases = [(sym.broadcast_to(A, shape=(0, 4, 3)), (2, 4, 3)),
             (sym.broadcast_axis(A, axis=1, size=5), (2, 5, 3)),
             (sym.broadcast_like(A, B), (2, 6, 3))]
    for net, shape in cases:
        feed = {"a": a} if "b" not in net.list_arguments() else {"a": a, "b": np.zeros((2, 6, 3))}
        _, (out,) = run(net, **feed)
        np.testing.assert_array_equal(out, np.broadcast_to(a, shape))
        check_gradients(net, feed, ["a"])
    with pytest.raises(ShapeError, match="axis 0 of data 'a' has size 2, not 1"):
        sym.broadcast_axis(A, axis=0, size=3).infer_shape(a=(2, 1, 3))


UNARY = {
    "abs": (np.abs, [0]), "square": (np.square, []), "sqrt": (np.sqrt, None), "exp": (np.exp, []),
    "log": (np.log, None), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), []), "tanh": (np.tanh, []),
    "relu": (lambda x: np.maximum(x, 0), [0]), "softsign": (lambda x: x / (1 + np.abs(x)), [0]),
    "negative": (np.negative, []), "reciprocal": (np.reciprocal, None), "rsqrt": (lambda x: 1 / np.sqrt(x), None),
    "expm1": (np.expm1, []), "log1p": (np.log1p, None), "sin": (np.sin, []), "cos": (np.cos, []),
    "cbrt": (np.cbrt, None), "log2": (np.log2, None), "log10": (np.log10, None),
    "hard_sigmoid": (lambda x: np.clip(0.2 * x + 0.5, 0, 1), [-2.5, 2.5]),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_forward_and_gradient(name):
    fn, kinks = UNARY[name]
    x = RNG.uniform(0.2, 3.0, size=(3, 4)) if kinks is None else _away_from(RNG.uniform(-3, 3, size=(3, 4)), kinks)
    net = getattr(sym, name)(A)
    _, (out,) = run(net, a=x)
    np.testing.assert_allclose(out, fn(x), rtol=1e-12)
    check_gradients(net, {"a": x}, ["a"])


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "rint", "trunc", "fix", "BlockGrad",
                                  "stop_gradient"])
def test_piecewise_constant_ops_pass_no_gradient(name):
    x = np.array([[-2.5, -1.2, -0.5], [0.4, 1.5, 2.5]])
    expected = {"sign": np.sign(x), "floor": np.floor(x), "ceil": np.ceil(x), "rint": np.rint(x),
                "round": np.array([[-3.0, -1, -1], [0, 2, 3]]), "trunc": np.trunc(x), "fix": np.trunc(x),
                "BlockGrad": x, "stop_gradient": x}[name]
    net = getattr(sym, name)(A) * sym.var("w")
    w = np.ones_like(x)
    _, (out,) = run(net, a=x, w=w)
    np.testing.assert_array_equal(out, expected)
    exe = net.simple_bind("cpu", grad_req={"a": "write"}, a=x.shape, w=x.shape)
    exe.forward(is_train=True, a=x, w=w)
    exe.backward(np.ones_like(x))
    assert not exe.grad_dict["a"].any()


def test_clip_gradient_is_one_inside_the_range_inclusive():
    x = np.array([[-1.0, -0.6, 0.0, 0.6, 1.0]])
    net = sym.clip(A, a_min=-0.6, a_max=0.6)
    _, (out,) = run(net, a=x)
    np.testing.assert_array_equal(out, np.clip(x, -0.6, 0.6))
    exe = net.simple_bind("cpu", a=x.shape)
    exe.forward(is_train=True, a=x)
    exe.backward(np.ones_like(x))
    np.testing.assert_array_equal(exe.grad_dict["a"], [[0, 1, 1, 1, 0]])   # MXNet test_clip


@pytest.mark.parametrize("fn,scalar,expected", [
    (lambda s: sym.maximum(A, s), 0.5, lambda x: np.maximum(x, 0.5)),
    (lambda s: sym.minimum(s, A), 0.5, lambda x: np.minimum(x, 0.5)),
    (lambda s: sym.power(A, s), 3.0, lambda x: x ** 3),
    (lambda s: sym.power(s, A), 2.0, lambda x: 2.0 ** x),
    (lambda s: sym.hypot(A, s), 2.0, lambda x: np.hypot(x, 2.0)),
])
def test_scalar_ops(fn, scalar, expected):
    x = _away_from(RNG.uniform(0.1, 2.0, size=(2, 5)), [0.5])
    net = fn(scalar)
    _, (out,) = run(net, a=x)
    np.testing.assert_allclose(out, expected(x), rtol=1e-12)
    check_gradients(net, {"a": x}, ["a"])


def test_maximum_minimum_of_two_symbols():
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    for fn, ref in ((sym.maximum, np.maximum), (sym.minimum, np.minimum)):
        net = fn(A, B)
        _, (out,) = run(net, a=a, b=b)
        np.testing.assert_array_equal(out, ref(a, b))
        check_gradients(net, {"a": a, "b": b}, ["a", "b"])


@pytest.mark.parametrize("name,ref", [("max", np.max), ("min", np.min), ("prod", np.prod), ("nansum", np.nansum),
                                      ("norm", lambda x, axis=None, keepdims=False: np.sqrt(
                                          (x * x).sum(axis=axis, keepdims=keepdims)))])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, False)])
def test_value_reductions(name, ref, axis, keepdims):
    x = RNG.uniform(0.5, 1.5, size=(2, 3, 4))
    kwargs = {"keepdims": keepdims} if axis is None else {"axis": axis, "keepdims": keepdims}
    net = getattr(sym, name)(A, **kwargs)
    _, (out,) = run(net, a=x)
    expected = np.asarray(ref(x, axis=axis, keepdims=keepdims))
    np.testing.assert_allclose(out.reshape(-1), expected.reshape(-1), rtol=1e-12)
    check_gradients(net, {"a": x}, ["a"])


def test_nansum_skips_nan_in_gradient_too():
    x = np.array([[1.0, np.nan, 2.0]])
    exe = sym.nansum(A, axis=1).simple_bind("cpu", a=x.shape, dtype="float64")
    exe.arg_dict["a"][:] = x
    exe._unverified.clear()
    exe.forward(is_train=True)
    exe.backward(np.ones((1,)))
    assert exe.outputs[0][0] == 3.0
    np.testing.assert_array_equal(exe.grad_dict["a"], [[1, 0, 1]])


def test_sum_over_an_axis_as_ctr_models_use_it():
    x = RNG.normal(size=(4, 3, 5))
    net = sym.sum(sym.square(A), axis=1)
    _, (out,) = run(net, a=x)
    np.testing.assert_allclose(out, (x * x).sum(axis=1), rtol=1e-12)
    check_gradients(net, {"a": x}, ["a"])

"""Convolution with 1-D/3-D kernels, dilation, groups (grouped and depthwise) and Pooling's 'full'/'same'
conventions, sum and lp pools and count_include_pad: forward against naive loops over output positions,
backward graphs against central differences."""
from itertools import product

import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import check_gradients, run

RNG = np.random.default_rng(13)
data = sym.Variable("data")


def naive_conv(x, w, b, stride, pad, dilate, groups):
    """Direct sum over each output position, kernel offset and channel of the group."""
    rank = x.ndim - 2
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in pad))
    f, cg = w.shape[:2]
    kernel = w.shape[2:]
    out_sizes = [(xp.shape[2 + a] - dilate[a] * (kernel[a] - 1) - 1) // stride[a] + 1 for a in range(rank)]
    out = np.zeros((x.shape[0], f) + tuple(out_sizes))
    fg = f // groups
    for pos in product(*(range(o) for o in out_sizes)):
        for k in range(f):
            g = k // fg
            total = np.zeros(x.shape[0])
            for off in product(*(range(s) for s in kernel)):
                idx = tuple(pos[a] * stride[a] + off[a] * dilate[a] for a in range(rank))
                patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + idx]          # (N, cg)
                total += patch @ w[(k, slice(None)) + off]
            out[(slice(None), k) + pos] = total + (0 if b is None else b[k])
    return out


CASES = [  # data shape, kernel, stride, pad, dilate, num_filter, num_group
    ((2, 2, 9), (3,), (2,), (1,), (1,), 3, 1),                      # 1-D
    ((1, 2, 5, 4, 5), (2, 3, 2), (1, 1, 2), (1, 0, 1), (1, 1, 1), 2, 1),   # 3-D
    ((2, 2, 7, 8), (3, 3), (1, 1), (2, 2), (2, 2), 2, 1),          # dilated
    ((2, 4, 6, 6), (3, 3), (1, 2), (1, 1), (1, 1), 6, 2),          # two groups
    ((2, 3, 6, 5), (3, 2), (1, 1), (0, 1), (1, 2), 3, 3),          # depthwise, dilated in width
]


@pytest.mark.parametrize("shape,kernel,stride,pad,dilate,num_filter,num_group", CASES)
def test_convolution_nd_dilated_grouped(shape, kernel, stride, pad, dilate, num_filter, num_group):
    net = sym.Convolution(data, kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_filter=num_filter,
                          num_group=num_group, name="conv")
    x = RNG.normal(size=shape)
    w = RNG.normal(size=(num_filter, shape[1] // num_group) + kernel)
    b = RNG.normal(size=num_filter)
    arg_shapes, (out_shape,), _ = net.infer_shape(data=shape)
    assert arg_shapes[1] == w.shape
    _, (out,) = run(net, data=x, conv_weight=w, conv_bias=b)
    expected = naive_conv(x, w, b, stride, pad, dilate, num_group)
    assert out.shape == out_shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    check_gradients(net, {"data": x, "conv_weight": w, "conv_bias": b}, ["data", "conv_weight", "conv_bias"])


def naive_pool(x, kernel, stride, lo, out_sizes, kind, counted_hi, include_pad, p=2):
    rank = x.ndim - 2
    out = np.zeros(x.shape[:2] + tuple(out_sizes))
    for pos in product(*(range(o) for o in out_sizes)):
        start = [pos[a] * stride[a] - lo[a] for a in range(rank)]
        stop = [s + k for s, k in zip(start, kernel)]
        inside = tuple(slice(max(s, 0), min(e, n)) for s, e, n in zip(start, stop, x.shape[2:]))
        patch = x[(slice(None), slice(None)) + inside].reshape(x.shape[0], x.shape[1], -1)
        if kind == "max":
            value = patch.max(axis=2)
        elif kind == "sum":
            value = patch.sum(axis=2)
        elif kind == "lp":
            value = (np.abs(patch) ** p).sum(axis=2) ** (1.0 / p)
        else:
            if include_pad:
                count = np.prod([min(e, n + h) - max(s, -lo_) for s, e, n, h, lo_ in
                                 zip(start, stop, x.shape[2:], counted_hi, lo)])
            else:
                count = patch.shape[2]
            value = patch.sum(axis=2) / count
        out[(slice(None), slice(None)) + pos] = value
    return out


POOL_CASES = [  # shape, kernel, stride, pad, convention, expected out sizes, lo, counted_hi
    ((2, 2, 7, 7), (3, 3), (2, 2), (1, 1), "valid", (4, 4), (1, 1), (1, 1)),
    ((2, 2, 6, 7), (3, 3), (2, 2), (0, 1), "full", (3, 4), (0, 1), (0, 1)),
    ((2, 2, 7, 5), (3, 2), (2, 2), (0, 0), "same", (4, 3), (1, 0), (1, 1)),
    ((1, 2, 9), (3,), (2,), (1,), "full", (5,), (1,), (1,)),
    ((1, 1, 4, 5, 3), (2, 2, 2), (2, 2, 1), (0, 1, 0), "valid", (2, 3, 2), (0, 1, 0), (0, 1, 0)),
]


@pytest.mark.parametrize("kind", ["max", "avg", "sum", "lp"])
@pytest.mark.parametrize("shape,kernel,stride,pad,convention,out_sizes,lo,counted_hi", POOL_CASES)
def test_pooling_types_and_conventions(kind, shape, kernel, stride, pad, convention, out_sizes, lo, counted_hi):
    x = RNG.normal(size=shape)
    for include_pad in ((True, False) if kind == "avg" else (True,)):
        net = sym.Pooling(data, kernel=kernel, stride=stride, pad=pad, pool_type=kind,
                          pooling_convention=convention, count_include_pad=include_pad, p_value=2)
        _, (out,) = run(net, data=x)
        expected = naive_pool(x, kernel, stride, lo, out_sizes, kind, counted_hi, include_pad)
        assert out.shape == x.shape[:2] + out_sizes
        np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
        check_gradients(net, {"data": x}, ["data"])


def test_lp_pool_with_p_one_and_three():
    x = RNG.normal(size=(1, 2, 6, 6))
    for p in (1, 3):
        net = sym.Pooling(data, kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=p)
        _, (out,) = run(net, data=x)
        windows = np.abs(x).reshape(1, 2, 3, 2, 3, 2) ** p
        np.testing.assert_allclose(out, windows.sum(axis=(3, 5)) ** (1.0 / p), rtol=1e-10)
        check_gradients(net, {"data": x}, ["data"])


def test_global_pooling_of_1d_and_3d_data():
    for shape in ((2, 3, 5), (2, 3, 2, 3, 4)):
        x = RNG.normal(size=shape)
        net = sym.Pooling(data, global_pool=True, pool_type="avg", kernel=(1,) * (len(shape) - 2))
        _, (out,) = run(net, data=x)
        axes = tuple(range(2, len(shape)))
        np.testing.assert_allclose(out, x.mean(axis=axes, keepdims=True), rtol=1e-10)

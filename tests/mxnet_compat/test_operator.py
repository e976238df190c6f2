"""Ports of Apache MXNet 1.9.1 tests/python/unittest/test_operator.py (the cases for the ops sparkps
has), written anew against sparkps with MXNet's expected values and formulas. Each test names the
MXNet test it ports. Gradients that MXNet checks numerically are checked here by tests/opcheck.py."""
import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import check_gradients

RNG = np.random.default_rng(3)


def _bind(net, args, grads=None, grad_req="write"):
    return net.bind("cpu", args=args, args_grad=grads, grad_req=grad_req)


RESHAPE_CASES = [
    [(2, 3, 5, 5), (0, -1), False, (2, 75)], [(2, 3, 5, 5), (0, 0, -1), False, (2, 3, 25)],
    [(5, 3, 4, 5), (0, -1, 0), False, (5, 15, 4)], [(2, 3, 5, 4), (-1, 0, 0), False, (8, 3, 5)],
    [(2, 3, 5, 5), (0, 0, 0, 0), False, (2, 3, 5, 5)], [(2, 4, 5, 3), (-1, 2, 2, 1), False, (30, 2, 2, 1)],
    [(2, 3, 5, 6), (-2,), False, (2, 3, 5, 6)], [(2, 3, 5, 6), (6, 1, -2), False, (6, 1, 5, 6)],
    [(2, 3, 5, 6), (-3, -3), False, (6, 30)], [(2, 3, 5, 6), (-3, -1), False, (6, 30)],
    [(64,), (-4, 16, 4), False, (16, 4)], [(64,), (-4, 16, -1), False, (16, 4)],
    [(64, 1, 2, 3), (-4, 16, -1, -2), False, (16, 4, 1, 2, 3)], [(2, 3, 5, 5), (0, -1), True, (5, 30)],
    [(2, 3, 5, 5), (0, 0, -1), True, (3, 5, 10)], [(5, 3, 4, 5), (0, -1, 0), True, (3, 20, 5)],
    [(2, 3, 5, 4), (-1, 0, 0), True, (6, 5, 4)], [(2, 3, 4, 5), (3, -1, 0), True, (3, 8, 5)],
    [(2, 3, 5, 5), (5, 3, 0, -1), True, (5, 3, 5, 2)], [(2, 3, 5, 5), (0, 0, 0, 0), True, (2, 3, 5, 5)],
    [(2, 3, 5, 6), (-2,), True, (2, 3, 5, 6)], [(2, 3, 5, 6), (-2, 1, 30), True, (2, 3, 1, 30)],
    [(2, 3, 5, 6), (-3, -3), True, (6, 30)], [(64,), (16, 4, -4), True, (16, 4)],
    [(64,), (16, -1, -4), True, (16, 4)], [(1, 2, 3, 64), (-2, -1, 16, -4), True, (1, 2, 3, 4, 16)],
]


@pytest.mark.parametrize("src_shape,shape_args,reverse,dst_shape", RESHAPE_CASES)
def test_reshape(src_shape, shape_args, reverse, dst_shape):
    # MXNet: test_reshape (test_reshape_new, with its holdout partial shapes)
    net = sym.load_json(sym.Reshape(sym.Variable("data"), shape=shape_args, reverse=reverse).tojson())
    assert net.infer_shape(data=src_shape)[1][0] == dst_shape
    dat, grad = RNG.random(src_shape), RNG.random(dst_shape)
    exe = net.simple_bind("cpu", data=src_shape, dtype="float64")
    exe.forward(is_train=True, data=dat)
    np.testing.assert_array_equal(exe.outputs[0], dat.reshape(dst_shape))
    exe.backward(out_grads=grad)
    np.testing.assert_array_equal(exe.grad_dict["data"], grad.reshape(src_shape))
    for i in range(len(src_shape)):
        holdout = tuple(0 if j == i else d for j, d in enumerate(src_shape))
        net2 = sym.elemwise_add(sym.Variable("data").reshape(shape_args, reverse=reverse), sym.ones(shape=dst_shape))
        input_shape, output_shape, _ = net2.infer_shape(data=holdout)
        assert output_shape[0] == dst_shape and input_shape[0] == src_shape


def test_reshape_old_api_and_flatten():
    # MXNet: test_reshape (old api, Flatten)
    net = sym.load_json(sym.Reshape(sym.Variable("data"), target_shape=(2, 0)).tojson())
    assert net.infer_shape(data=(2, 3, 5, 5))[1][0] == (2, 75)
    exe = sym.Flatten(sym.Variable("data")).simple_bind("cpu", data=(5, 4, 3, 7), dtype="float64")
    x, g = RNG.normal(size=(5, 4, 3, 7)), RNG.normal(size=(5, 84))
    np.testing.assert_array_equal(exe.forward(is_train=True, data=x)[0], x.reshape(5, 84))
    exe.backward(out_grads=[g])
    np.testing.assert_array_equal(exe.grad_arrays[0], g.reshape(x.shape))


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_elementwise_sum(dim, n):
    # MXNet: test_elementwise_sum (check_elementwise_sum_with_shape)
    shape = tuple(RNG.integers(1, int(1000 ** (1.0 / dim)), size=dim))
    inputs = [sym.Variable("arg%d" % i) for i in range(n)]
    out = sym.ElementWiseSum(*inputs, name="esum")
    arr = [RNG.uniform(-10, 10, shape) for _ in range(n)]
    grads = [np.empty(shape) for _ in range(n)]
    exe = _bind(out, arr, grads)
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0], sum(arr), rtol=1e-12)
    out_grad = RNG.uniform(-10, 10, shape)
    exe.backward([out_grad])
    for g in grads:
        np.testing.assert_array_equal(g, out_grad)


def _check_concat(shapes, dimension, skip_second):
    inputs = [sym.Variable("arg%d" % i) for i in range(len(shapes))]
    out = sym.Concat(*inputs, name="conc", dim=dimension)
    arr = [np.full(s, float(s[dimension]), dtype=np.float32) for s in shapes]
    grads = {"arg%d" % i: np.empty(s, np.float32) for i, s in enumerate(shapes) if not (skip_second and i == 1)}
    exe = _bind(out, arr, grads)
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0], np.concatenate(arr, axis=dimension))
    exe.backward([exe.outputs[0] + 1])
    for i, a in enumerate(arr):
        if "arg%d" % i in grads:
            np.testing.assert_array_equal(grads["arg%d" % i], a + 1)


@pytest.mark.parametrize("ndim", [2, 3, 4])
def test_concat(ndim):
    # MXNet: test_concat (every axis, negative dims, the second input without a gradient)
    merge, base = [2, 3, 4, 5, 6], [2, 3, 4]
    for dimension in range(ndim):
        for count in range(2, 6):
            shapes = []
            for i in range(count):
                shape = list(base[:ndim - 1])
                shape.insert(dimension, merge[i])
                shapes.append(tuple(shape))
            for dim in (dimension, dimension - ndim):
                _check_concat(shapes, dim, True)
                _check_concat(shapes, dim, False)


@pytest.mark.parametrize("data_ndim,axis,num_outputs,squeeze_axis", [(2, 1, 3, True), (4, 2, 3, False),
                                                                      (3, -1, 2, False), (5, -2, 3, True)])
def test_slice_channel(data_ndim, axis, num_outputs, squeeze_axis):
    # MXNet: test_slice_channel
    if squeeze_axis:
        shape = RNG.integers(2, 5, data_ndim).tolist()
        shape[axis] = num_outputs
        out_shape = [d for d in shape]
        del out_shape[axis]
    else:
        shape = RNG.integers(1, 5, data_ndim).tolist()
        shape[axis] *= num_outputs
        out_shape = [d for d in shape]
        out_shape[axis] //= num_outputs
    data = RNG.normal(size=shape)
    out_grads = [RNG.normal(size=out_shape) for _ in range(num_outputs)]
    net = sym.SliceChannel(data=sym.Variable("data"), num_outputs=num_outputs, axis=axis, squeeze_axis=squeeze_axis)
    exe = net.simple_bind("cpu", data=data.shape, dtype="float64")
    outputs = exe.forward(is_train=True, data=data)
    assert len(outputs) == num_outputs
    for i, part in enumerate(np.split(data, num_outputs, axis=axis)):
        np.testing.assert_array_equal(outputs[i], part.reshape(outputs[i].shape))
    exe.backward(out_grads=out_grads)
    expected = np.concatenate([np.expand_dims(g, axis) if squeeze_axis else g for g in out_grads], axis=axis)
    np.testing.assert_array_equal(exe.grad_arrays[0], expected)


@pytest.mark.parametrize("head,forward,backward", [
    (sym.LogisticRegressionOutput, lambda x: 1.0 / (1.0 + np.exp(-x)), lambda x, y: x - y),
    (sym.LinearRegressionOutput, lambda x: x, lambda x, y: x - y),
    (sym.MAERegressionOutput, lambda x: x, lambda x, y: np.where(x > y, 1, -1)),
])
@pytest.mark.parametrize("shape,stype", [((2, 3), "dense"), ((3, 1), "dense")])
def test_regression(head, forward, backward, shape, stype):
    # MXNet: test_regression (check_regression, dense labels)
    data, label = sym.Variable("data"), sym.Variable("label")
    out = head(data, label)
    arr_data = RNG.uniform(-1, 1, shape)
    arr_label = RNG.uniform(0, 1, shape[0]) if shape[1] == 1 else RNG.uniform(0, 1, shape)
    grad = np.empty(shape)
    exe = _bind(out, {"data": arr_data, "label": arr_label}, {"data": grad})
    exe.forward(is_train=True)
    out1 = forward(arr_data)
    np.testing.assert_allclose(exe.outputs[0], out1, rtol=1e-6)
    exe.backward()
    npout = backward(out1, arr_label.reshape(shape))
    np.testing.assert_allclose(grad, npout / shape[1], rtol=1e-6, atol=1e-12)


def test_swapaxes():
    # MXNet: test_swapaxes
    data = sym.Variable("data")
    shape = (2, 3, 4)
    data_tmp = np.ones(shape)
    data_tmp[0] = 1
    data_tmp[1] = 2
    swap = sym.SwapAxis(sym.SwapAxis(data, dim1=0, dim2=2), dim1=1, dim2=2)
    exe = _bind(swap, [data_tmp])
    exe.forward()
    np.testing.assert_array_equal(exe.outputs[0], data_tmp.swapaxes(0, 2).swapaxes(1, 2))


@pytest.mark.parametrize("shape", [(3, 4), (3, 4, 4, 5)])
@pytest.mark.parametrize("full", [False, True])
def test_prelu(shape, full):
    # MXNet: test_prelu (gamma per channel of 2-D/4-D data, and gamma of x's own shape)
    gam = np.array([0.1, 0.2, 0.3, 0.4])
    x = RNG.uniform(-1.0, 1.0, size=shape)
    x[np.abs(x) < 1e-4] = 1.0
    if full and len(shape) == 4:
        pytest.skip("MXNet's full-gamma case is 2-D only")
    gamma = np.array([gam, gam, gam]) if full else gam
    y = sym.LeakyReLU(data=sym.Variable("x"), gamma=sym.Variable("gamma"), act_type="prelu")
    exe = _bind(y, {"x": x, "gamma": gamma}, {"x": np.empty(shape), "gamma": np.empty(gamma.shape)})
    exe.forward(is_train=True)
    scale = gamma if full else gamma.reshape((1, 4) + (1,) * (len(shape) - 2)) if len(shape) == 4 else gamma
    np.testing.assert_allclose(exe.outputs[0], np.where(x > 0, x, scale * x), rtol=1e-12)
    exe.backward([np.ones(shape)])
    np.testing.assert_allclose(exe.grad_dict["x"], np.where(x > 0, 1.0, np.broadcast_to(scale, shape)))
    neg = np.where(x > 0, 0.0, x)
    expected_gamma = neg if full else neg.sum(axis=(0, 2, 3)) if len(shape) == 4 else neg.sum(axis=0)
    np.testing.assert_allclose(exe.grad_dict["gamma"], expected_gamma, rtol=1e-12)
    check_gradients(y, {"x": x, "gamma": gamma}, ["x", "gamma"])


def test_selu():
    # MXNet: test_selu
    alpha, lamb = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    x = RNG.uniform(-0.1, 0.1, size=(3, 4))
    x[np.abs(x) < 1e-4] = 0.01
    y = sym.LeakyReLU(data=sym.Variable("x"), act_type="selu")
    ya = np.where(x < 0, alpha * np.expm1(x), x) * lamb
    exe = _bind(y, {"x": x}, {"x": np.empty(x.shape)})
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0], ya, rtol=1e-10)
    exe.backward([np.ones(x.shape)])
    np.testing.assert_allclose(exe.grad_dict["x"], np.where(x < 0, ya + alpha * lamb, lamb), rtol=1e-10)


def test_gelu():
    # MXNet: test_gelu (MXNet 1.x's tanh form)
    def g(x):
        return 0.7978845608028654 * (x + 0.044715 * x ** 3)

    def g_grad(x):
        return 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x ** 2)
    x = RNG.uniform(-0.1, 0.1, size=(3, 4))
    x[np.abs(x) < 1e-4] = 0.01
    ya = 0.5 * x * (1.0 + np.tanh(g(x)))
    ga = ya / x + ya * (1 - np.tanh(g(x))) * g_grad(x)
    y = sym.LeakyReLU(data=sym.Variable("x"), act_type="gelu")
    exe = _bind(y, {"x": x}, {"x": np.empty(x.shape)})
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0], ya, rtol=1e-10)
    exe.backward([np.ones(x.shape)])
    np.testing.assert_allclose(exe.grad_dict["x"], ga, rtol=1e-8)


@pytest.mark.parametrize("dil,kernel_shape", [((d,), (k,)) for d in (1, 2, 3) for k in (1, 2, 3, 4)]
                         + [((d, d), k) for d in (1, 2, 3) for k in ((3, 3), (4, 4), (2, 3), (3, 2), (1, 1))]
                         + [((d, d, d), k) for d in (1, 2, 3)
                            for k in ((3, 3, 3), (4, 4, 4), (2, 3, 4), (3, 2, 4), (1, 1, 1))])
def test_convolution_dilated_impulse_response(dil, kernel_shape):
    # MXNet: test_convolution_dilated_impulse_response
    dim = len(dil)
    data_shape = (1, 1) + (33,) * dim
    center = (0, 0) + (16,) * dim
    spike = np.zeros(data_shape, np.float32)
    spike[center] = 1.0
    weights = np.ones((1, 1) + kernel_shape, np.float32)
    net = sym.Convolution(sym.Variable("input"), num_filter=1, kernel=kernel_shape, dilate=dil, no_bias="true",
                          name="test_convolution")
    grad_in, grad_w = np.zeros(data_shape, np.float32), np.zeros(weights.shape, np.float32)
    exe = _bind(net, {"input": spike, "test_convolution_weight": weights},
                {"input": grad_in, "test_convolution_weight": grad_w})
    exe.forward(True)
    out_grads = np.zeros(exe.outputs[0].shape, np.float32)
    out_grads[center] = 1.0
    exe.backward([out_grads])
    np.testing.assert_allclose(exe.outputs[0].sum(), np.prod(kernel_shape), atol=1e-5)
    np.testing.assert_allclose(grad_in.sum(), np.prod(kernel_shape), atol=1e-5)
    exe2 = _bind(net, {"input": grad_in.copy(), "test_convolution_weight": weights})
    exe2.forward(True)
    np.testing.assert_allclose(exe2.outputs[0][center], np.prod(kernel_shape), atol=1e-5)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("num_group", [1, 2])
def test_convolution_grouping(dim, num_group):
    # MXNet: test_convolution_grouping (a grouped convolution equals convolutions of the sliced groups)
    num_filter, kernel, shape = 4, (3,) * dim, (1, 4) + (9,) * dim
    x, w, b = sym.Variable("x"), sym.Variable("w"), sym.Variable("b")
    y1 = sym.Convolution(data=x, weight=w, bias=b, num_filter=num_filter, num_group=num_group, kernel=kernel)
    xs, ws, bs = (sym.SliceChannel(data=v, num_outputs=num_group, axis=a) for v, a in ((x, 1), (w, 0), (b, 0)))
    y2 = sym.Concat(*[sym.Convolution(data=xs[i], weight=ws[i], bias=bs[i], num_filter=num_filter // num_group,
                                      kernel=kernel) for i in range(num_group)])
    exe1 = y1.simple_bind("cpu", x=shape, dtype="float64")
    exe2 = y2.simple_bind("cpu", x=shape, w=(num_filter, shape[1] // num_group) + kernel, b=(num_filter,),
                          dtype="float64")
    for a1, a2 in zip(exe1.arg_arrays, exe2.arg_arrays):
        a1[:] = RNG.normal(size=a1.shape)
        a2[:] = a1
    exe1._unverified.clear()
    exe2._unverified.clear()
    exe1.forward(is_train=True)
    exe1.backward(exe1.outputs[0])
    exe2.forward(is_train=True)
    exe2.backward(exe2.outputs[0])
    for a1, a2 in zip(exe1.outputs + exe1.grad_arrays, exe2.outputs + exe2.grad_arrays):
        np.testing.assert_allclose(a1, a2, rtol=1e-10, atol=1e-10)


def test_softmax_with_large_inputs():
    # MXNet: test_softmax_with_large_inputs
    out = sym.Variable("data").softmax(axis=1)
    for value in (-1e30, 1e30, -3.4e38, 3.4e38):
        exe = _bind(out, {"data": np.full((1, 1, 1, 2), value, np.float32)})
        np.testing.assert_allclose(exe.forward()[0][0][0][0], [1.0, 1.0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_log_softmax(ndim):
    # MXNet: test_log_softmax
    shape = tuple(RNG.integers(1, 5, size=ndim))
    axis = int(RNG.integers(0, ndim))
    data = RNG.uniform(-2, 2, size=shape)
    net = sym.log_softmax(sym.Variable("data"), axis=axis - ndim)
    e = np.exp(data - data.max(axis=axis, keepdims=True))
    expected = np.log(e / e.sum(axis=axis, keepdims=True) + 1e-20)
    np.testing.assert_allclose(net.eval(data=data.astype(np.float32))[0], expected, rtol=1e-3, atol=1e-4)
    check_gradients(net, {"data": data}, ["data"])


@pytest.mark.parametrize("ndim", range(1, 7))
def test_transpose(ndim):
    # MXNet: test_transpose
    for _ in range(3):
        dims = tuple(RNG.integers(1, 10, size=ndim))
        axes = tuple(RNG.permutation(ndim))
        x = RNG.normal(size=dims)
        np.testing.assert_array_equal(sym.transpose(sym.Variable("x"), axes=axes).eval(x=x)[0],
                                      np.transpose(x.astype(np.float32), axes))
        np.testing.assert_array_equal(sym.transpose(sym.Variable("x")).eval(x=x)[0], np.transpose(x.astype(np.float32)))


@pytest.mark.parametrize("ndim", range(1, 6))
def test_expand_dims(ndim):
    # MXNet: test_expand_dims
    for axis in range(-ndim + 1, ndim):
        x = RNG.normal(size=tuple(RNG.integers(1, 10, size=ndim)))
        y = sym.expand_dims(sym.Variable("x"), axis=axis).eval(x=x)[0]
        assert y.shape == np.expand_dims(x, axis=axis).shape
        np.testing.assert_allclose(y, np.expand_dims(x, axis=axis), rtol=1e-6)


def test_clip():
    # MXNet: test_clip (with its monitor callback over every input)
    data_tmp = RNG.uniform(-1, 1, (30, 30)).astype(np.float32)
    test = sym.clip(sym.Variable("data"), a_max=0.6, a_min=-0.6)
    exe = test.simple_bind("cpu", data=(30, 30))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    exe.forward(is_train=True, data=data_tmp)
    np.testing.assert_array_equal(exe.outputs[0], np.clip(data_tmp, -0.6, 0.6))
    exe.backward(out_grads=np.ones((30, 30), np.float32))
    expected = np.where(data_tmp <= 0.6, 1, 0) * np.where(data_tmp >= -0.6, 1, 0)
    np.testing.assert_array_equal(exe.grad_dict["data"], expected)
    assert seen == ["clip0_data", "clip0_output"]


def test_reverse():
    # MXNet: test_reverse
    data_tmp = RNG.uniform(-1, 1, (5, 5, 5))
    grad = RNG.uniform(-1, 1, (5, 5, 5))
    test = sym.reverse(sym.Variable("data"), axis=[1, 2])
    exe = test.simple_bind("cpu", data=(5, 5, 5), dtype="float64")
    exe.forward(is_train=True, data=data_tmp)
    np.testing.assert_array_equal(exe.outputs[0], data_tmp[:, ::-1, ::-1])
    exe.backward([grad])
    np.testing.assert_array_equal(exe.grad_dict["data"], grad[:, ::-1, ::-1])
    check_gradients(test, {"data": data_tmp}, ["data"])


@pytest.mark.parametrize("shape,same_shape", [((5, 9), True), ((5, 9), False), ((3, 4, 2), True),
                                              ((3, 4, 2), False)])
def test_where(shape, same_shape):
    # MXNet: test_where (conditions of x's shape and per-row conditions)
    cond = RNG.integers(0, 2, shape if same_shape else shape[0]).astype(float)
    x = RNG.integers(1, 6, shape).astype(float)
    y = RNG.integers(7, 11, shape).astype(float)
    grad_in = RNG.integers(20, 30, shape).astype(float)
    mask = cond.reshape(cond.shape + (1,) * (len(shape) - cond.ndim)) != 0
    net = sym.where(sym.Variable("condition"), sym.Variable("x"), sym.Variable("y"))
    grads = {"condition": np.empty(cond.shape), "x": np.empty(shape), "y": np.empty(shape)}
    exe = _bind(net, {"condition": cond, "x": x, "y": y}, grads)
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0], np.where(mask, x, y))
    exe.backward([grad_in])
    np.testing.assert_array_equal(grads["x"], np.where(mask, grad_in, 0))
    np.testing.assert_array_equal(grads["y"], np.where(mask, 0, grad_in))
    assert not grads["condition"].any()


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_pick(mode):
    # MXNet: test_pick (keepdims=True, index of data's shape with the picked axis of size 1)
    for _ in range(3):
        ndim = int(RNG.integers(1, 5))
        bshape = RNG.integers(1, 10, size=ndim)
        axis = int(RNG.integers(0, ndim))
        sshape = bshape.copy()
        sshape[axis] = 1
        data = RNG.uniform(-1, 1, size=bshape)
        index = (RNG.integers(-2 * bshape[axis], 2 * bshape[axis], size=sshape) if mode == "wrap"
                 else RNG.integers(0, bshape[axis], size=sshape))
        grid = [(index % bshape[axis] if mode == "wrap" else index) if i == axis else
                np.arange(bshape[i]).reshape([bshape[i] if j == i else 1 for j in range(ndim)]) for i in range(ndim)]
        expected = data[tuple(grid)]
        net = sym.pick(sym.Variable("data"), sym.Variable("index"), axis=axis, keepdims=True, mode=mode)
        exe = net.simple_bind("cpu", data=data.shape, index=index.shape, dtype="float64", grad_req="null")
        np.testing.assert_array_equal(exe.forward(data=data, index=index.astype(float))[0], expected)
        check_gradients(net, {"data": data, "index": index.astype(float)}, ["data"])


@pytest.mark.parametrize("shape,axis", [((1, 5, 1, 3, 1), 0), ((1, 5, 1, 3, 1), 2), ((1, 5, 1, 3, 1), 4),
                                        ((1, 5, 1, 3, 1), (0, 4)), ((1, 5, 1, 3, 1), (0, 2, 4)),
                                        ((1, 5, 1, 3, 1), None), ((1, 1, 1, 1), None)])
def test_squeeze_op(shape, axis):
    # MXNet: test_squeeze_op ((1, 1, 1, 1) squeezes to (1,), as MXNet)
    data = RNG.uniform(-10, 10, size=shape)
    kwargs = {} if axis is None else {"axis": axis}
    out = sym.squeeze(sym.Variable("data"), **kwargs).eval(data=data)[0]
    expected = np.squeeze(data, **kwargs)
    expected = expected.reshape(1) if expected.ndim == 0 else expected
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    check_gradients(sym.squeeze(sym.Variable("data"), **kwargs), {"data": np.ones(shape)}, ["data"])

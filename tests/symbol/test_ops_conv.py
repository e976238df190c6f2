"""Convolution and Pooling: forward against naive loops, backward graphs against central
differences, shape inference and its errors, JSON round trip, and a small conv net on digits."""
import json

import numpy as np
import pytest

import sparkps as sp
import sparkps.symbol as sym
from opcheck import check_gradients, run
from sparkps import backend
from sparkps.errors import ConfigError, ShapeError

# GPU cases exist only where CuPy and a device are present (elsewhere there is nothing to skip)
CONTEXTS = ["cpu"] + ([pytest.param("gpu", marks=pytest.mark.gpu)] if backend.gpu_available() else [])

RNG = np.random.default_rng(7)
data = sym.Variable("data")


def normal(*shape):
    return RNG.normal(size=shape)


def pad_hw(x, pad, value=0.0):
    return np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])), constant_values=value)


def naive_conv(x, w, b, stride, pad):
    xp = pad_hw(x, pad)
    n, _, h, wd = xp.shape
    f, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride[0] + 1, (wd - kw) // stride[1] + 1
    out = np.zeros((n, f, oh, ow))
    for a in range(n):
        for k in range(f):
            for y in range(oh):
                for z in range(ow):
                    patch = xp[a, :, y * stride[0]:y * stride[0] + kh, z * stride[1]:z * stride[1] + kw]
                    out[a, k, y, z] = (patch * w[k]).sum() + (0 if b is None else b[k])
    return out


def naive_pool(x, kernel, stride, pad, pool_type):
    xp = pad_hw(x, pad, -np.inf if pool_type == "max" else 0.0)
    n, c, h, w = xp.shape
    oh, ow = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for z in range(ow):
            patch = xp[:, :, y * stride[0]:y * stride[0] + kernel[0], z * stride[1]:z * stride[1] + kernel[1]]
            area = kernel[0] * kernel[1]
            out[:, :, y, z] = patch.max(axis=(2, 3)) if pool_type == "max" else patch.sum(axis=(2, 3)) / area
    return out


CONV_CASES = [  # kernel, stride, pad, no_bias
    ((3, 3), (1, 1), (0, 0), False),
    ((3, 3), (1, 1), (0, 0), True),
    ((3, 3), (2, 2), (1, 1), False),
    ((2, 3), (1, 2), (1, 0), False),
]


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("kernel,stride,pad,no_bias", CONV_CASES)
def test_convolution_forward_and_gradients(ctx, kernel, stride, pad, no_bias):
    net = sym.Convolution(data, kernel=kernel, num_filter=3, stride=stride, pad=pad, no_bias=no_bias,
                          name="conv1")
    assert net.list_arguments() == ["data", "conv1_weight"] + ([] if no_bias else ["conv1_bias"])
    feed = {"data": normal(2, 2, 6, 7), "conv1_weight": normal(3, 2, *kernel)}
    if not no_bias:
        feed["conv1_bias"] = normal(3)
    _, (out,) = run(net, ctx, **feed)
    expected = naive_conv(feed["data"], feed["conv1_weight"], feed.get("conv1_bias"), stride, pad)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    check_gradients(net, feed, list(feed), ctx=ctx)


POOL_CASES = [  # kernel, stride, pad
    ((2, 2), (2, 2), (0, 0)),
    ((3, 3), (1, 1), (0, 0)),
    ((3, 2), (2, 1), (1, 1)),
]


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("kernel,stride,pad", POOL_CASES)
def test_pooling_forward_and_gradient(ctx, pool_type, kernel, stride, pad):
    net = sym.Pooling(data, kernel=kernel, stride=stride, pad=pad, pool_type=pool_type)
    x = normal(2, 3, 6, 5)
    _, (out,) = run(net, ctx, data=x)
    np.testing.assert_allclose(out, naive_pool(x, kernel, stride, pad, pool_type), rtol=1e-12)
    check_gradients(net, {"data": x}, ["data"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_global_pooling_ignores_kernel(ctx, pool_type):
    net = sym.Pooling(data, kernel=(2, 2), pool_type=pool_type, global_pool=True)
    x = normal(2, 3, 4, 5)
    _, (out,) = run(net, ctx, data=x)
    reduce = np.max if pool_type == "max" else np.mean
    np.testing.assert_allclose(out, reduce(x, axis=(2, 3), keepdims=True), rtol=1e-12)
    check_gradients(net, {"data": x}, ["data"], ctx=ctx)


def test_max_pooling_gradient_goes_to_the_first_maximum_of_a_tie():
    x = np.zeros((1, 1, 2, 2))
    net = sym.Pooling(data, kernel=(2, 2), pool_type="max")
    exe = net.simple_bind("cpu", grad_req="write", dtype="float64", data=x.shape)
    exe.forward(is_train=True, data=x)
    exe.backward([np.ones((1, 1, 1, 1))])
    np.testing.assert_array_equal(np.asarray(exe.grad_dict["data"].tolist()), [[[[1, 0], [0, 0]]]])


def test_infer_shape_completes_weight_bias_and_output():
    net = sym.Convolution(data, kernel=(5, 3), num_filter=6, stride=(2, 1), pad=(2, 1), name="c")
    args, outs, _ = net.infer_shape(data=(4, 3, 11, 9))
    assert dict(zip(net.list_arguments(), args)) == {"data": (4, 3, 11, 9), "c_weight": (6, 3, 5, 3),
                                                   "c_bias": (6,)}
    assert outs == [(4, 6, 6, 9)]
    pooled = sym.Pooling(net, kernel=(3, 3), stride=(2, 2), pool_type="avg")
    assert pooled.infer_shape(data=(4, 3, 11, 9))[1] == [(4, 6, 2, 4)]
    assert sym.Pooling(net, global_pool=True).infer_shape(data=(4, 3, 11, 9))[1] == [(4, 6, 1, 1)]
    args, outs, _ = net.infer_shape_partial(c_weight=(6, 3, 5, 3))     # data unknown: output waits
    assert dict(zip(net.list_arguments(), args)) == {"data": None, "c_weight": (6, 3, 5, 3), "c_bias": (6,)}
    assert outs == [None]
    with pytest.raises(ShapeError, match=r"Convolution 'c'.*c_weight"):
        net.infer_shape(data=(4, 3, 11, 9), c_weight=(6, 2, 5, 3))


def test_shape_errors_name_the_op():
    conv = sym.Convolution(data, kernel=(5, 5), num_filter=2, name="conv1")
    with pytest.raises(ShapeError, match=r"Convolution 'conv1'.*kernel \(5, 5\) is larger.*\(1, 1, 4, 4\)"):
        conv.infer_shape(data=(1, 1, 4, 4))
    conv_padded = sym.Convolution(data, kernel=(5, 5), num_filter=2, pad=(1, 1), name="conv1")
    assert conv_padded.infer_shape(data=(1, 1, 3, 3))[1] == [(1, 2, 1, 1)]
    with pytest.raises(ShapeError, match=r"Convolution 'conv1'.*must have 4 axes.*\(2, 16\)"):
        conv.infer_shape(data=(2, 16))
    pool = sym.Pooling(data, kernel=(3, 3), name="pool1")
    with pytest.raises(ShapeError, match=r"Pooling 'pool1'.*kernel \(3, 3\) is larger"):
        pool.infer_shape(data=(1, 1, 2, 8))
    with pytest.raises(ShapeError, match=r"Pooling 'pool1'.*must have 4 axes"):
        pool.infer_shape(data=(1, 8, 8))


def test_bad_params_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"Convolution: num_filter 3 must be a positive multiple of num_group 2"):
        sym.Convolution(data, kernel=(3, 3), num_filter=3, num_group=2)
    with pytest.raises(ConfigError, match=r"Convolution: layout NHWC is not supported"):
        sym.Convolution(data, kernel=(3, 3), num_filter=2, layout="NHWC")
    with pytest.raises(ConfigError, match=r"Convolution needs the parameter 'num_filter'"):
        sym.Convolution(data, kernel=(3, 3))
    with pytest.raises(ConfigError, match=r"Convolution: parameter 'kernel' must have 1, 2 or 3 sizes"):
        sym.Convolution(data, kernel=(3, 3, 3, 3), num_filter=2)
    with pytest.raises(ConfigError, match=r"Convolution: parameter 'stride' must be 2 int\(s\) >= 1"):
        sym.Convolution(data, kernel=(3, 3), num_filter=2, stride=(0, 1))
    with pytest.raises(ConfigError, match=r"Convolution: parameter 'dilate' must be 2 int\(s\) >= 1"):
        sym.Convolution(data, kernel=(3, 3), num_filter=2, dilate=(2,))
    with pytest.raises(ConfigError, match=r"Pooling: bad value 'median' for parameter 'pool_type'"):
        sym.Pooling(data, kernel=(2, 2), pool_type="median")
    with pytest.raises(ConfigError, match=r"Pooling: bad value 'half' for parameter 'pooling_convention'"):
        sym.Pooling(data, kernel=(2, 2), pooling_convention="half")
    with pytest.raises(ConfigError, match=r"Pooling needs the parameter 'kernel'"):
        sym.Pooling(data, pool_type="max")
    with pytest.raises(ConfigError, match=r"Pooling: parameter 'pad' \(2, 2\) must be smaller"):
        sym.Pooling(data, kernel=(2, 2), pad=(2, 2))
    with pytest.raises(ConfigError, match=r"Pooling has no parameter 'kernal'"):
        sym.Pooling(data, kernal=(2, 2))


def lenet_like(filters=8):
    net = sym.Convolution(data, kernel=(3, 3), num_filter=filters, pad=(1, 1), name="conv1")
    net = sym.Activation(net, act_type="relu", name="relu1")
    net = sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = sym.Flatten(net, name="flat")
    net = sym.FullyConnected(net, num_hidden=10, name="fc1")
    return sym.SoftmaxOutput(net, name="softmax")


def test_json_round_trip_keeps_arguments_params_and_outputs():
    net = lenet_like()
    text = net.tojson()
    assert '"kernel": "(3, 3)"' in text
    loaded = sym.load_json(text)
    assert loaded.list_arguments() == net.list_arguments()
    assert loaded.list_outputs() == net.list_outputs()
    assert loaded.tojson() == text
    shapes = {"data": (5, 1, 8, 8)}
    assert loaded.infer_shape(**shapes) == net.infer_shape(**shapes)
    feed = {name: normal(*shape) for name, shape in zip(net.list_arguments(), net.infer_shape(**shapes)[0])}
    feed["softmax_label"] = np.arange(5, dtype=np.float64)
    np.testing.assert_allclose(run(loaded, **feed)[1][0], run(net, **feed)[1][0], rtol=1e-12)


def test_mxnet_json_with_only_the_given_params_loads():
    doc = json.loads(lenet_like().tojson())
    for node in doc["nodes"]:
        if node["op"] == "Convolution":
            node["attrs"] = {"kernel": "(3, 3)", "num_filter": "4", "pad": "(1, 1)"}
        if node["op"] == "Pooling":
            node["attrs"] = {"pool_type": "avg", "global_pool": "True"}
    loaded = sym.load_json(json.dumps(doc))
    args, outs, _ = loaded.infer_shape(data=(2, 1, 8, 8))
    assert dict(zip(loaded.list_arguments(), args))["fc1_weight"] == (10, 4)
    assert sym.load_json(loaded.tojson()).tojson() == loaded.tojson()


def test_conv_net_learns_digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).reshape(-1, 1, 8, 8).astype(np.float32)
    X_train, X_test, y_train, y_test = train_test_split(X, y.astype(np.float32), test_size=0.25,
                                                        random_state=0, stratify=y)
    model = sp.FeedForward(lenet_like(), num_epoch=6, optimizer="sgd", learning_rate=0.1, momentum=0.9,
                           numpy_batch_size=32, initializer=sp.initializer.Xavier(), seed=0)
    model.fit(X_train, y_train)
    assert model.score(X_test, y_test) >= 0.93

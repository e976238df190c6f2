"""split/SliceChannel, slice_axis, pick, where, reverse, expand_dims, squeeze, SwapAxis, Reshape codes,
softmax/log_softmax/SoftmaxActivation, LRN, MAERegressionOutput and SoftmaxOutput's options: forward
against numpy, backward graphs against central differences."""
import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import check_gradients, run
from sparkps.errors import ConfigError, ShapeError

RNG = np.random.default_rng(5)
X = sym.var("x")


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis,squeeze", [(1, False), (-1, False), (0, True)])
def test_split(axis, squeeze):
    x = RNG.normal(size=(2, 4, 2))
    n = x.shape[axis]
    net = sym.split(X, num_outputs=n if squeeze else 2, axis=axis, squeeze_axis=squeeze)
    _, outs = run(net, x=x)
    expected = np.split(x, n if squeeze else 2, axis=axis)
    for out, ref in zip(outs, expected):
        np.testing.assert_array_equal(out, np.squeeze(ref, axis) if squeeze else ref)
    check_gradients(net, {"x": x}, ["x"])
    check_gradients(net[1] * 2.0, {"x": x}, ["x"])          # unused parts get zero gradient


def test_split_into_unequal_parts_is_a_shape_error():
    with pytest.raises(ShapeError, match="does not split into 3 equal parts"):
        sym.split(X, num_outputs=3).infer_shape(x=(2, 4))


@pytest.mark.parametrize("begin,end", [(1, 3), (-3, None), (0, -1)])
def test_slice_axis(begin, end):
    x = RNG.normal(size=(2, 5, 3))
    net = sym.slice_axis(X, axis=1, begin=begin, end=end)
    _, (out,) = run(net, x=x)
    np.testing.assert_array_equal(out, x[:, begin:end])
    check_gradients(net, {"x": x}, ["x"])


@pytest.mark.parametrize("axis,keepdims,mode", [(-1, False, "clip"), (0, True, "wrap"), (1, False, "clip")])
def test_pick(axis, keepdims, mode):
    x = RNG.normal(size=(3, 4))
    size = x.shape[axis]
    index = RNG.integers(-1, size + 1, size=x.shape[1 - axis % 2]).astype(float)
    net = sym.pick(X, sym.var("i"), axis=axis, keepdims=keepdims, mode=mode)
    _, (out,) = run(net, x=x, i=index)
    ids = np.clip(index, 0, size - 1) if mode == "clip" else np.mod(index, size)
    ids = np.expand_dims(ids.astype(int), axis)
    np.testing.assert_array_equal(out, np.take_along_axis(x, ids, axis=axis).reshape(out.shape))
    check_gradients(net, {"x": x, "i": index}, ["x"])


def test_where():
    cond = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 1.0]])
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))
    net = sym.where(sym.var("c"), X, sym.var("y"))
    _, (out,) = run(net, c=cond, x=a, y=b)
    np.testing.assert_array_equal(out, np.where(cond != 0, a, b))
    check_gradients(net, {"c": cond, "x": a, "y": b}, ["x", "y"])
    _, (rows,) = run(net, c=np.array([1.0, 0.0]), x=a, y=b)      # 1-D condition picks rows
    np.testing.assert_array_equal(rows, np.stack([a[0], b[1]]))


def test_reverse_expand_squeeze_swapaxis():
    x = RNG.normal(size=(2, 1, 3))
    cases = [(sym.reverse(X, axis=2), x[:, :, ::-1]), (sym.flip(X, axis=0), x[::-1]),
             (sym.expand_dims(X, axis=-1), x[..., None]), (sym.squeeze(X), x[:, 0]),
             (sym.squeeze(X, axis=1), x[:, 0]), (sym.SwapAxis(X, dim1=0, dim2=2), x.swapaxes(0, 2))]
    for net, expected in cases:
        _, (out,) = run(net, x=x)
        np.testing.assert_array_equal(out, expected)
        check_gradients(net, {"x": x}, ["x"])
    with pytest.raises(ShapeError, match="is not of size 1"):
        sym.squeeze(X, axis=0).infer_shape(x=(2, 1, 3))


@pytest.mark.parametrize("data,shape,reverse,expected", [
    # the examples of MXNet's Reshape documentation
    ((2, 3, 4), (4, 0, 2), False, (4, 3, 2)), ((2, 3, 4), (2, 0, 0), False, (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), False, (6, 1, 4)), ((2, 3, 4), (3, -1, 8), False, (3, 1, 8)),
    ((2, 3, 4), (-1,), False, (24,)), ((2, 3, 4), (-2,), False, (2, 3, 4)),
    ((2, 3, 4), (2, -2), False, (2, 3, 4)), ((2, 3, 4), (-2, 1, 1), False, (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), False, (6, 4)), ((2, 3, 4, 5), (-3, -3), False, (6, 20)),
    ((2, 3, 4), (0, -3), False, (2, 12)), ((2, 3, 4), (-3, -2), False, (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), False, (1, 2, 3, 4)), ((2, 3, 4), (2, -4, -1, 3, -2), False, (2, 1, 3, 4)),
    ((10, 5, 4), (-1, 0), False, (40, 5)), ((10, 5, 4), (-1, 0), True, (50, 4)),
])
def test_reshape_codes(data, shape, reverse, expected):
    net = sym.Reshape(X, shape=shape, reverse=reverse)
    assert net.infer_shape(x=data)[1] == [expected]


def test_reshape_legacy_target_shape_and_gradient():
    assert sym.Reshape(X, target_shape=(0, 6)).infer_shape(x=(2, 3, 4))[1] == [(4, 6)]
    assert sym.Reshape(X, target_shape=(12,), keep_highest=True).infer_shape(x=(2, 3, 4))[1] == [(2, 12)]
    x = RNG.normal(size=(2, 3, 4))
    check_gradients(sym.Reshape(X, shape=(-3, -2)), {"x": x}, ["x"])
    with pytest.raises(ConfigError, match="needs the parameter 'shape'"):
        sym.Reshape(X)


@pytest.mark.parametrize("axis,temperature", [(-1, None), (0, None), (1, 2.0)])
def test_softmax_and_log_softmax(axis, temperature):
    x = RNG.normal(size=(3, 4))
    kw = {"axis": axis} if temperature is None else {"axis": axis, "temperature": temperature}
    scaled = x / (temperature or 1.0)
    for fn, ref in ((sym.softmax, _softmax(scaled, axis)), (sym.log_softmax, np.log(_softmax(scaled, axis)))):
        net = fn(X, **kw)
        _, (out,) = run(net, x=x)
        np.testing.assert_allclose(out, ref, rtol=1e-10)
        check_gradients(net, {"x": x}, ["x"])


@pytest.mark.parametrize("mode", ["instance", "channel"])
def test_softmax_activation(mode):
    x = RNG.normal(size=(2, 3, 2, 2))
    net = sym.SoftmaxActivation(X, mode=mode)
    _, (out,) = run(net, x=x)
    ref = _softmax(x.reshape(2, -1), 1).reshape(x.shape) if mode == "instance" else _softmax(x, 1)
    np.testing.assert_allclose(out, ref, rtol=1e-10)
    check_gradients(net, {"x": x}, ["x"])


def test_lrn_matches_mxnet_formula():
    x = RNG.normal(size=(2, 5, 3, 3))
    alpha, beta, knorm, nsize = 1e-2, 0.75, 2.0, 3
    net = sym.LRN(X, alpha=alpha, beta=beta, knorm=knorm, nsize=nsize)
    _, (out,) = run(net, x=x)
    sq = np.pad(x * x, ((0, 0), (1, 1), (0, 0), (0, 0)))
    window = sum(sq[:, k:k + 5] for k in range(3))
    np.testing.assert_allclose(out, x / (knorm + alpha / nsize * window) ** beta, rtol=1e-10)
    check_gradients(net, {"x": x}, ["x"])


def test_mae_regression_output():
    x, label = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    net = sym.MAERegressionOutput(X, name="mae")
    exe, (out,) = run(net, x=x, mae_label=label)
    np.testing.assert_array_equal(out, x)
    mae = lambda outs: float(np.abs(outs[0] - label).sum() / 3)  # noqa: E731
    check_gradients(net, {"x": x, "mae_label": label}, ["x"], objective=mae)


def _softmax_output_grad(net, **feed):
    exe = net.simple_bind("cpu", dtype="float64", **{k: v.shape for k, v in feed.items()})
    exe.forward(is_train=True, **feed)
    exe.backward()
    return exe.outputs[0].copy(), exe.grad_dict["x"].copy()


def test_softmax_output_probability_labels_and_smoothing():
    x = RNG.normal(size=(4, 3))
    probs = _softmax(RNG.normal(size=(4, 3)), 1)
    out, grad = _softmax_output_grad(sym.SoftmaxOutput(X, name="sm"), x=x, sm_label=probs)
    np.testing.assert_allclose(grad, _softmax(x, 1) - probs, rtol=1e-10)
    label = np.array([0.0, 2.0, 1.0, 1.0])
    out, grad = _softmax_output_grad(sym.SoftmaxOutput(X, name="sm", smooth_alpha=0.3), x=x, sm_label=label)
    target = np.full((4, 3), 0.15)
    target[np.arange(4), label.astype(int)] = 0.7
    np.testing.assert_allclose(grad, out - target, rtol=1e-10)


def test_softmax_output_multi_output_and_preserve_shape():
    x = RNG.normal(size=(2, 3, 4))
    label = RNG.integers(0, 3, size=(2, 4)).astype(float)
    out, grad = _softmax_output_grad(sym.SoftmaxOutput(X, name="sm", multi_output=True), x=x, sm_label=label)
    np.testing.assert_allclose(out, _softmax(x, 1), rtol=1e-10)
    onehot = np.moveaxis(np.eye(3)[label.astype(int)], -1, 1)
    np.testing.assert_allclose(grad, (out - onehot) / 4, rtol=1e-10)   # MXNet: 'null' divides by the 4 positions
    label2 = RNG.integers(0, 4, size=(2, 3)).astype(float)
    out, grad = _softmax_output_grad(sym.SoftmaxOutput(X, name="sm", preserve_shape=True), x=x, sm_label=label2)
    np.testing.assert_allclose(out, _softmax(x, -1), rtol=1e-10)
    np.testing.assert_allclose(grad, out - np.eye(4)[label2.astype(int)], rtol=1e-10)
    assert sym.SoftmaxOutput(X, name="sm", multi_output=True).infer_shape(x=(2, 3, 4))[0][1] == (2, 4)


@pytest.mark.parametrize("act_type", ["leaky", "elu", "selu", "gelu"])
def test_leaky_relu_kinds(act_type):
    x = RNG.normal(size=(3, 4))
    x = np.where(np.abs(x) < 0.05, 0.1, x)
    net = sym.LeakyReLU(X, act_type=act_type, slope=0.3)
    _, (out,) = run(net, x=x)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    expected = {"leaky": np.where(x > 0, x, 0.3 * x), "elu": np.where(x > 0, x, 0.3 * np.expm1(x)),
                "selu": scale * np.where(x > 0, x, alpha * np.expm1(x)),
                "gelu": 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))}[act_type]
    np.testing.assert_allclose(out, expected, rtol=1e-10)
    check_gradients(net, {"x": x}, ["x"])


def test_prelu_learns_a_slope_per_channel_initialised_to_a_quarter():
    x = RNG.normal(size=(2, 3, 4))
    x = np.where(np.abs(x) < 0.05, 0.1, x)
    net = sym.LeakyReLU(X, act_type="prelu", name="act")
    assert net.list_arguments() == ["x", "act_gamma"]
    assert net.infer_shape(x=x.shape)[0][1] == (3,)
    assert net.attr_dict()["act_gamma"]["__init__"] == '["Constant", {"value": 0.25}]'   # as MXNet sets it
    gamma = np.array([0.1, 0.25, 0.5])
    _, (out,) = run(net, x=x, act_gamma=gamma)
    np.testing.assert_allclose(out, np.where(x > 0, x, gamma[None, :, None] * x), rtol=1e-12)
    check_gradients(net, {"x": x, "act_gamma": gamma}, ["x", "act_gamma"])


def test_batchnorm_output_mean_var():
    x = RNG.normal(size=(4, 3))
    net = sym.BatchNorm(X, output_mean_var=True, fix_gamma=False, name="bn")
    assert net.list_outputs() == ["bn_output", "bn_mean", "bn_var"]
    _, (out, mean, var) = run(net, is_train=True, x=x, bn_gamma=np.ones(3), bn_beta=np.zeros(3))
    np.testing.assert_allclose(mean, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(var, x.var(axis=0), rtol=1e-12)
    assert len(sym.BatchNorm(X, name="bn").list_outputs()) == 1


def test_parameters_that_change_meaning_are_refused_until_supported():
    with pytest.raises(ConfigError, match="use_length=True"):
        sym.softmax(X, use_length=True)
    with pytest.raises(ConfigError, match="out_grad=True"):
        sym.SoftmaxOutput(X, out_grad=True)
    with pytest.raises(ConfigError, match="layout NHWC is not supported"):
        sym.Pooling(X, kernel=(2, 2), layout="NHWC")

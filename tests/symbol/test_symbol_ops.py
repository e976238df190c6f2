"""Every op: forward against plain numpy, and its backward graph against central differences."""
import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import CONTEXTS, check_gradients, cross_entropy, run, softmax

RNG = np.random.default_rng(42)
X = RNG.normal(size=(4, 5))
data = sym.Variable("data")


def normal(*shape):
    return RNG.normal(size=shape)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("no_bias", [False, True])
def test_fully_connected(ctx, no_bias):
    net = sym.FullyConnected(data, num_hidden=3, no_bias=no_bias, name="fc")
    feed = {"data": normal(4, 2, 3), "fc_weight": normal(3, 6)}
    if not no_bias:
        feed["fc_bias"] = normal(3)
    _, (out,) = run(net, ctx, **feed)
    expected = feed["data"].reshape(4, 6) @ feed["fc_weight"].T + feed.get("fc_bias", 0)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    check_gradients(net, feed, list(feed), ctx=ctx)


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("act_type", sorted(ACTIVATIONS))
def test_activation(ctx, act_type):
    net = sym.Activation(data, act_type=act_type)
    _, (out,) = run(net, ctx, data=X)
    np.testing.assert_allclose(out, ACTIVATIONS[act_type](X), rtol=1e-12)
    check_gradients(net, {"data": X}, ["data"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("act_type,expected", [
    ("leaky", lambda x: np.where(x > 0, x, 0.1 * x)),
    ("elu", lambda x: np.where(x > 0, x, 0.1 * np.expm1(x)))])
def test_leaky_relu(ctx, act_type, expected):
    net = sym.LeakyReLU(data, act_type=act_type, slope=0.1)
    _, (out,) = run(net, ctx, data=X)
    np.testing.assert_allclose(out, expected(X), rtol=1e-12)
    check_gradients(net, {"data": X}, ["data"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_dropout_is_identity_at_inference_and_masks_in_training(ctx):
    net = sym.Dropout(data, p=0.5)
    big = np.abs(normal(50, 40)) + 1
    _, (out,) = run(net, ctx, data=big)
    np.testing.assert_array_equal(out, big)
    _, (out,) = run(net, ctx, is_train=True, data=big)
    dropped = out == 0
    assert 0.4 < dropped.mean() < 0.6
    np.testing.assert_allclose(out[~dropped], 2 * big[~dropped])
    check_gradients(net, {"data": X}, ["data"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batchnorm_training_forward_and_moving_stats(ctx, fix_gamma):
    net = sym.BatchNorm(data, fix_gamma=fix_gamma, eps=1e-3, momentum=0.9, name="bn")
    x, gamma, beta = normal(6, 3, 2), normal(3), normal(3)
    exe, (out,) = run(net, ctx, is_train=True, data=x, bn_gamma=gamma, bn_beta=beta)
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    g = np.ones(3) if fix_gamma else gamma
    expected = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3) * g[None, :, None] + beta[None, :, None]
    np.testing.assert_allclose(out, expected, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(exe.aux_dict["bn_moving_mean"].tolist()), 0.1 * mean, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(exe.aux_dict["bn_moving_var"].tolist()), 0.9 + 0.1 * var, rtol=1e-10)
    wrt = ["data", "bn_beta"] + ([] if fix_gamma else ["bn_gamma"])
    check_gradients(net, {"data": x, "bn_gamma": gamma, "bn_beta": beta}, wrt, ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_batchnorm_inference_uses_moving_stats(ctx):
    net = sym.BatchNorm(data, fix_gamma=False, name="bn")
    x, gamma, beta = normal(4, 3), normal(3), normal(3)
    exe = net.simple_bind(ctx, grad_req="null", dtype="float64", data=x.shape)
    exe.copy_params_from({"bn_gamma": gamma, "bn_beta": beta},
                         {"bn_moving_mean": np.full(3, 0.5), "bn_moving_var": np.full(3, 4.0)})
    out = np.asarray(exe.forward(is_train=False, data=x)[0].tolist())
    np.testing.assert_allclose(out, (x - 0.5) / np.sqrt(4.0 + 1e-3) * gamma + beta, rtol=1e-10)
    check_gradients(net, {"data": x, "bn_gamma": gamma, "bn_beta": beta}, ["data", "bn_gamma"], ctx=ctx,
                    is_train=False)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_concat(ctx):
    a, b = sym.Variable("a"), sym.Variable("b")
    net = sym.Concat(a, b, dim=1)
    feed = {"a": normal(3, 2), "b": normal(3, 4)}
    _, (out,) = run(net, ctx, **feed)
    np.testing.assert_array_equal(out, np.concatenate([feed["a"], feed["b"]], axis=1))
    check_gradients(net, feed, ["a", "b"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_flatten_and_reshape(ctx):
    x = normal(2, 3, 4)
    _, (out,) = run(sym.Flatten(data), ctx, data=x)
    np.testing.assert_array_equal(out, x.reshape(2, 12))
    net = sym.Reshape(data, shape=(0, -1, 2))
    _, (out,) = run(net, ctx, data=x)
    np.testing.assert_array_equal(out, x.reshape(2, 6, 2))
    check_gradients(net, {"data": x}, ["data"], ctx=ctx)
    check_gradients(sym.Flatten(data), {"data": x}, ["data"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_elementwise_symbols(ctx, op):
    a, b = sym.Variable("a"), sym.Variable("b")
    net = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
    feed = {"a": normal(3, 4), "b": np.abs(normal(3, 4)) + 0.5}
    _, (out,) = run(net, ctx, **feed)
    expected = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op](feed["a"], feed["b"])
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    check_gradients(net, feed, ["a", "b"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("make,expected", [
    (lambda s: s + 2, lambda x: x + 2), (lambda s: 2 + s, lambda x: 2 + x),
    (lambda s: s - 2, lambda x: x - 2), (lambda s: 2 - s, lambda x: 2 - x),
    (lambda s: s * 3, lambda x: x * 3), (lambda s: 3 * s, lambda x: 3 * x),
    (lambda s: s / 4, lambda x: x / 4), (lambda s: 4 / s, lambda x: 4 / x), (lambda s: -s, lambda x: -x)])
def test_scalar_ops(ctx, make, expected):
    x = np.abs(X) + 0.5
    net = make(data)
    _, (out,) = run(net, ctx, data=x)
    np.testing.assert_allclose(out, expected(x), rtol=1e-12)
    check_gradients(net, {"data": x}, ["data"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("reducer", ["sum", "mean"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_reductions(ctx, reducer, axis, keepdims):
    x = normal(2, 3, 4)
    net = getattr(sym, reducer)(data, axis=axis, keepdims=keepdims)
    _, (out,) = run(net, ctx, data=x)
    expected = getattr(np, reducer)(x, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(out, np.reshape(expected, out.shape), rtol=1e-12)
    check_gradients(net, {"data": x}, ["data"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_embedding(ctx):
    ids = np.array([[0, 2], [2, 4]], dtype=np.float64)
    weight = normal(5, 3)
    net = sym.Embedding(data, input_dim=5, output_dim=3, name="emb")
    _, (out,) = run(net, ctx, data=ids, emb_weight=weight)
    np.testing.assert_array_equal(out, weight[ids.astype(int)])
    check_gradients(net, {"data": ids, "emb_weight": weight}, ["emb_weight"], ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("normalization,divisor", [("null", 1), ("batch", 4)])
def test_softmax_output(ctx, normalization, divisor):
    label = np.array([0, 2, 1, 2], dtype=np.float64)
    net = sym.SoftmaxOutput(data, normalization=normalization, name="softmax")
    exe, (out,) = run(net, ctx, is_train=True, grad_req={"data": "write"}, data=X[:, :3], softmax_label=label)
    np.testing.assert_allclose(out, softmax(X[:, :3]), rtol=1e-12)
    exe.backward()
    onehot = np.eye(3)[label.astype(int)]
    np.testing.assert_allclose(np.asarray(exe.grad_dict["data"].tolist()), (out - onehot) / divisor, rtol=1e-12)
    loss = cross_entropy(label)  # normalization divides the gradient: the objective is the normalized loss
    grads = check_gradients(net, {"data": X[:, :3], "softmax_label": label}, ["data"],
                            objective=lambda outputs: loss(outputs) / divisor, ctx=ctx)
    assert grads["data"].shape == (4, 3)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_softmax_output_valid_normalization_ignores_label(ctx):
    label = np.array([0, -1, 1, -1], dtype=np.float64)
    net = sym.SoftmaxOutput(data, normalization="valid", use_ignore=True, ignore_label=-1, grad_scale=2.0)
    exe, (out,) = run(net, ctx, is_train=True, grad_req={"data": "write"}, data=X[:, :3],
                      softmaxoutput0_label=label)
    exe.backward()
    expected = out.copy()
    expected[[0, 2], [0, 1]] -= 1
    expected[[1, 3]] = 0
    np.testing.assert_allclose(np.asarray(exe.grad_dict["data"].tolist()), expected * 2.0 / 2, rtol=1e-12)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_regression_outputs(ctx):
    label = normal(4, 2)
    probs = np.clip(np.abs(normal(4, 2)), 0.1, 0.9)
    linear = sym.LinearRegressionOutput(data, name="lro")
    _, (out,) = run(linear, ctx, data=X[:, :2], lro_label=label)
    np.testing.assert_array_equal(out, X[:, :2])
    mse = lambda outs: float(0.5 * ((outs[0] - label) ** 2).sum() / 2)  # noqa: E731
    check_gradients(linear, {"data": X[:, :2], "lro_label": label}, ["data"], objective=mse, ctx=ctx)
    logistic = sym.LogisticRegressionOutput(data, name="lgo")
    _, (out,) = run(logistic, ctx, data=X[:, :2], lgo_label=probs)
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-X[:, :2])), rtol=1e-12)
    bce = lambda outs: float(-(probs * np.log(outs[0]) + (1 - probs) * np.log(1 - outs[0])).sum() / 2)  # noqa
    check_gradients(logistic, {"data": X[:, :2], "lgo_label": probs}, ["data"], objective=bce, ctx=ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_make_loss(ctx):
    net = sym.MakeLoss(sym.sum(data * data, axis=1), grad_scale=0.5)
    _, (out,) = run(net, ctx, data=X)
    np.testing.assert_allclose(out, (X * X).sum(axis=1))
    half_total = lambda outs: 0.5 * float(outs[0].sum())  # noqa: E731
    check_gradients(net, {"data": X}, ["data"], objective=half_total, ctx=ctx)

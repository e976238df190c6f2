"""MXNet 1.9.1 tests/python/mkl/test_mkldnn.py::test_mkldnn_model, on a hand-written model of the same family.

MXNet's file (data/test_mkldnn_test_mkldnn_model_model1.json) is not shipped here; data/legacy_conv_bn_model.json
is a model of its shape written as MXNet 1.0/1.1 wrote files: Convolution (cudnn_tune, workspace, layout) ->
BatchNorm (fix_gamma, eps=2e-5, moving statistics with their ``__init__``) -> Activation -> Pooling ('full') ->
FullyConnected -> SoftmaxOutput. As MXNet's test: every argument and gradient array is ones, input
(32, 3, 300, 300), two training forward/backward passes. MXNet's test asserts only that they run; here every output,
gradient and moving statistic is compared with a float64 numpy writing of the same model (``Reference``), for each
BatchNorm setting the family uses (docs/mxnet.md says what was checked).
"""
import copy
import json
import os

import numpy as np
import pytest

import sparkps.symbol as sym
from sparkps.errors import ConfigError

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "legacy_conv_bn_model.json")


def load_doc():
    with open(MODEL, encoding="utf-8") as f:
        return json.load(f)


def with_bn(doc, **attrs):
    doc = copy.deepcopy(doc)
    bn = next(n for n in doc["nodes"] if n["op"] == "BatchNorm")
    bn["attrs"].update({k: str(v) for k, v in attrs.items()})
    return doc


def as_0_9(doc):
    """The same model in MXNet 0.9's layout: "attr" instead of "attrs", version 0.9.3."""
    doc = copy.deepcopy(doc)
    for node in doc["nodes"]:
        if "attrs" in node:
            node["attr"] = node.pop("attrs")
    doc["attrs"]["mxnet_version"] = ["int", 903]
    return doc


class Reference:
    """The model of data/legacy_conv_bn_model.json written out in float64 numpy: Convolution (3x3, pad 1, stride 2)
    -> BatchNorm -> relu -> max Pooling (3x3, stride 2, 'full': windows past the end see -inf) -> FullyConnected ->
    SoftmaxOutput (normalization 'null': the gradient is p - one_hot(label)). ``bn``: the BatchNorm's settings."""

    def __init__(self, bn):
        self.eps = float(bn.get("eps", 2e-5))
        self.fix_gamma = bn.get("fix_gamma", "True") in ("True", "1")
        self.global_stats = bn.get("use_global_stats", "False") in ("True", "1")

    @staticmethod
    def taps(height, width, kernel, stride, out_h, out_w):
        for i in range(kernel):
            for j in range(kernel):
                yield (slice(None), slice(None), slice(i, i + stride * (out_h - 1) + 1, stride),
                       slice(j, j + stride * (out_w - 1) + 1, stride))

    def forward(self, arrays, aux, is_train):
        """(probabilities, what backward needs); updates ``aux`` (moving mean, var) as a training pass does."""
        p = {k: np.asarray(v, np.float64) for k, v in arrays.items()}
        x = np.pad(p["data"], ((0, 0), (0, 0), (1, 1), (1, 1)))
        n, h, w = x.shape[0], (x.shape[2] - 3) // 2 + 1, (x.shape[3] - 3) // 2 + 1
        conv = np.zeros((n, p["conv1_weight"].shape[0], h, w)) + p["conv1_bias"][None, :, None, None]
        for k, tap in enumerate(self.taps(x.shape[2], x.shape[3], 3, 2, h, w)):
            conv += np.einsum("nchw,fc->nfhw", x[tap], p["conv1_weight"][:, :, k // 3, k % 3])
        batch = is_train and not self.global_stats
        if batch:
            mean, var = conv.mean(axis=(0, 2, 3)), conv.var(axis=(0, 2, 3))
            aux["bn1_moving_mean"] = 0.9 * aux["bn1_moving_mean"] + 0.1 * mean
            aux["bn1_moving_var"] = 0.9 * aux["bn1_moving_var"] + 0.1 * var
        else:
            mean, var = aux["bn1_moving_mean"], aux["bn1_moving_var"]
        invstd = 1 / np.sqrt(var + self.eps)
        xhat = (conv - mean[None, :, None, None]) * invstd[None, :, None, None]
        gamma = np.ones_like(p["bn1_gamma"]) if self.fix_gamma else p["bn1_gamma"]
        bn = xhat * gamma[None, :, None, None] + p["bn1_beta"][None, :, None, None]
        relu = np.maximum(bn, 0)
        ph, pw = -(-(h - 3) // 2) + 1, -(-(w - 3) // 2) + 1           # 'full': ceil
        padded = np.full((n, relu.shape[1], 2 * (ph - 1) + 3, 2 * (pw - 1) + 3), -np.inf)
        padded[:, :, :h, :w] = relu
        pool = np.full((n, relu.shape[1], ph, pw), -np.inf)
        for tap in self.taps(padded.shape[2], padded.shape[3], 3, 2, ph, pw):
            pool = np.maximum(pool, padded[tap])
        flat = pool.reshape(n, -1)
        logits = flat @ p["fc1_weight"].T + p["fc1_bias"]
        prob = np.exp(logits - logits.max(axis=1, keepdims=True))
        prob /= prob.sum(axis=1, keepdims=True)
        return prob, dict(p=p, x=x, conv=conv, xhat=xhat, gamma=gamma, invstd=invstd, batch=batch, relu=relu,
                          padded=padded, pool=pool, flat=flat, prob=prob)

    def backward(self, saved):
        """Every argument's gradient (a max Pooling window's gradient goes to its first largest value)."""
        p, n = saved["p"], saved["prob"].shape[0]
        dlogits = saved["prob"] - np.eye(saved["prob"].shape[1])[p["softmax_label"].astype(int)]
        grads = {"fc1_weight": dlogits.T @ saved["flat"], "fc1_bias": dlogits.sum(axis=0),
                 "softmax_label": np.zeros_like(p["softmax_label"])}
        dpool = (dlogits @ p["fc1_weight"]).reshape(saved["pool"].shape)
        padded, pool = saved["padded"], saved["pool"]
        dpadded, open_ = np.zeros_like(padded), np.ones(pool.shape, bool)
        for tap in self.taps(padded.shape[2], padded.shape[3], 3, 2, pool.shape[2], pool.shape[3]):
            hit = open_ & (padded[tap] == pool)
            dpadded[tap] += dpool * hit
            open_ &= ~hit
        h, w = saved["relu"].shape[2:]
        dbn = dpadded[:, :, :h, :w] * (saved["relu"] > 0)
        xhat, invstd, gamma = saved["xhat"], saved["invstd"], saved["gamma"]
        grads["bn1_beta"] = dbn.sum(axis=(0, 2, 3))
        grads["bn1_gamma"] = np.zeros_like(gamma) if self.fix_gamma else (dbn * xhat).sum(axis=(0, 2, 3))
        g = (invstd * gamma)[None, :, None, None]
        if saved["batch"]:
            dconv = g * (dbn - dbn.mean(axis=(0, 2, 3), keepdims=True)
                         - xhat * (dbn * xhat).mean(axis=(0, 2, 3), keepdims=True))
        else:
            dconv = g * dbn
        x, weight = saved["x"], p["conv1_weight"]
        dx, dweight = np.zeros_like(x), np.zeros_like(weight)
        for k, tap in enumerate(self.taps(x.shape[2], x.shape[3], 3, 2, h, w)):
            dweight[:, :, k // 3, k % 3] = np.einsum("nfhw,nchw->fc", dconv, x[tap])
            dx[tap] += np.einsum("nfhw,fc->nchw", dconv, weight[:, :, k // 3, k % 3])
        grads.update(conv1_weight=dweight, conv1_bias=dconv.sum(axis=(0, 2, 3)), data=dx[:, :, 1:-1, 1:-1])
        del n
        return grads


def close(got, want, what):
    want = np.asarray(want)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-3, atol=2e-4 * max(1.0, np.abs(want).max()),
                               err_msg=what)


def check_against_reference(net, bn, inputs, aux_value, grads_to_check=None):
    """Two training passes and one inference pass, as MXNet's test, each output, gradient and moving statistic
    compared with :class:`Reference`'s; ``grads_to_check``: the gradients to compare (default: all)."""
    arg_shapes, _, aux_shapes = net.infer_shape(data=inputs["data"].shape)
    dtype = inputs["data"].dtype
    grads = {x: np.ones(y, dtype) for x, y in zip(net.list_arguments(), arg_shapes)}
    aux = {x: np.full(y, aux_value, dtype) for x, y in zip(net.list_auxiliary_states(), aux_shapes)}
    want_aux = {k: v.astype(np.float64) for k, v in aux.items()}
    exe = net.bind("cpu", {k: v.copy() for k, v in inputs.items()}, args_grad=grads, aux_states=aux)
    reference = Reference(bn)
    for step in range(2):
        exe.forward(is_train=True)
        prob, saved = reference.forward(inputs, want_aux, is_train=True)
        close(exe.outputs[0], prob, "training output, pass %d" % step)
        exe.backward()
        want = reference.backward(saved)
        for name in grads_to_check or want:
            close(exe.grad_dict[name], want[name], "gradient of %s, pass %d" % (name, step))
    for name, value in want_aux.items():
        close(exe.aux_dict[name], value, name)
    exe.forward(is_train=False)
    close(exe.outputs[0], reference.forward(inputs, want_aux, is_train=False)[0], "inference output")
    return exe


def random_inputs(net, shape, seed=0):
    rng = np.random.default_rng(seed)
    arg_shapes, _, _ = net.infer_shape(data=shape)
    inputs = {x: rng.normal(scale=0.5, size=y).astype(np.float32) for x, y in zip(net.list_arguments(), arg_shapes)}
    inputs["softmax_label"] = rng.integers(0, 10, size=shape[0]).astype(np.float32)
    return inputs


def test_the_reference_is_the_model():
    # what the comparisons below stand on: the numpy reference's gradients are those of its own forward pass
    net = sym.load(MODEL)
    inputs = {k: v.astype(np.float64) for k, v in random_inputs(net, (2, 3, 9, 9), seed=3).items()}
    reference, aux = Reference({"fix_gamma": "False"}), {"bn1_moving_mean": np.zeros(8), "bn1_moving_var": np.ones(8)}

    def loss(values):
        prob = reference.forward(values, dict(aux), is_train=True)[0]
        return -np.log(prob[np.arange(2), values["softmax_label"].astype(int)]).sum()

    want = reference.backward(reference.forward(inputs, dict(aux), is_train=True)[1])
    rng = np.random.default_rng(4)
    for name in ("data", "conv1_weight", "conv1_bias", "bn1_gamma", "bn1_beta", "fc1_weight"):
        direction = rng.normal(size=inputs[name].shape)
        step = 1e-6
        plus, minus = dict(inputs), dict(inputs)
        plus[name], minus[name] = inputs[name] + step * direction, inputs[name] - step * direction
        numeric = (loss(plus) - loss(minus)) / (2 * step)
        assert numeric == pytest.approx((want[name] * direction).sum(), rel=1e-5, abs=1e-8), name


def ones(net, shape, dtype):
    arg_shapes, _, _ = net.infer_shape(data=shape)
    return {x: np.ones(y, dtype) for x, y in zip(net.list_arguments(), arg_shapes)}


def test_mkldnn_model():
    # MXNet: test_mkldnn_model (every array ones, its 300x300 images; aux states given: sparkps's bind, as MXNet's,
    # needs them), in float64: float32 cannot hold its logits (each a sum of 45,000 ones) closely enough for their
    # softmax to be compared (the next test runs MXNet's float32 batch of 32); a batch of 4 ones is the same images.
    # With all-ones data, pooling windows hold ties and implementations may send a window's gradient to any of its
    # largest values: the gradients compared are those that do not depend on which.
    net = sym.load(MODEL)
    assert net.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    exe = check_against_reference(net, {}, ones(net, (4, 3, 300, 300), np.float64), 1.0,
                                  grads_to_check=["fc1_weight", "fc1_bias", "bn1_beta", "bn1_gamma"])
    np.testing.assert_allclose(exe.outputs[0], 0.1, rtol=1e-9)       # ten equal logits


def test_mkldnn_model_in_float32_is_within_float32s_rounding_of_its_logits():
    # MXNet's test as it runs (float32): the logits (about 45,000) are equal up to float32's rounding of such sums
    net = sym.load(MODEL)
    arg_shapes, _, aux_shapes = net.infer_shape(data=(32, 3, 300, 300))
    aux = {x: np.ones(y, np.float32) for x, y in zip(net.list_auxiliary_states(), aux_shapes)}
    exe = net.bind("cpu", ones(net, (32, 3, 300, 300), np.float32), aux_states=aux)
    exe.forward(is_train=True)
    prob = np.asarray(exe.outputs[0], np.float64)
    np.testing.assert_allclose(prob.sum(axis=1), 1, rtol=1e-5)
    logit_spread = np.log(prob.max(axis=1) / prob.min(axis=1))
    assert (logit_spread <= 45_001 * 2 ** -23 * 64).all(), logit_spread     # float32's ulp at 45,000, 64 sums deep


@pytest.mark.parametrize("layout", ["1.0", "0.9"])
@pytest.mark.parametrize("aux_value", [0.0, 1.0])
@pytest.mark.parametrize("bn", [{}, {"fix_gamma": "False"}, {"use_global_stats": "True"}, {"eps": "1e-10"},
                                {"fix_gamma": "0", "use_global_stats": "1", "eps": "0.001"}], ids=str)
def test_mkldnn_model_batchnorm_settings(bn, aux_value, layout):
    # MXNet: test_mkldnn_model (BatchNorm settings of the family, moving statistics zero or one, both file layouts),
    # on random values (no ties) so that every gradient is compared
    doc = with_bn(load_doc(), **bn)
    doc = as_0_9(doc) if layout == "0.9" else doc
    net = sym.load_json(json.dumps(doc))
    check_against_reference(net, bn, random_inputs(net, (4, 3, 40, 40)), aux_value)


def test_mkldnn_model_defaults_of_simple_bind_are_those_of_the_reference():
    # moving_var starts at one (its __init__), moving_mean at zero: inference right after binding uses them
    net = sym.load(MODEL)
    exe = net.simple_bind("cpu", data=(4, 3, 40, 40))
    np.testing.assert_array_equal(exe.aux_dict["bn1_moving_var"], 1)
    np.testing.assert_array_equal(exe.aux_dict["bn1_moving_mean"], 0)
    inputs = random_inputs(net, (4, 3, 40, 40), seed=1)
    for name, array in exe.arg_dict.items():
        array[...] = inputs[name]
    exe.forward(is_train=False)
    aux = {"bn1_moving_mean": np.zeros(8), "bn1_moving_var": np.ones(8)}
    close(exe.outputs[0], Reference({}).forward(inputs, aux, is_train=False)[0], "inference output")


def test_mkldnn_model_without_aux_states_is_one_error_naming_them():
    net = sym.load(MODEL)
    arg_shapes, _, _ = net.infer_shape(data=(4, 3, 40, 40))
    inputs = {x: np.ones(y, np.float32) for x, y in zip(net.list_arguments(), arg_shapes)}
    with pytest.raises(ConfigError, match="'bn1_moving_mean', 'bn1_moving_var'"):
        net.bind("cpu", inputs)


@pytest.mark.parametrize("dtype, finite", [("float32", False), ("float64", True)])
def test_all_ones_weights_overflow_a_deep_float32_stack_as_in_any_implementation(dtype, finite):
    # Where a model of the family gives non-finite outputs for MXNet's all-ones inputs: each 3x3 convolution of
    # 16 channels of ones multiplies the values by up to 144, so 20 of them without a BatchNorm between pass
    # float32's 3.4e38 (inf, then inf - inf = NaN in the BatchNorm); float64 holds them. Arithmetic, not the ops.
    net = sym.Variable("data")
    for i in range(20):
        net = sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=16, no_bias=True, name="c%d" % i)
    net = sym.BatchNorm(net, fix_gamma=True, eps=2e-5, name="bn")
    exe = net.simple_bind("cpu", dtype=dtype, data=(2, 3, 4, 4))
    for array in exe.arg_dict.values():
        array[...] = 1
    exe.forward(is_train=True)
    assert bool(np.isfinite(exe.outputs[0]).all()) is finite

"""MXNet 1.9.1 tests/python/mkl/test_mkldnn.py::test_mkldnn_model, on a hand-written model of the same family.

MXNet's file (data/test_mkldnn_test_mkldnn_model_model1.json) is not shipped here; data/legacy_conv_bn_model.json
is a model of its shape written as MXNet 1.0/1.1 wrote files: Convolution (cudnn_tune, workspace, layout) ->
BatchNorm (fix_gamma, eps=2e-5, moving statistics with their ``__init__``) -> Activation -> Pooling ('full') ->
FullyConnected -> SoftmaxOutput. As MXNet's test: every argument and gradient array is ones, input
(32, 3, 300, 300), two training forward/backward passes. MXNet's test asserts only that they run; here every output
and gradient is also finite, for each BatchNorm setting the family uses (docs/mxnet.md says what was checked).
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


def check_finite(net, shape, aux_value):
    args = net.list_arguments()
    arg_shapes, _, aux_shapes = net.infer_shape(data=shape)
    inputs = {x: np.ones(y, np.float32) for x, y in zip(args, arg_shapes)}
    grads = {x: np.ones(y, np.float32) for x, y in zip(args, arg_shapes)}
    aux = {x: np.full(y, aux_value, np.float32) for x, y in zip(net.list_auxiliary_states(), aux_shapes)}
    exe = net.bind("cpu", inputs, args_grad=grads, aux_states=aux)
    for _ in range(2):
        exe.forward(is_train=True)
        assert all(np.isfinite(y).all() for y in exe.outputs)
        exe.backward()
        bad = [name for name, g in exe.grad_dict.items() if not np.isfinite(g).all()]
        assert not bad, bad
    assert all(np.isfinite(a).all() for a in exe.aux_dict.values())
    exe.forward(is_train=False)
    assert all(np.isfinite(y).all() for y in exe.outputs)
    return exe


def test_mkldnn_model():
    # MXNet: test_mkldnn_model (its input shape; aux states given: sparkps's bind, as MXNet's, needs them)
    net = sym.load(MODEL)
    assert net.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    exe = check_finite(net, (32, 3, 300, 300), 1.0)
    np.testing.assert_allclose(exe.outputs[0].sum(axis=1), 1, rtol=1e-5)


@pytest.mark.parametrize("layout", ["1.0", "0.9"])
@pytest.mark.parametrize("aux_value", [0.0, 1.0])
@pytest.mark.parametrize("bn", [{}, {"fix_gamma": "False"}, {"use_global_stats": "True"}, {"eps": "1e-10"},
                                {"fix_gamma": "0", "use_global_stats": "1", "eps": "0.001"}], ids=str)
def test_mkldnn_model_batchnorm_settings(bn, aux_value, layout):
    # MXNet: test_mkldnn_model (BatchNorm settings of the family, moving statistics zero or one, both file layouts)
    doc = with_bn(load_doc(), **bn)
    doc = as_0_9(doc) if layout == "0.9" else doc
    check_finite(sym.load_json(json.dumps(doc)), (4, 3, 40, 40), aux_value)


def test_mkldnn_model_defaults_of_simple_bind_are_finite():
    # moving_var starts at one (its __init__), moving_mean at zero: inference right after binding is finite
    exe = sym.load(MODEL).simple_bind("cpu", data=(4, 3, 40, 40))
    np.testing.assert_array_equal(exe.aux_dict["bn1_moving_var"], 1)
    for array in exe.arg_dict.values():
        array[...] = 1
    exe.forward(is_train=False)
    assert np.isfinite(exe.outputs[0]).all()


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

"""The upgrade rules of MXNet 1.9.1's src/nnvm/legacy_json_util.cc that MXNet's unit tests do not reach
(test_load_000800 in test_symbol.py covers UpgradeJSON_FixParsing): UpgradeJSON_000800_000900 (a made-up input
variable takes its op's attributes), UpgradeJSON_000903_000904 (the initialiser an op gives its input
variables on compose, FSetInputVarAttrOnCompose: PReLU's gamma) and UpgradeJSON_000904_000905 (argmax/argmin
``axis=-1`` meant every axis).  Each rule applies only to files older than its version, as MXNet's
upgrader list does.  The documents are written here in the layouts those versions wrote."""
import json

import numpy as np
import pytest

from sparkps import symbol as sym

PRELU_INIT = '["Constant", {"value": 0.25}]'


def _doc(nodes, heads, version=None):
    doc = {"nodes": nodes, "arg_nodes": [i for i, n in enumerate(nodes) if n["op"] == "null"], "heads": heads}
    if version is not None:
        doc["attrs"] = {"mxnet_version": ["int", version]}
    return json.dumps(doc)


def test_000800_made_up_inputs_take_their_op_s_attributes():
    # An MXNet 0.8 file: FullyConnected lists only its data; weight and bias are made up on load and carry
    # the op's attributes (legacy lr_mult/ctx_group become __lr_mult__/__ctx_group__ first, and the
    # input-specific weight_wd_mult goes to the weight alone).
    nodes = [{"op": "null", "name": "data", "param": {}, "attr": {}, "inputs": []},
             {"op": "FullyConnected", "name": "fc1", "param": {"num_hidden": "4"},
              "attr": {"lr_mult": "0.5", "ctx_group": "stage1", "weight_wd_mult": "0.1"}, "inputs": [[0, 0]]}]
    net = sym.load_json(_doc(nodes, [[1, 0]]))
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    attrs = net.attr_dict()
    for var in ("fc1_weight", "fc1_bias"):
        assert attrs[var]["__lr_mult__"] == "0.5" and attrs[var]["__ctx_group__"] == "stage1"
        assert attrs[var]["num_hidden"] == "4"
    assert attrs["fc1_weight"]["__wd_mult__"] == "0.1" and "__wd_mult__" not in attrs["fc1_bias"]
    assert attrs["fc1"]["__lr_mult__"] == "0.5"
    _, out_shapes, _ = net.infer_shape(data=(2, 3))
    assert out_shapes == [(2, 4)]


def _prelu_doc(version, gamma_attrs=None):
    gamma = {"op": "null", "name": "gamma", "inputs": []}
    if gamma_attrs:
        gamma["attrs"] = gamma_attrs
    nodes = [{"op": "null", "name": "data", "inputs": []}, gamma,
             {"op": "LeakyReLU", "name": "act", "attrs": {"act_type": "prelu"}, "inputs": [[0, 0, 0], [1, 0, 0]]}]
    return _doc(nodes, [[2, 0, 0]], version)


@pytest.mark.parametrize("version", [900, 903])
def test_000904_files_before_0_9_4_get_prelu_s_gamma_initialiser(version):
    net = sym.load_json(_prelu_doc(version))
    assert net.attr_dict()["gamma"]["__init__"] == PRELU_INIT


def test_000904_a_gamma_initialiser_of_the_file_is_kept():
    mine = '["Constant", {"value": 0.1}]'
    net = sym.load_json(_prelu_doc(903, {"__init__": mine}))
    assert net.attr_dict()["gamma"]["__init__"] == mine


@pytest.mark.parametrize("version", [904, 10901])
def test_000904_later_files_are_left_as_written(version):
    assert "__init__" not in sym.load_json(_prelu_doc(version)).attr_dict().get("gamma", {})


def test_000904_the_upgraded_initialiser_starts_gamma_at_0_25():
    import sparkps as sp
    net = sym.SoftmaxOutput(sym.load_json(_prelu_doc(903)), name="softmax")
    model = sp.FeedForward(net, num_epoch=1, learning_rate=0.0, initializer=sp.init.Uniform(), seed=0)
    model.fit(np.zeros((4, 3), np.float32), np.zeros(4))
    np.testing.assert_array_equal(model.arg_params["gamma"], np.full(3, 0.25))


def _argmax_doc(version, op="argmax", axis="-1"):
    nodes = [{"op": "null", "name": "data", "inputs": []},
             {"op": op, "name": "pick", "attrs": {"axis": axis}, "inputs": [[0, 0, 0]]}]
    return _doc(nodes, [[1, 0, 0]], version)


X = np.array([[[1.0, 9.0, 2.0], [3.0, 0.5, 7.0]], [[8.0, 4.0, 6.0], [5.0, 10.0, 0.0]]])


def _run(net, x):
    exe = net.simple_bind("cpu", data=x.shape, dtype="float64")
    return exe.forward(is_train=False, data=x)[0]


@pytest.mark.parametrize("op, pick", [("argmax", np.argmax), ("argmin", np.argmin)])
def test_000905_axis_minus_one_before_0_9_5_means_every_axis(op, pick):
    old = sym.load_json(_argmax_doc(904, op))
    assert old.attr_dict()["pick"]["axis"] == "None"
    np.testing.assert_array_equal(_run(old, X), [pick(X)])
    new = sym.load_json(_argmax_doc(905, op))
    np.testing.assert_array_equal(_run(new, X), pick(X, axis=-1))


def test_000905_other_axes_are_kept():
    old = sym.load_json(_argmax_doc(904, axis="1"))
    np.testing.assert_array_equal(_run(old, X), np.argmax(X, axis=1))


@pytest.mark.parametrize("axis, keepdims", [(None, False), (None, True), (0, False), (1, True), (-1, False)])
def test_argmax_argmin_match_numpy(axis, keepdims):
    data = sym.Variable("data")
    for make, pick in ((sym.argmax, np.argmax), (sym.argmin, np.argmin)):
        net = make(data, axis=axis, keepdims=keepdims)
        expected = pick(X, axis=axis, keepdims=keepdims) if axis is not None else \
            np.full((1,) * X.ndim if keepdims else (1,), pick(X))
        got = _run(net, X)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, expected)
        assert net.infer_shape(data=X.shape)[1] == [expected.shape]


def test_argmax_passes_no_gradient():
    data = sym.Variable("data")
    net = sym.MakeLoss(sym.sum(sym.argmax(data, axis=1)) + sym.sum(data))
    exe = net.simple_bind("cpu", data=(2, 3), dtype="float64")
    exe.forward(is_train=True, data=X[0])
    exe.backward()
    np.testing.assert_array_equal(exe.grad_dict["data"], np.ones((2, 3)))


def test_argmax_refuses_an_axis_out_of_range_naming_the_op():
    with pytest.raises(Exception, match="argmax 'pick'.*axis 3 out of range"):
        sym.argmax(sym.Variable("data"), axis=3, name="pick").infer_shape(data=(2, 3))

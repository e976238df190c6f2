"""Mixed dtypes in one executor, as MXNet's infer_type decides them: ports of Apache MXNet 1.9.1
tests/python/unittest/test_operator.py (test_cast, test_cast_float32_to_float16, test_slice_like_different_types'
neighbours test_reshape_like_different_types and test_broadcast_like_different_types, test_softmax_dtype) in
their symbolic form, and the cases the executor must get right besides (float16 networks, integer Embedding ids,
a type conflict named)."""
import json

import numpy as np
import pytest

from sparkps import symbol as sym
from sparkps.errors import ConfigError


@pytest.mark.parametrize("srctype", [np.int32, np.float32, np.float16])
@pytest.mark.parametrize("dsttype", [np.float32, np.int32, np.float16])
def test_cast(srctype, dsttype):
    # MXNet: test_cast
    x = sym.Variable("x", dtype=srctype)
    y = sym.Cast(x, dtype=dsttype)
    exe = y.simple_bind("cpu", x=(10, 10))
    assert exe.arg_arrays[0].dtype == srctype
    assert exe.outputs[0].dtype == dsttype
    X = np.random.default_rng(0).uniform(-10, 10, size=(10, 10))
    exe.arg_arrays[0][:] = X
    exe.forward(is_train=True)
    exe.backward(X.astype(dsttype))
    np.testing.assert_allclose(exe.outputs[0], X.astype(srctype).astype(dsttype), rtol=1e-3, atol=1e-5)
    assert exe.grad_arrays[0].dtype == srctype
    np.testing.assert_allclose(exe.grad_arrays[0], X.astype(dsttype).astype(srctype), rtol=1e-3, atol=1e-5)


def _cast_op_data():
    """MXNet's get_cast_op_data, vectorised: values near and midway between float16 mantissas over every
    float32 exponent, both signs, and a NaN."""
    fraction = np.arange(2 ** 11) / 2.0 ** 11
    exponent = np.arange(-126 - 23 - 1, 127 + 2, dtype=np.float64)
    delta = np.array([-1.0, 0.0, 1.0]) / 2 ** 23
    base = 2.0 ** exponent[:, None, None] * (1.0 + fraction[None, :, None] + delta[None, None, :])
    values = np.concatenate([base.ravel(), -base.ravel(), [np.nan]])
    with np.errstate(over="ignore"):
        return values.astype(np.float32)


def test_cast_float32_to_float16():
    # MXNet: test_cast_float32_to_float16 (Cast; sparkps has no amp_cast)
    input_np = _cast_op_data()
    with np.errstate(over="ignore"):
        expected = input_np.astype(np.float64).astype(np.float16)
    x = sym.Variable("x", dtype=np.float32)
    exe = sym.Cast(x, dtype=np.float16).bind("cpu", {"x": input_np})
    assert exe.arg_arrays[0].dtype == np.float32 and exe.outputs[0].dtype == np.float16
    with np.errstate(over="ignore", invalid="ignore"):
        out = exe.forward(is_train=True)[0]
    same = (out == expected) | (np.isnan(out) & np.isnan(expected))
    assert same.all(), input_np[~same][:5]


def _bind_pair(op, x, y):
    return op(sym.Variable("x"), sym.Variable("y")).bind("cpu", {"x": x, "y": y})


def test_reshape_like_different_types():
    # MXNet: test_reshape_like_different_types
    exe = _bind_pair(sym.reshape_like, np.zeros((2, 3), np.float32), np.array([[1, 2], [3, 4], [5, 6]], np.int32))
    out = exe.forward()[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.zeros((3, 2)))


def test_broadcast_like_different_types():
    # MXNet: test_broadcast_like_different_types
    x = np.zeros((2, 1), np.float32)
    exe = _bind_pair(sym.broadcast_like, x, np.ones((2, 2), np.int32))
    out = exe.forward()[0]
    np.testing.assert_allclose(out, [[0, 0], [0, 0]])
    assert out.dtype == x.dtype


@pytest.mark.parametrize("op, tol", [("softmax", 1e-5), ("log_softmax", 1e-2)])
@pytest.mark.parametrize("idtype, ref_dtype, odtype", [
    ("float16", "float32", None), ("float16", "float32", "float32"),
    ("float32", "float64", None), ("float32", "float64", "float64")])
def test_softmax_dtype(op, tol, idtype, ref_dtype, odtype):
    # MXNet: test_softmax_dtype (softmin is not a sparkps op); the same data in idtype and in ref_dtype
    data = np.random.default_rng(1).uniform(size=(100, 500))
    outputs, grads = [], []
    for dtype in (idtype, ref_dtype):
        x = sym.Variable("x", dtype=dtype)
        kwargs = {} if odtype is None else {"dtype": odtype}
        y = getattr(sym, op)(x, axis=-1, **kwargs)
        exe = y.simple_bind("cpu", x=data.shape)
        assert exe.arg_dict["x"].dtype == np.dtype(dtype)
        assert exe.outputs[0].dtype == np.dtype(odtype or dtype)
        outputs.append(exe.forward(is_train=True, x=data.astype(dtype))[0].astype(np.float64))
        exe.backward(np.ones(data.shape, exe.outputs[0].dtype))
        assert exe.grad_dict["x"].dtype == np.dtype(dtype)
        grads.append(exe.grad_dict["x"].astype(np.float64))
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=tol, atol=tol)
    np.testing.assert_allclose(grads[0], grads[1], rtol=tol, atol=tol)


def test_float16_network_infers_float16_parameters_and_trains_in_float16():
    net = sym.SoftmaxOutput(sym.FullyConnected(sym.Variable("data"), num_hidden=3, name="fc"), name="softmax")
    exe = net.simple_bind("cpu", data=(4, 5), type_dict={"data": "float16"})
    for name in ("data", "fc_weight", "fc_bias", "softmax_label"):
        assert exe.arg_dict[name].dtype == np.float16, name
    assert exe.outputs[0].dtype == np.float16 and exe.grad_dict["fc_weight"].dtype == np.float16
    rng = np.random.default_rng(2)
    exe.arg_dict["fc_weight"][:] = rng.normal(size=(3, 5))
    exe.arg_dict["fc_bias"][:] = 0
    x, label = rng.normal(size=(4, 5)), np.array([0, 1, 2, 1])
    exe.forward(is_train=True, data=x, softmax_label=label)
    exe.backward()
    w = exe.arg_dict["fc_weight"].astype(np.float64)
    logits = x.astype(np.float16).astype(np.float64) @ w.T
    prob = np.exp(logits - logits.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    np.testing.assert_allclose(exe.outputs[0], prob, rtol=5e-3, atol=5e-3)
    np.testing.assert_allclose(exe.grad_dict["fc_weight"], (prob - np.eye(3)[label]).T @ x, rtol=2e-2, atol=2e-2)


def test_cast_between_float32_parameters_and_a_float16_block():
    data = sym.Variable("data")
    half = sym.FullyConnected(sym.Cast(data, dtype="float16"), num_hidden=4, name="fc16")
    net = sym.FullyConnected(sym.Cast(half, dtype="float32"), num_hidden=2, name="fc32")
    arg_types, out_types, _ = net.infer_type(data="float32")
    types = dict(zip(net.list_arguments(), arg_types))
    assert types == {"data": np.float32, "fc16_weight": np.float16, "fc16_bias": np.float16,
                     "fc32_weight": np.float32, "fc32_bias": np.float32}
    exe = net.simple_bind("cpu", data=(3, 6))
    assert {n: a.dtype for n, a in exe.arg_dict.items()} == types
    exe.arg_dict["fc16_weight"][:] = 0.1
    exe.arg_dict["fc32_weight"][:] = 0.2
    exe.forward(is_train=True, data=np.ones((3, 6)))
    np.testing.assert_allclose(exe.outputs[0], np.full((3, 2), 0.2 * 4 * 0.6), rtol=1e-3)
    assert exe.outputs[0].dtype == np.float32
    exe.backward(np.ones((3, 2), np.float32))
    assert exe.grad_dict["fc16_weight"].dtype == np.float16
    np.testing.assert_allclose(exe.grad_dict["fc16_weight"], np.full((4, 6), 3 * 0.4), rtol=1e-3)
    np.testing.assert_allclose(exe.grad_dict["data"], np.full((3, 6), 0.4 * 0.4), rtol=1e-2)


@pytest.mark.parametrize("id_type", ["int32", "int64"])
def test_embedding_takes_integer_ids_and_keeps_float_weights(id_type):
    ids = np.array([[0, 3], [3, 1]])
    net = sym.Embedding(sym.Variable("data"), input_dim=4, output_dim=2, name="emb")
    exe = net.simple_bind("cpu", grad_req={"data": "null", "emb_weight": "write"}, data=ids.shape,
                          type_dict={"data": id_type})
    assert exe.arg_dict["data"].dtype == np.dtype(id_type)
    assert exe.arg_dict["emb_weight"].dtype == np.float32 and exe.outputs[0].dtype == np.float32
    weight = np.arange(8, dtype=np.float32).reshape(4, 2)
    exe.arg_dict["emb_weight"][:] = weight
    out = exe.forward(is_train=True, data=ids)[0]
    np.testing.assert_array_equal(out, weight[ids])
    exe.backward(np.ones((2, 2, 2), np.float32))
    np.testing.assert_array_equal(exe.grad_dict["emb_weight"], [[1, 1], [1, 1], [0, 0], [2, 2]])


def test_embedding_weight_type_wins_over_its_dtype_parameter():
    # MXNet's EmbeddingOpType: a known weight type decides; ``dtype`` only when nothing else does
    net = sym.Embedding(sym.Variable("data"), input_dim=4, output_dim=2, name="emb")
    types = dict(zip(net.list_arguments(), net.infer_type(data="int64", emb_weight="float64")[0]))
    assert types == {"data": np.int64, "emb_weight": np.float64}
    assert net.infer_type(data="int64")[1] == [np.float32]


def test_bind_of_arrays_whose_types_an_op_cannot_mix_names_the_op_and_input():
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=2, name="fc")
    arrays = {"data": np.ones((1, 3)), "fc_weight": np.ones((2, 3), np.float32), "fc_bias": np.zeros(2, np.float32)}
    with pytest.raises(ConfigError, match=r"FullyConnected 'fc'.*float"):
        net.bind("cpu", arrays)


def test_variable_dtype_is_stored_as_mxnet_s_type_code():
    x = sym.Variable("x", dtype="float16")
    node = json.loads(x.tojson())["nodes"][0]
    assert node["attrs"]["__dtype__"] == "2"
    assert sym.load_json(x.tojson()).infer_type()[0] == [np.float16]
    old = {"nodes": [{"op": "null", "name": "x", "attrs": {"__dtype__": "<class 'numpy.int32'>"}, "inputs": []}],
           "arg_nodes": [0], "heads": [[0, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}}
    assert sym.load_json(json.dumps(old)).infer_type()[0] == [np.int32]


def test_pick_and_where_take_integer_indices_and_conditions():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    exe = sym.pick(sym.Variable("data"), sym.Variable("index"), axis=1).bind(
        "cpu", {"data": data, "index": np.array([2, 0], np.int64)}, args_grad={"data": np.zeros_like(data)})
    out = exe.forward(is_train=True)[0]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [2, 3])
    exe.backward(np.ones(2, np.float32))
    np.testing.assert_array_equal(exe.grad_dict["data"], [[0, 0, 1], [1, 0, 0]])
    cond = np.array([[1, 0, 1], [0, 0, 1]], np.int32)
    where = sym.where(sym.Variable("c"), sym.Variable("x"), sym.Variable("y"))
    got = where.bind("cpu", {"c": cond, "x": data, "y": -data}).forward()[0]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.where(cond, data, -data))

"""Ports of Apache MXNet 1.9.1 tests/python/unittest/test_symbol.py (and test_attr.py's basic case),
written anew against sparkps with MXNet's expected values. Each test names the MXNet test it ports."""
import copy
import pickle

import numpy as np
import pytest

import sparkps.symbol as sym
from sparkps.errors import ConfigError


def mlp2():
    data = sym.Variable("data")
    out = sym.FullyConnected(data=data, name="fc1", num_hidden=1000)
    out = sym.Activation(data=out, act_type="relu")
    return sym.FullyConnected(data=out, name="fc2", num_hidden=10)


def conv():
    data = sym.Variable("data")
    conv1 = sym.Convolution(data=data, name="conv1", num_filter=32, kernel=(3, 3), stride=(2, 2))
    bn1 = sym.BatchNorm(data=conv1, name="bn1")
    act1 = sym.Activation(data=bn1, name="relu1", act_type="relu")
    mp1 = sym.Pooling(data=act1, name="mp1", kernel=(2, 2), stride=(2, 2), pool_type="max")
    fl = sym.Flatten(data=mp1, name="flatten")
    fc2 = sym.FullyConnected(data=fl, name="fc2", num_hidden=10)
    return sym.SoftmaxOutput(data=fc2, name="sm")


def test_symbol_basic():
    # MXNet: test_symbol_basic
    m = mlp2()
    assert m.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    assert m.list_outputs() == ["fc2_output"]


def test_symbol_bool():
    # MXNet: test_symbol_bool (NotImplementedForSymbol there, ConfigError here)
    with pytest.raises(ConfigError):
        bool(sym.Variable("x"))


def test_symbol_compose():
    # MXNet: test_symbol_compose
    data = sym.Variable("data")
    net1 = sym.FullyConnected(data=data, name="fc1", num_hidden=10)
    net1 = sym.FullyConnected(data=net1, name="fc2", num_hidden=100)
    assert net1.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    net2 = sym.FullyConnected(name="fc3", num_hidden=10)
    net2 = sym.Activation(data=net2, act_type="relu")
    net2 = sym.FullyConnected(data=net2, name="fc4", num_hidden=20)
    composed = net2(fc3_data=net1, name="composed")
    multi_out = sym.Group([composed, net1])
    assert len(multi_out.list_outputs()) == 2
    assert len(multi_out) == 2


def test_symbol_copy():
    # MXNet: test_symbol_copy
    data = sym.Variable("data")
    assert copy.deepcopy(data).tojson() == data.tojson()
    assert copy.copy(data).tojson() == data.tojson()


def test_symbol_internal():
    # MXNet: test_symbol_internal
    data = sym.Variable("data")
    oldfc = sym.FullyConnected(data=data, name="fc1", num_hidden=10)
    net1 = sym.FullyConnected(data=oldfc, name="fc2", num_hidden=100)
    assert net1.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    fc1 = net1.get_internals()["fc1_output"]
    assert fc1.list_arguments() == oldfc.list_arguments()


def test_symbol_children():
    # MXNet: test_symbol_children
    data = sym.Variable("data")
    oldfc = sym.FullyConnected(data=data, name="fc1", num_hidden=10)
    net1 = sym.FullyConnected(data=oldfc, name="fc2", num_hidden=100)
    assert net1.get_children().list_outputs() == ["fc1_output", "fc2_weight", "fc2_bias"]
    assert len(net1.get_children()) == 3
    assert net1.get_children().get_children().list_outputs() == ["data", "fc1_weight", "fc1_bias"]
    assert len(net1.get_children().get_children()) == 3
    assert net1.get_children()["fc2_weight"].list_arguments() == ["fc2_weight"]
    assert net1.get_children()["fc2_weight"].get_children() is None
    sliced = sym.SliceChannel(sym.Variable("data"), num_outputs=3, name="slice")
    concat = sym.Concat(*list(sliced))
    assert concat.get_children().list_outputs() == ["slice_output0", "slice_output1", "slice_output2"]
    assert sliced.get_children().list_outputs() == ["data"]


def test_symbol_pickle():
    # MXNet: test_symbol_pickle
    mlist = [mlp2(), conv()]
    for x, y in zip(mlist, pickle.loads(pickle.dumps(mlist))):
        assert x.tojson() == y.tojson()


def test_symbol_saveload(tmp_path):
    # MXNet: test_symbol_saveload
    net = mlp2()
    net.save(str(tmp_path / "tmp_sym.json"))
    assert sym.load(str(tmp_path / "tmp_sym.json")).tojson() == net.tojson()


def test_symbol_infer_type():
    # MXNet: test_symbol_infer_type
    data = sym.Variable("data")
    f32data = sym.Cast(data=data, dtype="float32")
    fc1 = sym.FullyConnected(data=f32data, name="fc1", num_hidden=128)
    mlp = sym.SoftmaxOutput(data=fc1, name="softmax")
    arg, out, aux = mlp.infer_type(data=np.float16)
    assert arg == [np.float16, np.float32, np.float32, np.float32]
    assert out == [np.float32] and aux == []
    arg, out, aux = mlp.infer_type_partial()
    assert arg == [None, np.float32, np.float32, np.float32]
    assert out == [np.float32] and aux == []


def test_symbol_infer_shape():
    # MXNet: test_symbol_infer_shape
    data, prev = sym.Variable("data"), sym.Variable("prevstate")
    x2h = sym.FullyConnected(data=data, name="x2h", num_hidden=128)
    h2h = sym.FullyConnected(data=prev, name="h2h", num_hidden=128)
    out = sym.Activation(data=sym.elemwise_add(x2h, h2h), name="out", act_type="relu")
    assert out.infer_shape(data=(10, 64)) == (None, None, None)
    arg, out_shapes, _ = out.infer_shape_partial(data=(10, 64))
    shapes = dict(zip(out.list_arguments(), arg))
    assert shapes["data"] == (10, 64) and shapes["x2h_weight"] == (128, 64)
    assert shapes["h2h_weight"] is None                          # MXNet: ()
    arg, _, _ = out.infer_shape(data=(10, 64), prevstate=out_shapes[0])
    shapes = dict(zip(out.list_arguments(), arg))
    assert shapes["h2h_weight"] == (128, 128)
    data = sym.Variable("data", shape=(1, 0, 0, 0))
    test = sym.Convolution(data=sym.cast(data, dtype="float16"), weight=sym.cast(sym.Variable("weight"),
                                                                                  dtype="float16"),
                           pad=(3, 3), num_filter=64, stride=(2, 2), no_bias=True, kernel=(7, 7))
    shapes = dict(zip(test.list_arguments(), test.infer_shape_partial()[0]))
    assert shapes["data"] == (1, 0, 0, 0) and shapes["weight"] == (64, 0, 7, 7)


def test_symbol_infer_shape_var():
    # MXNet: test_symbol_infer_shape_var
    a = sym.Variable("a", shape=(2, 3))
    c = sym.elemwise_add(a, sym.Variable("b"))
    arg_shapes, out_shapes, _ = c.infer_shape()
    assert arg_shapes == [(2, 3), (2, 3)] and out_shapes == [(2, 3)]
    arg_shapes, out_shapes, _ = c.infer_shape(a=(5, 6))
    assert arg_shapes == [(5, 6), (5, 6)] and out_shapes == [(5, 6)]


def test_symbol_magic_abs():
    # MXNet: test_symbol_magic_abs
    data = sym.Variable("data")
    x = np.random.default_rng(0).normal(size=(2, 3, 4))
    results = [s.eval(data=x)[0] for s in (data.abs(name="abs0"), abs(data), sym.abs(data, name="abs0"))]
    for r in results:
        np.testing.assert_allclose(r, np.abs(x), rtol=1e-7)


@pytest.mark.parametrize("func,kwargs,shape", [
    ("flatten", {}, (5, 17, 1)), ("norm", {}, (5, 17, 1)), ("round", {}, (5, 17, 1)), ("rint", {}, (5, 17, 1)),
    ("fix", {}, (5, 17, 1)), ("floor", {}, (5, 17, 1)), ("ceil", {}, (5, 17, 1)), ("trunc", {}, (5, 17, 1)),
    ("zeros_like", {}, (5, 17, 1)), ("ones_like", {}, (5, 17, 1)), ("abs", {}, (5, 17, 1)),
    ("sign", {}, (5, 17, 1)), ("sin", {}, (5, 17, 1)), ("cos", {}, (5, 17, 1)), ("exp", {}, (5, 17, 1)),
    ("expm1", {}, (5, 17, 1)), ("square", {}, (5, 17, 1)), ("reciprocal", {}, (5, 17, 1)),
    ("tanh", {}, (5, 17, 1)), ("log", {}, (5, 17, 1)), ("log10", {}, (5, 17, 1)), ("log2", {}, (5, 17, 1)),
    ("log1p", {}, (5, 17, 1)), ("sqrt", {}, (5, 17, 1)), ("rsqrt", {}, (5, 17, 1)), ("cbrt", {}, (5, 17, 1)),
    ("relu", {}, (5, 17, 1)), ("sigmoid", {}, (5, 17, 1)), ("softmax", {}, (5, 17, 1)),
    ("log_softmax", {}, (5, 17, 1)), ("expand_dims", {"axis": 1}, (5, 17, 1)), ("flip", {"axis": 1}, (5, 17, 1)),
    ("transpose", {"axes": (1, 0, 2)}, (5, 17, 1)), ("split", {"axis": 2, "num_outputs": 3}, (5, 17, 6)),
    ("slice_axis", {"axis": 1, "begin": 5, "end": 7}, (5, 17, 1)), ("clip", {"a_min": 0.25, "a_max": 0.75},
                                                                   (5, 17, 1)),
    ("broadcast_axes", {"axis": (2,), "size": (5,)}, (5, 17, 1)),
    ("sum", {"axis": (1, 2)}, (5, 17, 1)), ("nansum", {"axis": (1, 2)}, (5, 17, 1)),
    ("prod", {"axis": (1, 2)}, (5, 17, 1)), ("nanprod", {"axis": (1, 2)}, (5, 17, 1)),
    ("mean", {"axis": (1, 2)}, (5, 17, 1)), ("max", {"axis": (1, 2)}, (5, 17, 1)),
    ("min", {"axis": (1, 2)}, (5, 17, 1)), ("norm", {"axis": (1, 2)}, (5, 17, 1)),
    ("reshape", {"shape": (17, 1, 5)}, (5, 17, 1)), ("broadcast_to", {"shape": (5, 17, 47)}, (5, 17, 1)),
    ("squeeze", {"axis": (1, 3)}, (2, 1, 3, 1, 4)), ("squeeze", {}, (2, 1, 3, 1, 4)),
])
def test_symbol_fluent(func, kwargs, shape):
    # MXNet: test_symbol_fluent (each case it checks whose op sparkps has)
    data = sym.Variable("data")
    regular = getattr(sym, func)(data, name=func + "0", **kwargs)
    fluent = getattr(data, func)(**kwargs)
    assert regular.list_arguments() == fluent.list_arguments()
    assert regular.list_outputs() == fluent.list_outputs()
    x = np.random.default_rng(1).uniform(0.1, 1.0, size=shape)
    for a, b in zip(regular.eval(data=x), fluent.eval(data=x)):
        np.testing.assert_array_equal(a, b)
        assert a.shape == b.shape


def test_blockgrad():
    # MXNet: test_blockgrad
    a = sym.Variable("a")
    exe = sym.BlockGrad(2 * a).simple_bind("cpu", a=(10, 10))
    exe.forward(is_train=True, a=np.ones((10, 10)))
    exe.backward(np.ones((10, 10)))
    assert not exe.grad_dict["a"].any()


def test_simple_bind_incomplete_shape_inference_in_one_forward_pass():
    # MXNet: test_simple_bind_incomplete_shape_inference_in_one_forward_pass
    data = sym.Variable("data")
    fc = sym.FullyConnected(data=data, num_hidden=1, no_bias=True, name="fc")
    modified_weight = sym.abs(fc.get_internals()["fc_weight"])
    net = sym.sum(modified_weight) + sym.sum(fc)
    exe = net.simple_bind("cpu", data=(5, 13))
    assert exe.arg_dict["fc_weight"].shape == (1, 13)      # inferred from data in the one pass
    weight = np.linspace(-1, 1, 13, dtype=np.float32).reshape(1, 13)
    data = np.arange(65, dtype=np.float32).reshape(5, 13) / 65
    exe.arg_dict["fc_weight"][:] = weight
    out = exe.forward(data=data)[0]
    np.testing.assert_allclose(np.asarray(out).reshape(-1), [np.abs(weight).sum() + (data @ weight.T).sum()],
                               rtol=1e-5)


def test_simple_bind_gradient_graph_possible_with_cycle():
    # MXNet: test_simple_bind_gradient_graph_possible_with_cycle
    data = sym.Variable("data")
    res = data + data + data + data + data + data + data + data
    exe = res.simple_bind("cpu", data=(1,))
    exe.forward(is_train=True, data=np.ones(1))
    exe.backward(np.ones(1))
    assert exe.grad_dict["data"][0] == 8


def test_children_same_name():
    # MXNet: test_children_same_name
    a = sym.Variable("data")
    assert [c.name for c in (a + a).get_children()] == ["data", "data"]


@pytest.mark.parametrize("dim", range(1, 7))
def test_transpose_nullop(dim):
    # MXNet: test_transpose_nullop
    rng = np.random.default_rng(dim)
    b = sym.transpose(sym.Variable("a"), axes=tuple(rng.permutation(dim)))
    c = sym.zeros_like(b)
    x = rng.normal(size=tuple(rng.integers(1, 4, size=dim)))
    np.testing.assert_array_equal(c.eval(a=x)[0], np.zeros_like(b.eval(a=x)[0]))


def test_attr_basic():
    # MXNet test_attr.py: test_attr_basic
    with sym.AttrScope(group="4", data="great"):
        data = sym.Variable("data", attr={"dtype": "data", "group": "1", "force_mirroring": "True"}, lr_mult=1)
        gdata = sym.Variable("data2")
    assert gdata.attr("group") == "4"
    assert data.attr("group") == "1"
    assert data.attr("lr_mult") == "1" and data.attr("__lr_mult__") == "1"
    assert data.attr("force_mirroring") == "True" and data.attr("__force_mirroring__") == "True"
    data2 = pickle.loads(pickle.dumps(data))
    assert data.attr("dtype") == data2.attr("dtype")


def _as_mxnet_0_8(net):
    """``net``'s JSON in MXNet 0.8's layout: parameters under "param", attributes under "attr" with
    the legacy key names (lr_mult, not __lr_mult__), two-element entries, no auxiliary inputs and no
    mxnet_version (the layout of MXNet's own save_000800.json)."""
    import json
    doc = json.loads(net.tojson())
    keep = [i for i, n in enumerate(doc["nodes"]) if not n["name"].endswith(("_moving_mean", "_moving_var"))]
    index = {old: new for new, old in enumerate(keep)}
    nodes = []
    for i in keep:
        node = doc["nodes"][i]
        attrs = node.get("attrs", {})
        user = {k.strip("_"): v for k, v in attrs.items() if k.startswith("__")}
        param = {k: v for k, v in attrs.items() if not k.startswith("__")}
        nodes.append({"op": node["op"], "param": param, "name": node["name"], "backward_source_id": -1,
                      "attr": user, "inputs": [[index[a], b] for a, b, _ in node["inputs"] if a in index]})
    return json.dumps({"nodes": nodes, "arg_nodes": [index[a] for a in doc["arg_nodes"] if a in index],
                       "heads": [[index[a], b] for a, b, _ in doc["heads"]]})


def test_load_000800():
    # MXNet 1.0 test_symbol.py: test_load_000800 (its network; the 0.8 document is written here from it.
    # MXNet's own save_000800.json loads with the same result.)
    with sym.AttrScope(ctx_group="stage1"):
        data = sym.Variable("data", lr_mult=0.2)
        weight = sym.Variable(name="fc1_weight", lr_mult=1.2)
        fc1 = sym.FullyConnected(data=data, weight=weight, name="fc1", num_hidden=128, wd_mult=0.3)
        act1 = sym.Activation(data=fc1, name="relu1", act_type="relu")
    with sym.AttrScope(ctx_group="stage2"):
        fc2 = sym.FullyConnected(data=act1, name="fc2", num_hidden=64, lr_mult=0.01)
        act2 = sym.Activation(data=fc2, name="relu2", act_type="relu")
        fc3 = sym.BatchNorm(sym.FullyConnected(data=act2, name="fc3", num_hidden=10), name="batchnorm0")
        sym1 = sym.SoftmaxOutput(data=fc3, name="softmax")
    sym2 = sym.load_json(_as_mxnet_0_8(sym1))
    attr1, attr2 = sym1.attr_dict(), sym2.attr_dict()
    for k, v1 in attr1.items():
        assert k in attr2, k
        for kk, vv1 in v1.items():
            if kk.startswith("__") and kk.endswith("__"):
                assert attr2[k].get(kk) == vv1, (k, kk)
    assert sym1.list_arguments() == sym2.list_arguments()
    assert sym1.list_auxiliary_states() == sym2.list_auxiliary_states()
    x = np.random.default_rng(0).normal(size=(1, 200))
    exes = [s.simple_bind("cpu", data=(1, 200), dtype="float64") for s in (sym1, sym2)]
    for name, array in exes[0].arg_dict.items():
        array[:] = np.random.default_rng(len(name)).normal(size=array.shape)
        exes[1].arg_dict[name][:] = array
    outs = [e.forward(is_train=False, data=x, softmax_label=np.zeros(1))[0] for e in exes]
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)


def test_zero_prop():
    # MXNet: test_zero_prop (buffers counted by the memory plan instead of debug_str's MB; smaller images)
    data = sym.Variable("data")
    for _ in range(10):
        data = data * data
    big = data.simple_bind("cpu", data=(10, 3, 16, 16)).num_buffers
    small1 = data.simple_bind("cpu", data=(10, 3, 16, 16), grad_req="null").num_buffers
    small2 = sym.stop_gradient(data).simple_bind("cpu", data=(10, 3, 16, 16)).num_buffers
    assert big > small2
    assert small1 == small2


def test_load_save_symbol(tmp_path):
    # MXNet: test_load_save_symbol (without numpy shape semantics, which sparkps does not have: 0 is an
    # unknown dimension, as in files written before MXNet 1.6)
    import json
    weight = sym.var("weight", shape=(128, 0))
    net_data = json.loads(sym.FullyConnected(sym.var("data"), weight, num_hidden=128).tojson())
    assert "attrs" in net_data and "is_np_shape" not in net_data["attrs"]
    fname = tmp_path / "test_sym.json"
    fname.write_text(json.dumps(net_data))
    net = sym.load(str(fname))
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=(10, 784))
    assert arg_shapes == [(10, 784), (128, 784), (128,)]
    assert out_shapes == [(10, 128)] and len(aux_shapes) == 0


def test_load_save_symbol_np_shape(tmp_path):
    # MXNet: test_load_save_symbol (the file written under np_shape(True): "is_np_shape" in its attrs, -1 for an
    # unknown dimension; sparkps reads it as its legacy 0 and refuses a zero-size dimension by the variable's name)
    import json
    weight = sym.var("weight", shape=(128, 0))
    net_data = json.loads(sym.FullyConnected(sym.var("data"), weight, num_hidden=128).tojson())
    net_data["attrs"]["is_np_shape"] = ["int", 1]
    for node in net_data["nodes"]:
        if node["name"] == "weight":
            node["attrs"]["__shape__"] = "(128, -1)"
    fname = tmp_path / "test_sym.json"
    fname.write_text(json.dumps(net_data))
    arg_shapes, out_shapes, _ = sym.load(str(fname)).infer_shape(data=(10, 784))
    assert arg_shapes == [(10, 784), (128, 784), (128,)] and out_shapes == [(10, 128)]
    net_data["nodes"][1]["attrs"]["__shape__"] = "(128, 0)"
    with pytest.raises(ConfigError, match="variable 'weight' has shape \\(128, 0\\) with a zero-size dimension"):
        sym.load_json(json.dumps(net_data))
    net_data["attrs"]["is_np_shape"] = ["int", 0]     # legacy semantics: 0 is unknown
    assert sym.load_json(json.dumps(net_data)).infer_shape(data=(10, 784))[0][1] == (128, 784)


def test_infershape_happens_for_all_ops_in_graph():
    # MXNet: test_infershape_happens_for_all_ops_in_graph
    from sparkps.errors import ShapeError
    v = sym.Variable("V")
    s3 = sym.transpose(v) + (sym.Variable("x") + v)
    with pytest.raises(ShapeError):
        s3.simple_bind("cpu", x=(2, 3), grad_req="null")


def test_zero_prop2():
    # MXNet: test_zero_prop2 (batch_take has no gradient: behind stop_gradient it binds, alone binding for
    # gradients fails; forward is given data here, where MXNet's arrays start at zero)
    x, idx = sym.Variable("x"), sym.Variable("idx")
    y = sym.batch_take(x, idx)
    z = sym.stop_gradient(y)
    exe = z.simple_bind("cpu", x=(10, 10), idx=(10,), type_dict={"x": np.float32, "idx": np.int32})
    assert exe.arg_dict["idx"].dtype == np.int32
    data = np.arange(100, dtype=np.float32).reshape(10, 10)
    out = exe.forward(x=data, idx=np.arange(10) - 1)[0]
    np.testing.assert_array_equal(out, data[np.arange(10), np.clip(np.arange(10) - 1, 0, 9)])
    exe.backward()
    with pytest.raises(ConfigError, match="batch_take .* has no gradient"):
        y.simple_bind("cpu", x=(10, 10), idx=(10,), type_dict={"x": np.float32, "idx": np.int32})

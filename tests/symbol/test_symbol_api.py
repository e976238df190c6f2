"""Symbol API: MXNet names, listing, attributes, shape inference and its errors, JSON round trip."""
import numpy as np
import pytest

import sparkps
import sparkps.symbol as sym
from sparkps.errors import ConfigError, ShapeError


def mlp():
    data = sym.Variable("data")
    net = sym.FullyConnected(data, num_hidden=128, name="fc1")
    net = sym.Activation(net, act_type="relu", name="relu1")
    net = sym.FullyConnected(net, num_hidden=10, name="fc2")
    return sym.SoftmaxOutput(net, name="softmax")


def test_argument_output_and_aux_names_follow_mxnet():
    net = mlp()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "softmax_label"]
    assert net.list_outputs() == ["softmax_output"]
    bn = sym.BatchNorm(sym.Variable("data"), name="bn1")
    assert bn.list_arguments() == ["data", "bn1_gamma", "bn1_beta"]
    assert bn.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    assert bn.list_outputs() == ["bn1_output"]


def test_automatic_names_count_per_graph_not_per_process():
    def build():
        net = sym.FullyConnected(sym.Variable("data"), num_hidden=4)
        net = sym.Activation(net, act_type="tanh")
        return sym.FullyConnected(net, num_hidden=2)
    first, second = build(), build()
    expected = ["data", "fullyconnected0_weight", "fullyconnected0_bias", "fullyconnected1_weight",
                "fullyconnected1_bias"]
    assert first.list_arguments() == expected
    assert second.list_arguments() == expected
    assert first.get_internals().list_outputs()[3:5] == ["fullyconnected0_output", "activation0_output"]


def test_joined_branches_get_distinct_automatic_names():
    data = sym.Variable("data")
    left, right = sym.FullyConnected(data, num_hidden=3), sym.FullyConnected(data, num_hidden=5)
    assert left.name == right.name == "fullyconnected0"   # built separately, each graph starts at 0
    joined = sym.Concat(left, right)
    assert joined.list_arguments() == ["data", "fullyconnected0_weight", "fullyconnected0_bias",
                                       "fullyconnected1_weight", "fullyconnected1_bias"]
    assert joined.name == "concat0"
    assert joined.infer_shape(data=(2, 7))[1] == [(2, 8)]


def test_internals_and_getitem_by_output_name():
    internals = mlp().get_internals()
    assert "relu1_output" in internals.list_outputs()
    relu = internals["relu1_output"]
    assert relu.list_outputs() == ["relu1_output"]
    assert relu.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    with pytest.raises(ConfigError, match="nope"):
        internals["nope"]


def test_group_lists_every_output():
    net = mlp()
    fc1 = net.get_internals()["fc1_output"]
    group = sym.Group([net, fc1])
    assert group.list_outputs() == ["softmax_output", "fc1_output"]
    _, out_shapes, _ = group.infer_shape(data=(5, 3))
    assert out_shapes == [(5, 10), (5, 128)]


def test_attributes():
    w = sym.Variable("w", lr_mult=0.1, attr={"group": "dense"})
    assert w.attr("__lr_mult__") == "0.1"
    assert w.list_attr() == {"__lr_mult__": "0.1", "group": "dense"}
    fc = sym.FullyConnected(sym.Variable("x"), weight=w, num_hidden=3, name="fc", attr={"ctx_group": "a"})
    assert fc.attr("num_hidden") == "3" and fc.attr("ctx_group") == "a"
    assert fc.attr_dict()["w"]["group"] == "dense"


def test_infer_shape_full_and_partial():
    net = mlp()
    args, outs, aux = net.infer_shape(data=(32, 784))
    assert dict(zip(net.list_arguments(), args)) == {
        "data": (32, 784), "fc1_weight": (128, 784), "fc1_bias": (128,), "fc2_weight": (10, 128),
        "fc2_bias": (10,), "softmax_label": (32,)}
    assert outs == [(32, 10)] and aux == []
    assert net.infer_shape() == (None, None, None)
    args, outs, _ = net.infer_shape_partial(fc2_weight=(10, 128))
    assert args[3] == (10, 128) and args[0] is None and outs == [None]


def test_variable_shape_attribute_seeds_inference():
    net = sym.FullyConnected(sym.Variable("data", shape=(4, 6)), num_hidden=2, name="fc")
    assert net.infer_shape()[0] == [(4, 6), (2, 6), (2,)]


def test_shape_mismatch_names_op_argument_and_shapes():
    net = mlp()
    with pytest.raises(ShapeError) as err:
        net.infer_shape(data=(32, 784), fc1_weight=(128, 100))
    text = str(err.value)
    assert "FullyConnected 'fc1'" in text and "fc1_weight" in text
    assert "(128, 100)" in text and "(128, 784)" in text


def test_elementwise_shape_mismatch_is_not_broadcast():
    a, b = sym.Variable("a"), sym.Variable("b")
    with pytest.raises(ShapeError, match=r"'b'.*\(1, 4\).*\(3, 4\)"):
        (a + b).infer_shape(a=(3, 4), b=(1, 4))


def test_concat_mismatch_names_inputs():
    a, b = sym.Variable("a"), sym.Variable("b")
    with pytest.raises(ShapeError, match="Concat 'concat0'.*'b'"):
        sym.Concat(a, b, dim=1).infer_shape(a=(2, 3), b=(4, 3))


def test_unknown_argument_in_infer_shape():
    with pytest.raises(ConfigError, match="'dat'"):
        mlp().infer_shape(dat=(1, 2))


def test_bad_op_parameters_name_the_op():
    with pytest.raises(ConfigError, match="Activation.*act_type"):
        sym.Activation(sym.Variable("x"), act_type="swish")
    with pytest.raises(ConfigError, match="FullyConnected.*num_hidden"):
        sym.FullyConnected(sym.Variable("x"))
    with pytest.raises(ConfigError, match="FullyConnected has no parameter 'hidden'"):
        sym.FullyConnected(sym.Variable("x"), hidden=3)


def test_json_round_trip_preserves_arguments_outputs_attributes_and_results(tmp_path):
    data = sym.Variable("data", lr_mult=2)
    net = sym.FullyConnected(data, num_hidden=6, name="fc1", attr={"ctx_group": "g"})
    net = sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = sym.Dropout(sym.LeakyReLU(net, slope=0.2), p=0.3)
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=3, name="fc2") * 0.5, name="softmax",
                            normalization="batch")
    path = tmp_path / "net.json"
    net.save(str(path))
    loaded = sym.load(str(path))
    assert loaded.list_arguments() == net.list_arguments()
    assert loaded.list_outputs() == net.list_outputs()
    assert loaded.list_auxiliary_states() == net.list_auxiliary_states()
    assert loaded.attr_dict() == net.attr_dict()
    assert loaded.tojson() == net.tojson()
    rng = np.random.default_rng(0)
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(4, 5))[0]))
    values = {k: rng.normal(size=s) for k, s in shapes.items()}
    values["softmax_label"] = np.array([0, 1, 2, 1.0])
    results = []
    for symbol in (net, loaded):
        exe = symbol.simple_bind("cpu", dtype="float64", **shapes)
        exe.forward(is_train=False, **values)
        results.append(exe.outputs[0].copy())
    np.testing.assert_array_equal(results[0], results[1])


def test_unknown_op_in_json_is_named():
    text = mlp().tojson().replace('"Activation"', '"Swishy"')
    with pytest.raises(ConfigError, match="unknown op 'Swishy'"):
        sym.load_json(text)


def test_malformed_json_is_a_config_error():
    with pytest.raises(ConfigError):
        sym.load_json("{not json")
    with pytest.raises(ConfigError):
        sym.load_json('{"nodes": [{"op": "null"}], "heads": [[0, 0, 0]]}')


def test_symbol_is_reachable_as_sparkps_sym():
    assert sparkps.sym.FullyConnected is sym.FullyConnected


def test_backward_graph_is_an_inspectable_symbol():
    grads = mlp().backward_graph(wrt=["fc1_weight", "fc2_bias"])
    assert len(grads.list_outputs()) == 2
    internal_ops = [s.name for s in grads.get_internals()]
    assert "softmax_backward_data" in internal_ops and "fc1_backward_weight" in internal_ops
    assert "fc1_backward_data" not in internal_ops         # nothing needs d(data)
    exe = grads.simple_bind("cpu", grad_req="null", data=(2, 3), softmax_label=(2,))
    assert exe.outputs[0].shape == (128, 3) and exe.outputs[1].shape == (10,)

"""Symbol-side behaviour MXNet scripts rely on: the bugs MXNet users hit (each with its case), Python
operators and fluent methods building ops, composition by calling a symbol, and AttrScope with
MXNet's hidden attribute keys."""
import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import check_gradients, run
from sparkps.errors import ConfigError

RNG = np.random.default_rng(11)
X = sym.var("x")


def test_elementwise_sum_of_one_input():
    _, (out,) = run(sym.ElementWiseSum(X), x=np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(out, np.arange(6.0).reshape(2, 3))


def test_dropout_of_probability_one_drops_everything_in_training():
    net = sym.Dropout(X, p=1.0)
    x = RNG.normal(size=(3, 4))
    _, (train,) = run(net, is_train=True, x=x)
    _, (infer,) = run(net, is_train=False, x=x)
    assert not train.any()
    np.testing.assert_array_equal(infer, x)
    exe = net.simple_bind("cpu", x=x.shape)
    exe.forward(is_train=True, x=x)
    exe.backward(np.ones_like(x))
    assert not exe.grad_dict["x"].any()


def test_backward_with_out_grads_when_nothing_needs_a_gradient():
    exe = (X * 2).simple_bind("cpu", grad_req="null", x=(2, 2))
    exe.forward(is_train=True, x=np.ones((2, 2)))
    exe.backward(np.ones((2, 2)))          # MXNet accepts it and does nothing
    assert exe.grad_dict == {}


def test_convolution_skips_a_none_bias_input():
    w = sym.var("w")
    net = sym.Convolution(X, w, None, kernel=(3, 3), num_filter=2, no_bias=True, name="conv")
    assert net.list_arguments() == ["x", "w"]


@pytest.mark.parametrize("axis", [1, -2])
def test_batchnorm_accepts_a_negative_axis(axis):
    net = sym.BatchNorm(X, axis=axis, fix_gamma=False, name="bn")
    args, outs, aux = net.infer_shape(x=(2, 3, 4))
    assert args[1] == (3,) and aux == [(3,), (3,)]
    x = RNG.normal(size=(2, 3, 4))
    exe, (out,) = run(net, is_train=True, x=x, bn_gamma=np.ones(3), bn_beta=np.zeros(3))
    mean, var = x.mean(axis=(0, 2), keepdims=True), x.var(axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)


def test_concat_accepts_a_negative_dim():
    y = sym.var("y")
    net = sym.Concat(X, y, dim=-1)
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 2))
    _, (out,) = run(net, x=a, y=b)
    np.testing.assert_array_equal(out, np.concatenate([a, b], axis=-1))
    check_gradients(net, {"x": a, "y": b}, ["x", "y"])


def test_a_symbol_has_no_truth_value():
    with pytest.raises(ConfigError, match="no truth value"):
        bool(X)
    with pytest.raises(ConfigError):
        if X + 1:
            pass


def test_power_modulo_and_comparisons_build_ops():
    x = RNG.uniform(0.5, 3.0, size=(2, 3))
    y = RNG.uniform(0.5, 3.0, size=(2, 3))
    yv = sym.var("y")
    cases = [(X ** 2, x ** 2), (2 ** X, 2 ** x), (X ** yv, x ** y), (X % 0.7, np.mod(x, 0.7)),
             (5 % X, np.mod(5, x)), (X % yv, np.mod(x, y)), (X > 1, (x > 1) * 1.0), (X >= yv, (x >= y) * 1.0),
             (X < yv, (x < y) * 1.0), (X <= 1.5, (x <= 1.5) * 1.0), (X == yv, (x == y) * 1.0),
             (X != 1, (x != 1) * 1.0), (abs(X - 2), np.abs(x - 2))]
    for net, expected in cases:
        feed = {"x": x, "y": y} if "y" in net.list_arguments() else {"x": x}
        _, (out,) = run(net, **feed)
        np.testing.assert_allclose(out, expected, rtol=1e-12)
    check_gradients(X ** yv, {"x": x, "y": y}, ["x", "y"])
    check_gradients(2 ** X, {"x": x}, ["x"])
    assert len({X, yv}) == 2            # symbols stay hashable by identity


def test_fluent_methods_match_the_functions():
    x = RNG.normal(size=(2, 3, 4))
    cases = [(X.reshape((0, -1)), x.reshape(2, 12)), (X.reshape(6, 4), x.reshape(6, 4)),
             (X.sum(axis=1), x.sum(axis=1)), (X.sum(1), x.sum(axis=1)), (X.mean(2, True), x.mean(2, keepdims=True)),
             (X.max(axis=(0, 2)), x.max(axis=(0, 2))), (X.transpose(axes=(2, 0, 1)), x.transpose(2, 0, 1)),
             (X.square(), x * x), (X.exp(), np.exp(x)), (X.abs().sqrt(), np.sqrt(np.abs(x))),
             (X.clip(-0.5, 0.5), np.clip(x, -0.5, 0.5)), (X.flatten(), x.reshape(2, 12)),
             (X.sigmoid(), 1 / (1 + np.exp(-x))), (X.norm(), np.sqrt((x * x).sum()).reshape(1))]
    for net, expected in cases:
        _, (out,) = run(net, x=x)
        np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_calling_a_symbol_composes_graphs():
    # MXNet test_symbol.py::test_compose
    data = sym.var("data")
    net1 = sym.FullyConnected(data, name="fc1", num_hidden=10)
    net1 = sym.FullyConnected(net1, name="fc2", num_hidden=100)
    net2 = sym.FullyConnected(sym.var("fc3_data"), name="fc3", num_hidden=10)
    net2 = sym.Activation(net2, act_type="relu")
    net2 = sym.FullyConnected(net2, name="fc4", num_hidden=20)
    composed = net2(fc3_data=net1, name="composed")
    assert composed.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
                                         "fc3_weight", "fc3_bias", "fc4_weight", "fc4_bias"]
    assert composed.name == "composed"
    assert net2.list_arguments()[0] == "fc3_data"          # the original is unchanged
    positional = net2(net1)
    assert positional.list_arguments() == composed.list_arguments()
    with pytest.raises(ConfigError, match="'nope' not an argument"):
        net2(nope=net1)


def test_attr_scope_and_hidden_keys():
    # MXNet test_attr.py::test_attr_basic
    with sym.AttrScope(group="4", data="great"):
        data = sym.Variable("data", attr={"dtype": "data", "group": "1", "force_mirroring": "True"}, lr_mult=1)
        gdata = sym.Variable("data2")
    assert gdata.attr("group") == "4"
    assert data.attr("group") == "1"
    assert data.attr("lr_mult") == "1" and data.attr("__lr_mult__") == "1"
    assert data.attr("force_mirroring") == "True" and data.attr("__force_mirroring__") == "True"
    assert sym.Variable("outside").attr("group") is None


def test_op_level_lr_mult_reaches_the_weights_it_creates():
    with sym.AttrScope(ctx_group="stage1"):
        fc = sym.FullyConnected(X, num_hidden=3, name="fc", attr={"lr_mult": "0.1", "wd_mult": "0"})
    attrs = fc.attr_dict()
    assert attrs["fc"]["__lr_mult__"] == "0.1"
    assert attrs["fc_weight"]["__lr_mult__"] == "0.1" and attrs["fc_bias"]["__wd_mult__"] == "0"
    assert attrs["fc_weight"]["__ctx_group__"] == "stage1"
    assert "__lr_mult__" not in attrs.get("x", {})


def test_op_level_multipliers_are_read_by_the_optimizer():
    import sparkps.optimizer as opt
    net = sym.FullyConnected(X, num_hidden=3, name="fc", lr_mult=0.1, wd_mult=0.0)
    net = sym.FullyConnected(net, num_hidden=2, name="out")
    names = net.list_arguments()[1:]
    optimizer = opt.create("sgd", learning_rate=1.0, wd=0.5, sym=net, param_idx2name=dict(enumerate(names)))
    assert optimizer.lr_mult == {0: 0.1, 1: 0.1}
    assert optimizer.wd_mult[0] == 0.0 and optimizer.wd_mult.get(2, 1.0) == 1.0

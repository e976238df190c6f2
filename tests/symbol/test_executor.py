"""Executor: composed networks end to end, shared inputs computed once, partial execution, memory
plan reuse, grad_req write/add, bind, and bad input at forward."""
import tracemalloc

import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import CONTEXTS, check_gradients, cross_entropy, softmax
from sparkps import backend
from sparkps.errors import ConfigError, DataError, ShapeError
from sparkps.symbol.graph import Node
from sparkps.symbol.op import Op
from sparkps.symbol.symbol import create

ACTS = {"relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh,
        "softrelu": lambda x: np.log1p(np.exp(x))}


def mlp(act_type="relu", hidden=(8, 6), classes=3):
    net = sym.Variable("data")
    for i, width in enumerate(hidden, start=1):
        net = sym.Activation(sym.FullyConnected(net, num_hidden=width, name="fc%d" % i), act_type=act_type,
                             name="act%d" % i)
    net = sym.FullyConnected(net, num_hidden=classes, name="out")
    return sym.SoftmaxOutput(net, name="softmax")


def random_params(net, rng, **shapes):
    arg_shapes, _, _ = net.infer_shape(**shapes)
    return {n: rng.normal(0, 0.5, s) for n, s in zip(net.list_arguments(), arg_shapes) if n not in shapes}


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("act_type", sorted(ACTS))
def test_mlp_forward_matches_numpy_and_gradients_check(ctx, act_type, digits):
    x, y = digits[0][:6].astype(np.float64), digits[1][:6].astype(np.float64)
    net = mlp(act_type, classes=10)
    params = random_params(net, np.random.default_rng(1), data=x.shape, softmax_label=y.shape)
    exe = net.simple_bind(ctx, dtype="float64", data=x.shape, softmax_label=y.shape)
    exe.copy_params_from(params)
    out = backend.asnumpy(exe.forward(is_train=False, data=x, softmax_label=y)[0])
    h = x
    for layer in ("fc1", "fc2"):
        h = ACTS[act_type](h @ params[layer + "_weight"].T + params[layer + "_bias"])
    np.testing.assert_allclose(out, softmax(h @ params["out_weight"].T + params["out_bias"]), rtol=1e-10)
    check_gradients(net, dict(params, data=x, softmax_label=y), ["fc1_weight", "fc2_bias", "out_weight", "data"],
                    objective=cross_entropy(y), ctx=ctx, max_points=10)


class CountingIdentity(Op):
    """Identity that counts its runs in ``runs[role]``; its gradient is another counting node."""
    name, hint = "_test_counting_identity", "counter"
    runs, role = None, "forward"

    def forward(self, rt, ins, outs, aux):
        self.runs[self.role] += 1
        rt.xp.copyto(outs[0], ins[0])

    def gradient(self, node, out_grads):
        grad = CountingIdentity()
        grad.runs, grad.role = self.runs, "backward"
        return [(Node(grad, node.name + "_backward", [out_grads[0]]), 0)]


def counting(symbol, runs, name):
    out = create(CountingIdentity, [symbol], {}, name, None)
    out.entries[0][0].op.runs = runs
    return out


def test_branches_sharing_an_input_compute_it_once():
    runs = {"forward": 0, "backward": 0}
    shared = counting(sym.Variable("data"), runs, "shared")
    left = sym.FullyConnected(shared, num_hidden=3, name="left")
    right = sym.FullyConnected(shared, num_hidden=2, name="right")
    net = sym.MakeLoss(sym.sum(sym.Concat(left, right, dim=1)))
    exe = net.simple_bind("cpu", grad_req="write", data=(4, 5))
    exe.forward(is_train=True, data=np.ones((4, 5)))
    exe.backward()
    assert runs == {"forward": 1, "backward": 1}
    assert [n.name for n in exe.forward_nodes].count("shared") == 1
    expected = exe.arg_dict["left_weight"].sum(axis=0) + exe.arg_dict["right_weight"].sum(axis=0)
    np.testing.assert_allclose(exe.grad_dict["data"], np.tile(expected, (4, 1)), rtol=1e-6)


def test_gradient_of_an_input_used_twice_is_summed():
    x = sym.Variable("x")
    check_gradients(x * x + x, {"x": np.linspace(-1, 1, 6).reshape(2, 3)}, ["x"])


def test_partial_execution_skips_nodes_nothing_requested_needs():
    runs = {"forward": 0, "backward": 0}
    data = sym.Variable("data")
    frozen = sym.FullyConnected(counting(data, runs, "frozen_input"), num_hidden=3, name="frozen")
    trained = sym.FullyConnected(data, num_hidden=3, name="trained")
    net = sym.SoftmaxOutput(frozen + trained, name="softmax")
    reqs = {n: ("write" if n.startswith("trained") else "null") for n in net.list_arguments()}
    exe = net.simple_bind("cpu", grad_req=reqs, data=(2, 4))
    exe.forward(is_train=True, data=np.ones((2, 4)), softmax_label=np.array([0, 1]))
    exe.backward()
    assert runs == {"forward": 1, "backward": 0}
    names = {n.name for n in exe.backward_nodes}
    assert {"trained_backward_weight", "trained_backward_bias"} <= names
    assert not names & {"frozen_backward_weight", "frozen_backward_data", "trained_backward_data",
                        "frozen_input_backward"}
    assert set(exe.grad_dict) == {"trained_weight", "trained_bias"}
    # forward pruning: binding one internal output runs only its ancestors
    branch = net.get_internals()["trained_output"]
    runs["forward"] = 0
    branch.simple_bind("cpu", grad_req="null", data=(2, 4)).forward(data=np.ones((2, 4)))
    assert runs["forward"] == 0


def test_memory_plan_reuses_intermediate_buffers():
    net = sym.Variable("data")
    for _ in range(10):
        net = sym.Activation(net, act_type="tanh")
    exe = net.simple_bind("cpu", grad_req="null", data=(8, 8))
    assert exe.num_buffers <= 3            # ten intermediate entries share a few buffers
    trained = net.simple_bind("cpu", grad_req="write", data=(8, 8))
    assert trained.num_buffers <= 12       # forward outputs live until backward reads them


def test_buffers_are_planned_once_and_reused_across_steps(digits):
    x, y = digits[0][:64], digits[1][:64].astype(np.float32)
    net = mlp("relu", hidden=(1024, 64), classes=10)
    reqs = {n: ("null" if n in ("data", "softmax_label") else "write") for n in net.list_arguments()}
    exe = net.simple_bind("cpu", grad_req=reqs, data=x.shape, softmax_label=y.shape)
    exe.copy_params_from(random_params(net, np.random.default_rng(0), data=x.shape, softmax_label=y.shape))
    ids = [id(a) for a in exe.outputs + exe.arg_arrays + [g for g in exe.grad_arrays if g is not None]]
    exe.forward(is_train=True, data=x, softmax_label=y)
    exe.backward()
    first = exe.grad_dict["fc1_weight"].copy()
    tracemalloc.start()
    for _ in range(3):
        exe.forward(is_train=True, data=x, softmax_label=y)
        exe.backward()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert ids == [id(a) for a in exe.outputs + exe.arg_arrays + [g for g in exe.grad_arrays if g is not None]]
    np.testing.assert_allclose(exe.grad_dict["fc1_weight"], first, rtol=1e-5)
    assert peak < exe.arg_dict["fc1_weight"].nbytes / 2   # no parameter-sized allocation per step


def test_grad_req_add_accumulates():
    net = mlp()
    shapes = {"data": (3, 4), "softmax_label": (3,)}
    feed = dict(random_params(net, np.random.default_rng(2), **shapes), data=np.ones((3, 4)),
                softmax_label=np.array([0, 1, 2]))
    write = net.simple_bind("cpu", grad_req="write", dtype="float64", **shapes)
    add = net.simple_bind("cpu", grad_req="add", dtype="float64", **shapes)
    for exe, steps in ((write, 1), (add, 2)):
        for _ in range(steps):
            exe.forward(is_train=True, **feed)
            exe.backward()
    for name in ("fc1_weight", "out_bias"):
        np.testing.assert_allclose(add.grad_dict[name], 2 * write.grad_dict[name], rtol=1e-12)


def test_bind_uses_the_given_arrays():
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=2, name="fc")
    args = {"data": np.ones((3, 4), np.float32), "fc_weight": np.ones((2, 4), np.float32),
            "fc_bias": np.zeros(2, np.float32)}
    grads = {"fc_weight": np.zeros((2, 4), np.float32)}
    exe = net.bind("cpu", args=args, args_grad=grads, grad_req={"fc_weight": "write"})
    np.testing.assert_array_equal(exe.forward()[0], np.full((3, 2), 4.0))
    exe.backward(out_grads=np.ones((3, 2), np.float32))
    assert exe.grad_dict["fc_weight"] is grads["fc_weight"]
    np.testing.assert_array_equal(grads["fc_weight"], np.full((2, 4), 3.0))
    args["fc_weight"][:] = 2                 # the executor reads the caller's arrays in place
    np.testing.assert_array_equal(exe.forward()[0], np.full((3, 2), 8.0))
    with pytest.raises(ConfigError, match="fc_bias"):
        net.bind("cpu", args={"data": args["data"], "fc_weight": args["fc_weight"]})


def test_forward_input_errors_name_the_input():
    exe = mlp().simple_bind("cpu", data=(2, 4), softmax_label=(2,))
    with pytest.raises(ShapeError, match=r"'data' has shape \(3, 4\).*\(2, 4\)"):
        exe.forward(data=np.ones((3, 4)))
    with pytest.raises(ShapeError, match="'data'"):
        exe.forward(data=np.ones(4))          # no silent broadcasting
    bad = np.ones((2, 4))
    bad[1, 2] = np.nan
    with pytest.raises(DataError, match="'data' holds NaN or inf.*index 6"):
        exe.forward(data=bad)
    with pytest.raises(DataError, match="'data'"):
        exe.forward(data=np.full((2, 4), np.inf))
    with pytest.raises(ConfigError, match="'labels'"):
        exe.forward(labels=np.ones(2))


def test_missing_input_at_forward_is_named():
    exe = mlp().simple_bind("cpu", data=(2, 4), softmax_label=(2,))
    with pytest.raises(DataError, match="'data' was never given"):
        exe.forward(is_train=False)
    exe.forward(is_train=False, data=np.ones((2, 4)))      # inference needs no label
    with pytest.raises(DataError, match="'softmax_label' was never given"):
        exe.forward(is_train=True)


def test_label_out_of_range_names_the_label():
    exe = mlp().simple_bind("cpu", data=(2, 4), softmax_label=(2,))
    with pytest.raises(DataError, match="SoftmaxOutput 'softmax'.*'softmax_label'.*3.*\\[0, 3\\)"):
        exe.forward(is_train=True, data=np.ones((2, 4)), softmax_label=np.array([0, 3]))
    with pytest.raises(DataError, match="softmax_label"):
        exe.forward(is_train=True, data=np.ones((2, 4)), softmax_label=np.array([-1, 0]))


def test_embedding_ids_out_of_range_name_the_input():
    net = sym.Embedding(sym.Variable("ids"), input_dim=4, output_dim=2, name="emb")
    exe = net.simple_bind("cpu", ids=(3,))
    with pytest.raises(DataError, match="Embedding 'emb'.*'ids'.*\\[0, 4\\)"):
        exe.forward(ids=np.array([0, 4, 1]))


def test_duplicate_argument_names_refuse_to_bind():
    x = sym.Variable("x")
    net = sym.FullyConnected(x, num_hidden=2, name="fc") + sym.FullyConnected(x, num_hidden=2, name="fc")
    with pytest.raises(ConfigError, match="'fc_weight'"):
        net.simple_bind("cpu", x=(1, 2))


def test_backward_with_out_grads_for_a_plain_output():
    x = sym.Variable("x")
    exe = (x * 3).simple_bind("cpu", dtype="float64", x=(2, 2))
    exe.forward(is_train=True, x=np.ones((2, 2)))
    exe.backward(out_grads=np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(exe.grad_dict["x"], [[3, 6], [9, 12]])
    exe.backward()                          # default head gradient: ones
    np.testing.assert_array_equal(exe.grad_dict["x"], np.full((2, 2), 3.0))
    with pytest.raises(ShapeError, match="out_grad"):
        exe.backward(out_grads=np.ones(3))


def test_simple_bind_reports_uninferable_arguments():
    net = sym.Variable("a") + sym.Variable("b")
    with pytest.raises(ShapeError, match="'a', 'b'"):
        net.simple_bind("cpu")


def test_nan_reaching_an_elementwise_op_is_named_before_it_runs():
    x = sym.Variable("x")
    net = sym.BatchNorm(x * 2, name="bn")
    exe = net.simple_bind("cpu", grad_req="null", x=(3, 2))
    bad = np.ones((3, 2))
    bad[2, 1] = np.inf
    with pytest.raises(DataError, match="'x' holds NaN or inf.*index 5"):
        exe.forward(is_train=True, x=bad)
    np.testing.assert_array_equal(exe.aux_dict["bn_moving_mean"], np.zeros(2))   # untouched


def test_nan_into_fully_connected_stops_before_later_ops_update_state():
    net = sym.BatchNorm(sym.FullyConnected(sym.Variable("data"), num_hidden=2, name="fc"), name="bn")
    exe = net.simple_bind("cpu", grad_req="null", data=(3, 4))
    exe.copy_params_from({"fc_weight": np.ones((2, 4)), "fc_bias": np.zeros(2)})
    bad = np.ones((3, 4))
    bad[1, 0] = np.nan
    with pytest.raises(DataError, match="'data' holds NaN or inf.*index 4"):
        exe.forward(is_train=True, data=bad)
    np.testing.assert_array_equal(exe.aux_dict["bn_moving_mean"], np.zeros(2))

"""Ports of Apache MXNet 1.9.1 tests/python/unittest/test_executor.py, written anew against sparkps
with MXNet's expected values, plus the executor calls MXNet scripts use (set_monitor_callback,
backward(out_grads, is_train)). Each test names the MXNet test it ports."""
import numpy as np
import pytest

import sparkps.symbol as sym
from sparkps.errors import ShapeError

RNG = np.random.default_rng(2)


def check_bind_with_uniform(uf, gf, dim, sf=None, lshape=None, rshape=None):
    shape = tuple(RNG.integers(1, int(1000 ** (1.0 / dim)), size=dim))
    lhs, rhs = sym.Variable("lhs"), sym.Variable("rhs")
    ret = sf(lhs, rhs) if sf is not None else uf(lhs, rhs)
    assert ret.list_arguments() == ["lhs", "rhs"]
    lshape = shape if lshape is None else lshape
    rshape = shape if rshape is None else rshape
    lhs_arr = RNG.uniform(-1, 1, lshape).astype(np.float32)
    rhs_arr = RNG.uniform(-1, 1, rshape).astype(np.float32)
    lhs_grad, rhs_grad = np.empty(lshape, np.float32), np.empty(rshape, np.float32)
    executor = ret.bind("cpu", args=[lhs_arr, rhs_arr], args_grad=[lhs_grad, rhs_grad])
    exec3 = ret.bind("cpu", args=[lhs_arr, rhs_arr])
    exec4 = ret.bind("cpu", args={"rhs": rhs_arr, "lhs": lhs_arr}, args_grad={"lhs": lhs_grad, "rhs": rhs_grad})
    executor.forward()
    exec3.forward()
    exec4.forward()
    out1 = uf(lhs_arr, rhs_arr)
    for exe in (executor, exec3, exec4):
        np.testing.assert_allclose(exe.outputs[0], out1, rtol=1e-5, atol=1e-5)
    out_grad = np.ones(executor.outputs[0].shape, np.float32)
    lhs_grad2, rhs_grad2 = gf(out_grad, lhs_arr, rhs_arr)
    executor.backward([out_grad])
    np.testing.assert_allclose(lhs_grad, lhs_grad2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rhs_grad, rhs_grad2, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_bind(dim):
    # MXNet: test_bind
    check_bind_with_uniform(lambda x, y: x + y, lambda g, x, y: (g, g), dim)
    check_bind_with_uniform(lambda x, y: x - y, lambda g, x, y: (g, -g), dim)
    check_bind_with_uniform(lambda x, y: x * y, lambda g, x, y: (y * g, x * g), dim)
    check_bind_with_uniform(lambda x, y: x / y, lambda g, x, y: (g / y, -x * g / (y ** 2)), dim)
    check_bind_with_uniform(lambda x, y: np.maximum(x, y), lambda g, x, y: (g * (x >= y), g * (y > x)), dim,
                            sf=sym.maximum)
    check_bind_with_uniform(lambda x, y: np.minimum(x, y), lambda g, x, y: (g * (x <= y), g * (y < x)), dim,
                            sf=sym.minimum)


def test_dot():
    # MXNet: test_dot
    for _ in range(3):
        s = tuple(RNG.integers(1, 200, size=3))
        check_bind_with_uniform(lambda x, y: np.dot(x, y), lambda g, x, y: (np.dot(g, y.T), np.dot(x.T, g)), 2,
                                lshape=(s[0], s[1]), rshape=(s[1], s[2]), sf=sym.dot)
        s = tuple(RNG.integers(1, 200, size=1))
        check_bind_with_uniform(lambda x, y: np.dot(x, y).reshape(1), lambda g, x, y: (g * y, g * x), 2,
                                lshape=(s[0],), rshape=(s[0],), sf=sym.dot)


def test_reshape():
    # MXNet: test_reshape
    x = sym.Variable("x")
    y = sym.FullyConnected(x, num_hidden=4)
    exe = y.simple_bind("cpu", x=(5, 4), grad_req="null")
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = np.ones((4, 4))
    exe.arg_arrays[2][:] = 0
    new_exe = exe.reshape(x=(3, 4))
    new_exe.forward(is_train=False)
    assert np.all(new_exe.outputs[0] == 4)
    exe.forward(is_train=False)
    assert np.all(exe.outputs[0] == 4)
    new_exe = exe.reshape(allow_up_sizing=True, x=(6, 4))
    new_exe.arg_arrays[0][:] = 0
    assert np.all(exe.arg_arrays[0] == 1)            # data is not shared
    assert np.all(new_exe.arg_arrays[1] == 1)        # the weight is
    assert new_exe.arg_arrays[1] is exe.arg_arrays[1]
    with pytest.raises(ShapeError, match="allow_up_sizing"):
        exe.reshape(x=(6, 4))


def test_reshape_needs_partial_shaping_when_a_parameter_changes():
    x = sym.Variable("x")
    y = sym.FullyConnected(x, num_hidden=4, flatten=False)
    exe = y.simple_bind("cpu", x=(5, 4), grad_req="null")
    with pytest.raises(ShapeError, match="partial_shaping"):
        exe.reshape(x=(5, 3))
    assert exe.reshape(partial_shaping=True, x=(5, 3)).arg_dict["fullyconnected0_weight"].shape == (4, 3)


def test_monitor_callback_sees_every_output():
    data = sym.Variable("data")
    net = sym.Activation(sym.FullyConnected(data, num_hidden=3, name="fc1"), act_type="relu", name="relu1")
    exe = net.simple_bind("cpu", data=(2, 4))
    seen = []
    exe.set_monitor_callback(lambda name, array: seen.append((name, array.shape)))
    exe.forward(data=np.ones((2, 4)))
    assert seen == [("fc1_output", (2, 3)), ("relu1_output", (2, 3))]
    seen.clear()
    exe.set_monitor_callback(lambda name, array: seen.append(name), monitor_all=True)
    exe.forward(data=np.ones((2, 4)))
    assert seen == ["fc1_data", "fc1_weight", "fc1_bias", "fc1_output", "relu1_data", "relu1_output"]


def test_backward_in_inference_mode_uses_moving_statistics():
    data = sym.Variable("data")
    net = sym.BatchNorm(data, fix_gamma=False, name="bn")
    exe = net.simple_bind("cpu", data=(4, 2), dtype="float64")
    exe.arg_dict["bn_gamma"][:] = 1
    exe.aux_dict["bn_moving_var"][:] = 4.0
    x = RNG.normal(size=(4, 2))
    exe.forward(is_train=False, data=x)
    exe.backward(np.ones((4, 2)), is_train=False)
    np.testing.assert_allclose(exe.grad_dict["data"], np.full((4, 2), 1 / np.sqrt(4.0 + 1e-3)))

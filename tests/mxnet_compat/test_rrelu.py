"""LeakyReLU(act_type='rrelu') as MXNet 1.9.1's src/operator/leaky_relu-inl.h computes it (MXNet's unit tests
have no rrelu case): in training each element draws a slope uniformly from [lower_bound, upper_bound) and
negative inputs are multiplied by it (the slopes are kept for the gradient, xelu_grad(output, mask)); at
inference the slope is (lower_bound + upper_bound) / 2."""
import json

import numpy as np
import pytest
from scipy import stats

from sparkps import symbol as sym

LOWER, UPPER = 0.2, 0.6


def bound(shape, **params):
    y = sym.LeakyReLU(data=sym.Variable("x"), act_type="rrelu", **params)
    return y, y.simple_bind("cpu", x=shape)


def negative_inputs(shape, seed=0):
    x = -np.random.default_rng(seed).uniform(0.5, 2.0, size=shape)
    x.flat[::3] *= -1                                        # a third of the elements positive
    return x


def test_inference_multiplies_negative_inputs_by_the_mean_slope():
    x = negative_inputs((4, 5))
    y, exe = bound(x.shape, lower_bound=LOWER, upper_bound=UPPER)
    out = exe.forward(is_train=False, x=x)[0]
    np.testing.assert_allclose(out, np.where(x > 0, x, (LOWER + UPPER) / 2 * x), rtol=1e-6)
    assert y.list_outputs() == ["leakyrelu0_output"]


def test_defaults_are_mxnet_s_bounds():
    x = negative_inputs((3, 3))
    _, exe = bound(x.shape)
    out = exe.forward(is_train=False, x=x)[0]
    np.testing.assert_allclose(out, np.where(x > 0, x, (0.125 + 0.334) / 2 * x), rtol=1e-6)


def test_training_slopes_are_uniform_on_the_bounds_and_differ_per_element():
    x = -np.ones((200, 100))
    _, exe = bound(x.shape, lower_bound=LOWER, upper_bound=UPPER)
    exe.seed(3)
    slopes = -exe.forward(is_train=True, x=x)[0].ravel()
    assert LOWER <= slopes.min() and slopes.max() < UPPER
    assert len(np.unique(slopes)) > 0.99 * slopes.size
    assert stats.kstest(slopes, stats.uniform(loc=LOWER, scale=UPPER - LOWER).cdf).pvalue > 1e-3
    again = -exe.forward(is_train=True, x=x)[0].ravel()
    assert not np.array_equal(slopes, again)                 # a new draw every forward pass


def test_positive_inputs_pass_unchanged_in_training():
    x = negative_inputs((6, 7))
    _, exe = bound(x.shape, lower_bound=LOWER, upper_bound=UPPER)
    out = exe.forward(is_train=True, x=x)[0]
    np.testing.assert_array_equal(out[x > 0], x[x > 0].astype(np.float32))


def test_gradient_reuses_the_slopes_of_the_forward_pass():
    x = negative_inputs((5, 8), seed=1)
    y = sym.LeakyReLU(data=sym.Variable("x"), act_type="rrelu", lower_bound=LOWER, upper_bound=UPPER)
    exe = y.bind("cpu", {"x": x}, args_grad={"x": np.zeros_like(x)})
    out = exe.forward(is_train=True)[0].copy()
    dy = np.random.default_rng(2).normal(size=x.shape)
    exe.backward([dy])
    slopes = np.where(x > 0, 1.0, out / x)
    np.testing.assert_allclose(exe.grad_dict["x"], dy * slopes, rtol=1e-10)


def test_rrelu_round_trips_through_json_and_infers_one_visible_output():
    y = sym.LeakyReLU(data=sym.Variable("data"), act_type="rrelu", lower_bound=0.1, upper_bound=0.2, name="act")
    again = sym.load_json(y.tojson())
    attrs = [n for n in json.loads(y.tojson())["nodes"] if n["op"] == "LeakyReLU"][0]["attrs"]
    assert attrs == {"act_type": "rrelu", "lower_bound": "0.1", "upper_bound": "0.2"}
    _, out_shapes, _ = again.infer_shape(data=(2, 3))
    assert out_shapes == [(2, 3)]
    assert again.list_outputs() == ["act_output"]


@pytest.mark.parametrize("act_type", ["leaky", "elu", "selu", "gelu", "prelu"])
def test_other_act_types_keep_one_output(act_type):
    kwargs = {"gamma": sym.Variable("g")} if act_type == "prelu" else {}
    y = sym.LeakyReLU(data=sym.Variable("x"), act_type=act_type, **kwargs)
    assert len(y.get_internals().list_outputs()) == (3 if act_type == "prelu" else 2)

"""Feature-cross ops (FM, NFM, PNN, DCN): forward against a plain pairwise loop in numpy, backward
against central differences, and shape errors that name the layer."""
import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import check_gradients, run
from sparkps.errors import ShapeError

RNG = np.random.default_rng(7)
E = RNG.normal(size=(5, 4, 3))     # 5 rows, 4 fields, 3 factors
data = sym.Variable("data")


def pairs(fields):
    return [(i, j) for i in range(fields) for j in range(i + 1, fields)]


def test_bi_inner_sum_cross_is_fm_second_order_term():
    net = sym.BiInnerSumCross(data, name="fm")
    _, (out,) = run(net, data=E)
    expected = np.array([[sum(row[i] @ row[j] for i, j in pairs(4))] for row in E])
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    check_gradients(net, {"data": E}, ["data"])


def test_bi_interaction_cross_is_nfm_pooling():
    net = sym.BiInteractionCross(data, name="nfm")
    _, (out,) = run(net, data=E)
    expected = np.array([sum(row[i] * row[j] for i, j in pairs(4)) for row in E])
    assert out.shape == (5, 3)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    check_gradients(net, {"data": E}, ["data"])


def test_bi_inner_cross_lists_every_pair_in_upper_triangle_order():
    net = sym.BiInnerCross(data, name="pnn")
    _, (out,) = run(net, data=E)
    expected = np.array([[row[i] @ row[j] for i, j in pairs(4)] for row in E])
    assert out.shape == (5, 6)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    check_gradients(net, {"data": E}, ["data"])


def test_cross_layer_is_dcn_formula():
    x0, xl = RNG.normal(size=(5, 6)), RNG.normal(size=(5, 6))
    w, b = RNG.normal(size=6), RNG.normal(size=6)
    net = sym.CrossLayer(data=data, x0=sym.Variable("x0"), name="cross")
    assert net.list_arguments() == ["data", "x0", "cross_weight", "cross_bias"]
    feed = {"data": xl, "x0": x0, "cross_weight": w, "cross_bias": b}
    _, (out,) = run(net, **feed)
    np.testing.assert_allclose(out, x0 * (xl @ w)[:, None] + b + xl, rtol=1e-12)
    check_gradients(net, feed, list(feed))


def test_stacked_cross_layers_share_x0_gradient():
    x0 = sym.Variable("x0")
    net = sym.CrossLayer(data=sym.CrossLayer(data=x0, x0=x0, name="c1"), x0=x0, name="c2")
    feed = {"x0": RNG.normal(size=(3, 4)), "c1_weight": RNG.normal(size=4), "c1_bias": RNG.normal(size=4),
            "c2_weight": RNG.normal(size=4), "c2_bias": RNG.normal(size=4)}
    check_gradients(net, feed, list(feed))


@pytest.mark.parametrize("make", [sym.BiInnerSumCross, sym.BiInteractionCross, sym.BiInnerCross])
def test_field_cross_names_layer_on_flat_input(make):
    net = make(data, name="layer7")
    with pytest.raises(ShapeError, match="layer7.*fields, factors"):
        net.infer_shape(data=(5, 12))


def test_cross_layer_names_mismatched_x0():
    net = sym.CrossLayer(data=data, x0=sym.Variable("x0"), name="cross2")
    with pytest.raises(ShapeError, match="cross2.*x0"):
        net.infer_shape(data=(5, 6), x0=(5, 7))

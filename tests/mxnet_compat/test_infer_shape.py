"""Ports of Apache MXNet 1.9.1 tests/python/unittest/test_infer_shape.py, written anew against
sparkps with MXNet's expected values. Each test names the MXNet test it ports. A shape MXNet
reports as () (nothing known) is None here."""
import numpy as np
import pytest

import sparkps.symbol as sym
from sparkps.errors import ShapeError


def mlp2():
    data = sym.Variable("data")
    out = sym.FullyConnected(data=data, name="fc1", num_hidden=1000)
    out = sym.Activation(data=out, act_type="relu")
    return sym.FullyConnected(data=out, name="fc2", num_hidden=10)


def _by_name(net, shapes):
    return dict(zip(net.list_arguments(), shapes))


def test_mlp2_infer_shape():
    # MXNet: test_mlp2_infer_shape
    out = mlp2()
    arg_shapes, out_shapes, _ = out.infer_shape(data=(100, 100))
    assert out_shapes == [(100, 10)]
    shapes = _by_name(out, arg_shapes)
    assert shapes["fc2_bias"] == (10,) and shapes["fc2_weight"] == (10, 1000)
    assert shapes["fc1_bias"] == (1000,) and shapes["fc1_weight"] == (1000, 100)


def test_mlp2_infer_error():
    # MXNet: test_mlp2_infer_error (MXNetError there, ShapeError here)
    with pytest.raises(ShapeError):
        mlp2().infer_shape(data=(100, 100), fc1_weight=(1, 100))


def test_incomplete_infer_elewise():
    # MXNet: test_incomplete_infer_elewise
    a = sym.Variable("a", shape=(0, 10))
    b = sym.Variable("b", shape=(12, 0))
    c = a + b
    shapes = _by_name(c, c.infer_shape()[0])
    assert shapes["a"] == (12, 10) and shapes["b"] == (12, 10)


def test_incomplete_infer_mlp():
    # MXNet: test_incomplete_infer_mlp
    a = sym.Variable("a", shape=(0, 10))
    b = sym.FullyConnected(data=a, num_hidden=21)
    c = sym.Variable("c", shape=(5, 0))
    d = b + c
    shapes = _by_name(d, d.infer_shape()[0])
    assert shapes["a"] == (5, 10) and shapes["c"] == (5, 21)


def test_incomplete_infer_slicechannel():
    # MXNet: test_incomplete_infer_slicechannel
    a = sym.Variable("a", shape=(0, 10))
    b = sym.SliceChannel(data=a, num_outputs=10, axis=1, squeeze_axis=True)
    c = sym.Variable("c", shape=(5,))
    d = b[1] + c
    assert _by_name(d, d.infer_shape()[0])["a"] == (5, 10)
    a = sym.Variable("a", shape=(0, 15, 0))
    b = sym.SliceChannel(data=a, num_outputs=3, squeeze_axis=False)
    c = sym.Variable("c", shape=(3, 5, 2))
    d = b[1] + c
    assert _by_name(d, d.infer_shape()[0])["a"] == (3, 15, 2)


def test_incomplete_infer_convolution():
    # MXNet: test_incomplete_infer_convolution
    a = sym.Variable("a", shape=(0, 10, 0, 0))
    b = sym.Convolution(data=a, num_filter=21, kernel=(3, 3), dilate=(1, 1), pad=(1, 1))
    c = sym.Variable("c", shape=(5, 21, 32, 32))
    d = b + c
    assert _by_name(d, d.infer_shape()[0])["a"] == (5, 10, 32, 32)


def test_incomplete_infer_concat():
    # MXNet: test_incomplete_infer_concat
    a = sym.Variable("a", shape=(0, 10))
    b = sym.Variable("b", shape=(0, 5))
    c = sym.Concat(a, b, num_args=2, dim=1)
    d = sym.Variable("d", shape=(2, 0))
    d = d + c
    shapes = _by_name(d, d.infer_shape()[0])
    assert shapes["a"] == (2, 10) and shapes["b"] == (2, 5) and shapes["d"] == (2, 15)


def test_fc_infer_type():
    # MXNet: test_fc_infer_type
    data = sym.Variable("data")
    out = sym.FullyConnected(data=data, name="fc1", num_hidden=1000)
    arg_types, out_types, _ = out.infer_type(data=np.float32)
    assert out_types == [np.float32]
    types = _by_name(out, arg_types)
    assert types["fc1_bias"] == np.float32 and types["fc1_weight"] == np.float32


def test_shape_completely_unknown():
    # MXNet: test_shape_completely_unknown (MXNet's () is None here)
    ret = sym.sin(sym.var("data"))
    arg_shapes, out_shapes, _ = ret.infer_shape_partial()
    assert arg_shapes[0] is None and out_shapes[0] is None


def test_dot_partial_shape():
    # MXNet: test_dot_partial_shape
    z = sym.dot(sym.Variable("x"), sym.Variable("y"))
    assert z.infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]


def test_batch_dot_partial_shape():
    # MXNet: test_batch_dot_partial_shape
    z = sym.batch_dot(sym.Variable("x"), sym.Variable("y"))
    assert z.infer_shape_partial(x=(0, 3, 4), y=(0, 4, 5))[1] == [(0, 3, 5)]
    assert z.infer_shape_partial(x=(0, 3, 4), y=(0, 0, 5))[1] == [None]


def test_embedding_partial_shape():
    # MXNet: test_embedding_partial_shape
    y = sym.Embedding(data=sym.Variable("x"), weight=sym.Variable("w"), input_dim=100, output_dim=10)
    assert y.infer_shape_partial(x=(0, 5), w=(100, 10))[1] == [(0, 5, 10)]


def test_transpose_partial_shape():
    # MXNet: test_transpose_partial_shape
    y = sym.transpose(sym.Variable("x"), axes=[0, 3, 2, 1])
    assert y.infer_shape_partial(x=(0, 3, 224, 224))[1] == [(0, 224, 224, 3)]


def test_pick_partial_shape():
    # MXNet: test_pick_partial_shape
    y = sym.pick(sym.Variable("x"), sym.Variable("index"), axis=1)
    assert y.infer_shape_partial(x=(0, 3, 3), index=(0, 3))[1] == [(0, 3)]


def test_where_partial_shape():
    # MXNet: test_where_partial_shape (it only checks that inference does not fail)
    where_op = sym.where(sym.Variable("cond"), sym.Variable("x"), sym.Variable("y"))
    assert where_op.infer_shape_partial(cond=(0, 2), x=(0, 2), y=(0, 2))[1] == [(0, 2)]


def test_backward_infer():
    # MXNet: test_backward_infer (the op is reached as MXNet's mx.symbol._internal one is, by its name)
    from sparkps.symbol.ops.constructors import constructor
    identity_with_attr_like_rhs = constructor("_identity_with_attr_like_rhs")
    w = sym.Variable("weight")
    wshift = sym.Variable("wshift", shape=(1,))
    data = sym.Variable("data")
    # broadcast add here, not being able to deduce shape correctly
    wt = sym.broadcast_add(w, wshift)
    # shape constraint, this is what enables backward shape inference
    wt = identity_with_attr_like_rhs(wt, w)
    net = sym.FullyConnected(data=data, weight=wt, num_hidden=11, no_bias=True)
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=(7, 100))
    arg_shape_dict = dict(zip(net.list_arguments(), arg_shapes))
    assert arg_shape_dict["weight"] == (11, 100)


def test_identity_with_attr_like_rhs_passes_lhs_and_its_gradient():
    from sparkps.symbol.ops.constructors import constructor
    net = constructor("_identity_with_attr_like_rhs")(sym.Variable("a"), sym.Variable("b"))
    a, b = np.arange(6.0).reshape(2, 3), np.zeros((2, 3))
    exe = net.bind("cpu", {"a": a, "b": b}, args_grad={"a": np.zeros((2, 3)), "b": np.ones((2, 3))})
    np.testing.assert_array_equal(exe.forward(is_train=True)[0], a)
    exe.backward(np.full((2, 3), 2.0))
    np.testing.assert_array_equal(exe.grad_dict["a"], np.full((2, 3), 2.0))
    np.testing.assert_array_equal(exe.grad_dict["b"], np.zeros((2, 3)))

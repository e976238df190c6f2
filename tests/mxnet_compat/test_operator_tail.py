"""Ports of Apache MXNet 1.9.1 tests/python/unittest/test_operator.py for Dropout's modes, SoftmaxOutput's
normalisations, BatchNorm_v1 and SpatialTransformer, written anew against sparkps with MXNet's expectations.
Each test names the MXNet test it ports; where sparkps differs on purpose (Dropout at p=1) the test says so."""
import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import CONTEXTS, check_gradients, run
from sparkps import backend

RNG = np.random.default_rng(26)


def _dropout_exe(ratio, shape, ctx="cpu", **kw):
    exe = sym.Dropout(sym.Variable("data"), p=ratio, **kw).simple_bind(ctx, data=shape)
    exe.arg_dict["data"][:] = 1
    return exe


def _out(exe, index=0):
    return backend.asnumpy(exe.outputs[index]).copy()


def check_dropout_ratio(ratio, shape, cudnn_off=True, ctx="cpu"):
    """MXNet's check_dropout_ratio, but for p=1: zeros where MXNet expects NaN (0 * 1/(1-p); docs/mxnet.md)."""
    max_value = 0.0 if ratio == 1 else 1 / (1 - ratio)
    min_value = 1.0 if ratio == 0 else 0.0
    exe = _dropout_exe(ratio, shape, ctx, cudnn_off=cudnn_off)
    exe.forward(is_train=True)
    out = _out(exe)
    assert np.isfinite(out).all()
    assert out.max() == pytest.approx(max_value) and out.min() == min_value
    if 0 < ratio < 1:                                  # the kept fraction is 1 - p (MXNet: within 0.01 of it)
        assert abs((out > 0).mean() - (1 - ratio)) < 0.02
    exe.backward([backend.get_array_module(ctx).ones(shape)])
    np.testing.assert_array_equal(backend.asnumpy(exe.grad_dict["data"]), out)   # the gradient is the mask
    exe.forward(is_train=False)                        # mode 'training': identity at inference
    np.testing.assert_array_equal(_out(exe), 1)
    always = _dropout_exe(ratio, shape, ctx, mode="always", cudnn_off=cudnn_off)
    for is_train in (True, False):                     # mode 'always': dropout at inference too
        always.forward(is_train=is_train)
        got = _out(always)
        assert got.max() == pytest.approx(max_value) and got.min() == min_value


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("cudnn_off", [True, False])
@pytest.mark.parametrize("ratio", [0.5, 0.0, 1.0, 0.75, 0.25])
def test_dropout(ratio, cudnn_off, ctx):
    # MXNet: test_dropout (check_dropout_ratio, the passthrough and check_dropout_axes parts)
    check_dropout_ratio(ratio, (10, 10, 10, 10), cudnn_off, ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (3,), (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (0, 1, 2)])
def test_dropout_axes(axes, ctx):
    # MXNet: test_dropout (check_dropout_axes, in training, where the axes matter)
    shape = (6, 5, 4, 3)
    exe = _dropout_exe(0.5, shape, ctx, axes=axes)
    exe.seed(1)
    exe.forward(is_train=True)
    out = _out(exe)
    for axis in axes:                                  # every slice along a shared axis is the same draw
        for i in range(1, shape[axis]):
            np.testing.assert_array_equal(np.take(out, i, axis=axis), np.take(out, 0, axis=axis))
    assert 0 < (out > 0).mean() < 1


def test_dropout_axes_out_of_range_is_one_shape_error():
    with pytest.raises(Exception, match="axes \\(4,\\) out of range"):
        _dropout_exe(0.5, (2, 3), axes=(4,))


def test_dropout_gradient_is_the_mask():
    data = sym.Variable("data")
    check_gradients(sym.Dropout(data, p=0.3, axes=(1,)), {"data": RNG.normal(size=(4, 5))}, ["data"])


def _softmaxoutput_normalization(multi_output, use_ignore, normalization, ctx):
    rng = np.random.default_rng([multi_output, use_ignore, ["null", "batch", "valid"].index(normalization)])
    grad_scale = rng.random()
    batch_size, num_labels, H, W = 8, 6, 3, 3
    ignore_label = int(rng.integers(0, num_labels)) if use_ignore else -1
    data_shape, label_shape = ((batch_size, num_labels, H, W), (batch_size, H, W)) if multi_output else \
        ((batch_size, num_labels), (batch_size,))
    data = rng.uniform(-1, 1, size=data_shape)
    label = rng.integers(0, num_labels, size=label_shape).astype(np.float64)
    kwargs = dict(grad_scale=grad_scale, normalization=normalization, multi_output=multi_output)
    if use_ignore:
        kwargs.update(use_ignore=True, ignore_label=ignore_label)
    net = sym.SoftmaxOutput(sym.Variable("data"), sym.Variable("label"), **kwargs)
    exe = net.simple_bind(ctx, grad_req={"data": "write", "label": "null"}, dtype="float64", data=data_shape,
                          label=label_shape)
    exe.forward(is_train=True, data=data, label=label)
    exe.backward()
    softmax_data = np.exp(data) / np.exp(data).sum(1, keepdims=True)
    np.testing.assert_allclose(backend.asnumpy(exe.outputs[0]), softmax_data, rtol=1e-10)
    one_hot_label = np.eye(num_labels)[label.astype(int)]
    if multi_output:
        one_hot_label = one_hot_label.transpose((0, 3, 1, 2))
    data_grad = softmax_data - one_hot_label
    if use_ignore:
        data_grad *= (label != ignore_label).reshape((batch_size, 1) + label_shape[1:])
    valid_cnt = 1
    if normalization == "batch":
        valid_cnt = batch_size
    elif normalization == "valid":
        valid_cnt = max(1, (label != ignore_label).sum())
    scale = grad_scale / valid_cnt
    if multi_output and normalization != "valid":
        scale /= H * W
    np.testing.assert_allclose(backend.asnumpy(exe.grad_dict["data"]), data_grad * scale, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("normalization", ["null", "batch", "valid"])
@pytest.mark.parametrize("use_ignore", [False, True])
@pytest.mark.parametrize("multi_output", [False, True])
def test_softmax_output_normalization(multi_output, use_ignore, normalization, ctx):
    # MXNet: test_softmax_output_normalization
    _softmaxoutput_normalization(multi_output, use_ignore, normalization, ctx)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("op", ["BatchNorm_v1", "BatchNorm"])
@pytest.mark.parametrize("fix_gamma, use_global_stats", [(True, False), (True, True), (False, False), (False, True)])
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 2, 2), (2, 8, 2, 2)])
def test_batchnorm_training(shape, fix_gamma, use_global_stats, op, ctx):
    # MXNet: test_batchnorm_training (check_batchnorm_training's BatchNorm_v1 and BatchNorm cases, dense storage)
    rng = np.random.default_rng(len(shape) * 10 + shape[1])
    gamma, beta = np.ones(shape[1]), np.ones(shape[1])
    gamma[1], beta[0] = 3, 3
    net = getattr(sym, op)(sym.Variable("data"), fix_gamma=fix_gamma, use_global_stats=use_global_stats,
                           name="bn")
    assert net.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    inputs = {"data": rng.normal(-0.1, 0.1, size=shape), "bn_gamma": gamma, "bn_beta": beta}
    grads = check_gradients(net, inputs, ["data", "bn_gamma", "bn_beta"], ctx=ctx, eps=1e-4, rtol=1e-4, atol=1e-6)
    if fix_gamma:
        assert not grads["bn_gamma"].any()


def test_batchnorm_v1_round_trips_through_json_under_its_name():
    net = sym.BatchNorm_v1(sym.Variable("data"), eps=1e-4, name="bn")
    assert '"op": "BatchNorm_v1"' in net.tojson()
    back = sym.load_json(net.tojson())
    x = RNG.normal(size=(4, 3))
    _, (a,) = run(net, is_train=True, data=x)
    _, (b,) = run(back, is_train=True, data=x)
    np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(a.mean(0), 0, atol=1e-12)   # fix_gamma: gamma = 1, beta = 0 after simple_bind


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("n, c", [(1, 1), (2, 3), (4, 2)])
@pytest.mark.parametrize("h, w", [(5, 5), (9, 13), (17, 9)])
def test_stn(n, c, h, w, ctx):
    # MXNet: test_stn (loc net of zero weights and bias (0.5, 0, 0, 0, 0.5, 0): the centre of the data, halved)
    data_shape = (n, c, h, w)
    target_shape = ((h + 1) // 2, (w + 1) // 2)
    data = sym.Variable("data")
    loc = sym.Convolution(data=data, kernel=(3, 3), pad=(1, 1), num_filter=2, name="loc_conv")
    loc = sym.FullyConnected(data=sym.Flatten(data=loc), num_hidden=6, name="loc_fc")
    stn = sym.SpatialTransformer(data=data, loc=loc, target_shape=target_shape, transform_type="affine",
                                 sampler_type="bilinear")
    arg_shapes, out_shapes, _ = stn.infer_shape(data=data_shape)
    assert out_shapes[0] == (n, c) + target_shape
    xp = backend.get_array_module(ctx)
    args = {"data": RNG.normal(0, 1, data_shape), "loc_conv_weight": np.zeros((2, c, 3, 3)),
            "loc_conv_bias": np.zeros(2), "loc_fc_weight": np.zeros((6, 2 * h * w)),
            "loc_fc_bias": np.array([0.5, 0, 0, 0, 0.5, 0])}
    args = {k: xp.asarray(v) for k, v in args.items()}
    grads = {k: xp.zeros(s) for k, s in zip(stn.list_arguments(), arg_shapes)}
    exe = stn.bind(ctx, args=args, args_grad=grads)
    exe.forward(is_train=True)
    centre = (slice(None), slice(None), slice(h // 4, h - h // 4), slice(w // 4, w - w // 4))
    np.testing.assert_allclose(backend.asnumpy(exe.outputs[0]), backend.asnumpy(args["data"])[centre],
                               rtol=1e-2, atol=1e-4)
    exe.backward([xp.ones(exe.outputs[0].shape)])
    np.testing.assert_allclose(backend.asnumpy(grads["data"])[centre], 1, rtol=1e-2, atol=1e-4)


def stn_reference(data, loc, target, out_grad):
    """A bilinear SpatialTransformer written point by point: (output, d data, d loc) for one (C, H, W) image, its
    six affine numbers and the output's gradient. Target x, y run over [-1, 1]; source x maps to pixel
    (x + 1) * (W - 1) / 2; a corner outside the image reads zero and receives nothing."""
    channels, height, width = data.shape
    out, ddata, dloc = np.zeros((channels,) + target), np.zeros(data.shape), np.zeros(6)
    for i, yt in enumerate(np.linspace(-1, 1, target[0])):
        for j, xt in enumerate(np.linspace(-1, 1, target[1])):
            px = (loc[0] * xt + loc[1] * yt + loc[2] + 1) * (width - 1) / 2
            py = (loc[3] * xt + loc[4] * yt + loc[5] + 1) * (height - 1) / 2
            x0, y0 = int(np.floor(px)), int(np.floor(py))
            fx, fy = px - x0, py - y0
            dpx = dpy = 0.0
            for yy, wy, sy in ((y0, 1 - fy, -1), (y0 + 1, fy, 1)):
                for xx, wx, sx in ((x0, 1 - fx, -1), (x0 + 1, fx, 1)):
                    if not (0 <= yy < height and 0 <= xx < width):
                        continue
                    out[:, i, j] += wx * wy * data[:, yy, xx]
                    ddata[:, yy, xx] += wx * wy * out_grad[:, i, j]
                    dpx += sx * wy * (out_grad[:, i, j] * data[:, yy, xx]).sum()
                    dpy += sy * wx * (out_grad[:, i, j] * data[:, yy, xx]).sum()
            dloc[:3] += dpx * (width - 1) / 2 * np.array([xt, yt, 1])
            dloc[3:] += dpy * (height - 1) / 2 * np.array([xt, yt, 1])
    return out, ddata, dloc


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_stn_valid_sampling(ctx):
    # MXNet: test_stn_valid_sampling (a slight rotation samples at the data's edges; nothing is read outside), on
    # random data (MXNet's zeros give zero for every value) and compared with a point-by-point reference
    stn = sym.SpatialTransformer(data=sym.Variable("data"), loc=sym.Variable("loc"), target_shape=(28, 28),
                                 transform_type="affine", sampler_type="bilinear")
    xp = backend.get_array_module(ctx)
    loc = np.array([[9.03887e-05, 1.00015, 0.00174931, 1.0003, 0.000311901, -0.000919065]])
    data = RNG.normal(size=(1, 1, 42, 42))
    out_grad = RNG.normal(size=(1, 1, 28, 28))
    exe = stn.simple_bind(ctx, data=(1, 1, 42, 42), loc=(1, 6))
    exe.forward(is_train=True, data=xp.asarray(data), loc=xp.asarray(loc))
    exe.backward(xp.asarray(out_grad))
    out, ddata, dloc = stn_reference(data[0], loc[0], (28, 28), out_grad[0])
    np.testing.assert_allclose(_out(exe), out[None], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(backend.asnumpy(exe.grad_dict["data"]), ddata[None], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(backend.asnumpy(exe.grad_dict["loc"]), dloc[None], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_stn_gradient_graph(ctx):
    # MXNet: test_stn (its numeric gradient check, on a random affine map that also samples outside the data)
    stn = sym.SpatialTransformer(sym.Variable("data"), sym.Variable("loc"), target_shape=(4, 5))
    loc = np.tile([1.1, 0.1, 0.05, -0.1, 0.9, 0.1], (2, 1)) + RNG.normal(scale=0.1, size=(2, 6))
    check_gradients(stn, {"data": RNG.normal(size=(2, 3, 6, 7)), "loc": loc}, ["data", "loc"], ctx=ctx,
                    rtol=1e-4, atol=1e-6)


def test_stn_shapes_are_checked_by_name():
    stn = sym.SpatialTransformer(sym.Variable("data"), sym.Variable("loc"), target_shape=(4, 5), name="st")
    with pytest.raises(Exception, match="loc 'loc' must be \\(2, 6\\)"):
        stn.infer_shape(data=(2, 1, 6, 6), loc=(2, 4))
    with pytest.raises(Exception, match="target_shape must be \\(height, width\\)"):
        sym.SpatialTransformer(sym.Variable("data"), sym.Variable("loc"), target_shape=(4,))


def test_lenet_with_add_stn_trains_a_step():
    # MXNet example/image-classification/symbols/lenet.py with add_stn=True: binds, runs, and its gradients flow
    from sparkps.symbol.attribute import AttrScope
    data = sym.Variable("data")
    loc = sym.Convolution(data=data, num_filter=30, kernel=(5, 5), stride=(2, 2))
    loc = sym.Pooling(data=sym.Activation(data=loc, act_type="relu"), kernel=(2, 2), stride=(2, 2), pool_type="max")
    loc = sym.Convolution(data=loc, num_filter=60, kernel=(3, 3), stride=(1, 1), pad=(1, 1))
    loc = sym.Pooling(data=sym.Activation(data=loc, act_type="relu"), global_pool=True, kernel=(2, 2), pool_type="avg")
    with AttrScope(lr_mult="0.01"):
        loc = sym.FullyConnected(data=sym.Flatten(data=loc), num_hidden=6, name="stn_loc")
    net = sym.SpatialTransformer(data=data, loc=loc, target_shape=(28, 28), transform_type="affine",
                                 sampler_type="bilinear")
    net = sym.Convolution(data=net, kernel=(5, 5), num_filter=20)
    net = sym.Pooling(data=sym.Activation(data=net, act_type="tanh"), pool_type="max", kernel=(2, 2), stride=(2, 2))
    net = sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(net), num_hidden=10), name="softmax")
    exe = net.simple_bind("cpu", dtype="float64", data=(2, 1, 28, 28))
    for array in exe.arg_dict.values():
        array[...] = RNG.normal(scale=0.05, size=array.shape)
    exe.arg_dict["stn_loc_bias"][...] = [1, 0, 0, 0, 1, 0]
    exe.arg_dict["softmax_label"][...] = [3, 7]
    exe.forward(is_train=True)
    exe.backward()
    gradient = np.array(exe.grad_dict["stn_loc_weight"])
    assert np.abs(gradient).sum() > 0                   # it flows through the sampler into the loc net

    def loss():                                         # SoftmaxOutput's gradient is that of the cross-entropy
        exe.forward(is_train=True)
        return -np.log(np.asarray(exe.outputs[0])[[0, 1], [3, 7]]).sum()

    weight = exe.arg_dict["stn_loc_weight"]
    start, direction, step = np.array(weight), RNG.normal(size=gradient.shape), 1e-6
    weight[...] = start + step * direction
    above = loss()
    weight[...] = start - step * direction
    below = loss()
    weight[...] = start
    assert (above - below) / (2 * step) == pytest.approx((gradient * direction).sum(), rel=1e-4)
    assert sym.load_json(net.tojson()).list_arguments() == net.list_arguments()

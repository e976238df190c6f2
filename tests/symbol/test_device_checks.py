"""Input checks and SoftmaxOutput's gradient on every context: a batch fed from the host is checked on its host
copy (no wait for the device), one already on the device is checked there, and both name the input at fault; the
fused one-hot gradient equals (softmax - one-hot) * scale for every normalization."""
import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import CONTEXTS
from sparkps import backend
from sparkps.errors import DataError


def mlp(normalization="null"):
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=3, name="fc")
    return sym.SoftmaxOutput(net, name="softmax", normalization=normalization)


def bound(ctx, normalization="null"):
    exe = mlp(normalization).simple_bind(ctx, data=(4, 5), softmax_label=(4,))
    rng = np.random.default_rng(0)
    exe.copy_params_from({"fc_weight": rng.normal(size=(3, 5)).astype(np.float32),
                          "fc_bias": np.zeros(3, np.float32)})
    return exe


def on_device(exe, array):
    """The array on the executor's device (itself on cpu)."""
    return backend.get_array_module(exe.ctx).asarray(array)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("where", ["host", "device"])
def test_nan_batch_names_the_input_then_a_good_batch_trains(ctx, where):
    exe = bound(ctx)
    feed = (lambda a: a) if where == "host" else (lambda a: on_device(exe, a))
    bad = np.ones((4, 5), np.float32)
    bad[2, 3] = np.nan
    with pytest.raises(DataError, match="'data' holds NaN or inf.*index 13"):
        exe.forward(is_train=True, data=feed(bad), softmax_label=feed(np.zeros(4, np.float32)))
    exe.forward(is_train=True, data=feed(np.ones((4, 5), np.float32)), softmax_label=feed(np.zeros(4, np.float32)))
    exe.backward()
    fresh = bound(ctx)              # the refused batch left nothing behind: the gradient of a never-failed executor
    fresh.forward(is_train=True, data=np.ones((4, 5), np.float32), softmax_label=np.zeros(4, np.float32))
    fresh.backward()
    np.testing.assert_array_equal(backend.asnumpy(exe.grad_dict["fc_weight"]),
                                  backend.asnumpy(fresh.grad_dict["fc_weight"]))
    assert np.abs(backend.asnumpy(exe.grad_dict["fc_weight"])).sum() > 0


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_a_value_written_into_arg_dict_after_a_host_batch_is_still_checked(ctx):
    exe = bound(ctx)
    exe.forward(is_train=True, data=np.ones((4, 5), np.float32), softmax_label=np.zeros(4, np.float32))
    exe.arg_dict["data"][1, 1] = np.inf              # not fed through forward: the device-side check applies
    with pytest.raises(DataError, match="'data' holds NaN or inf"):
        exe.forward(is_train=True)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("where", ["host", "device"])
def test_label_out_of_range_is_named_on_every_context(ctx, where):
    exe = bound(ctx)
    label = np.array([0, 1, 3, 2], np.float32)
    with pytest.raises(DataError, match="SoftmaxOutput 'softmax'.*'softmax_label'.*3.*\\[0, 3\\)"):
        exe.forward(is_train=True, data=np.ones((4, 5), np.float32),
                    softmax_label=label if where == "host" else on_device(exe, label))


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("normalization,scale", [("null", 1.0), ("batch", 0.25), ("valid", 0.25)])
def test_softmax_output_gradient_is_softmax_minus_one_hot(ctx, normalization, scale):
    exe = bound(ctx, normalization)
    rng = np.random.default_rng(1)
    data = rng.normal(size=(4, 5)).astype(np.float32)
    label = np.array([2, 0, 1, 2.7], np.float32)      # 2.7 counts as class 2 (cast toward zero, as MXNet)
    exe.forward(is_train=True, data=data, softmax_label=label)
    exe.backward()
    prob = backend.asnumpy(exe.outputs[0])
    expected_dlogits = (prob - np.eye(3, dtype=np.float32)[label.astype(int)]) * scale
    np.testing.assert_allclose(backend.asnumpy(exe.grad_dict["fc_weight"]), expected_dlogits.T @ data,
                               rtol=1e-5, atol=1e-6)


def test_subtract_one_hot_on_numpy():
    prob = np.full((2, 3), 0.5, np.float32)
    out = np.empty_like(prob)
    backend.subtract_one_hot(out, prob, np.array([1.0, 2.0]), 2.0)
    np.testing.assert_array_equal(out, [[1, -1, 1], [1, 1, -1]])


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("where", ["host", "device"])
def test_embedding_ids_out_of_range_are_named_on_every_context(ctx, where):
    exe = sym.Embedding(sym.Variable("ids"), input_dim=4, output_dim=2, name="emb").simple_bind(ctx, ids=(3,))
    for bad in ([0, 4, 1], [0, -1, 1], [0, 1.5, 1]):
        ids = np.array(bad, np.float32)
        with pytest.raises(DataError, match="Embedding 'emb'.*'ids'.*\\[0, 4\\)"):
            exe.forward(ids=ids if where == "host" else on_device(exe, ids))


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("pooling", ["none", "sum", "mean"])
def test_row_gradient_skips_absent_ids_on_every_context(ctx, pooling):
    """Batch-local rows (as a sparse table pulls them): -1 marks an absent id, whose gradient goes nowhere."""
    net = sym.contrib.HashEmbedding(sym.Variable("ids"), output_dim=2, pooling=pooling, name="emb")
    ids = np.array([[0, 2, -1], [1, 1, 0]], np.float32)
    exe = net.simple_bind(ctx, grad_req={"ids": "null", "emb_weight": "write"}, ids=ids.shape, emb_weight=(3, 2))
    exe.copy_params_from({"emb_weight": np.arange(6, dtype=np.float32).reshape(3, 2)})
    exe.forward(is_train=True, ids=ids)
    dy = np.arange(1, 1 + int(np.prod(exe.outputs[0].shape)), dtype=np.float32).reshape(exe.outputs[0].shape)
    exe.backward(out_grads=dy)
    expected = np.zeros((3, 2), np.float32)
    for (b, k), i in np.ndenumerate(ids):
        if i >= 0:
            row = dy[b, k] if pooling == "none" else dy[b] / (3 - (ids[b] < 0).sum() if pooling == "mean" else 1)
            expected[int(i)] += row
    np.testing.assert_allclose(backend.asnumpy(exe.grad_dict["emb_weight"]), expected, rtol=1e-6)


@pytest.mark.parametrize("table_rows,ids", [(50, 400), (10_000, 100)], ids=["batch-local rows", "tall table"])
def test_segment_sum_equals_add_at_for_short_and_tall_tables(table_rows, ids):
    from sparkps.symbol.ops.embedding import segment_sum
    rng = np.random.default_rng(0)
    index, rows = rng.integers(0, table_rows, ids), rng.normal(size=(ids, 3)).astype(np.float32)
    got, expected = np.zeros((table_rows, 3), np.float32), np.zeros((table_rows, 3), np.float32)
    segment_sum(got, index, rows)
    np.add.at(expected, index, rows)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)

"""The fused CTR ops (sparkps/symbol/ops/fused.py) against the plain ops they replace: equal outputs and gradients
for random positions with repeats and absent ids, gradients by central differences, bad positions named, an
explicit backward graph, and the symbol JSON round trip. The gpu cases run the CuPy kernels (marked ``gpu``)."""
import json

import numpy as np
import pytest

import sparkps.symbol as sym
from opcheck import CONTEXTS, check_gradients, run
from sparkps import backend
from sparkps.errors import DataError
from sparkps.symbol.ops.embedding import sparse_tables

RNG = np.random.default_rng(11)
IDS = np.array([[0, 2, -1], [3, 3, 1], [-1, -1, -1], [4, 0, 2]], dtype=np.float64)   # repeats, absent ids
WEIGHT = RNG.normal(size=(5, 3))
EMBEDDED = RNG.normal(size=(6, 5, 4))     # 6 rows, 5 fields, 4 factors


def step(net, ctx, dtype, grad_req, out_grad_seed=1, **inputs):
    """Outputs and gradients (numpy) of one forward + backward of ``net`` with fixed random out_grads."""
    exe = net.simple_bind(ctx, grad_req=grad_req, dtype=dtype, **{k: np.shape(v) for k, v in inputs.items()})
    exe.forward(is_train=True, **inputs)
    rng = np.random.default_rng(out_grad_seed)
    xp = backend.get_array_module(ctx)
    exe.backward([xp.asarray(rng.normal(size=o.shape).astype(dtype)) for o in exe.outputs])
    return ([backend.asnumpy(o).copy() for o in exe.outputs],
            {k: backend.asnumpy(v).copy() for k, v in exe.grad_dict.items()})


def random_positions(rows, shape, seed):
    """Float positions into ``rows`` rows with many repeats and about one absent (-1) id in six."""
    rng = np.random.default_rng(seed)
    pos = rng.integers(0, max(rows // 3, 1), shape).astype(np.float64)
    pos[rng.random(shape) < 1 / 6] = -1
    return pos


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 1e-5)])
@pytest.mark.parametrize("pooling", ["none", "sum", "mean"])
def test_fused_embedding_equals_hash_embedding(pooling, dtype, rtol, ctx):
    ids = sym.Variable("ids")
    weight = RNG.normal(size=(40, 8))
    for seed in range(3):
        pos = random_positions(40, (64, 7), seed)
        results = [step(read(ids, output_dim=8, table="t", pooling=pooling), ctx, dtype,
                        {"ids": "null", "t": "write"}, ids=pos, t=weight)
                   for read in (sym.contrib.HashEmbedding, sym.contrib.FusedEmbedding)]
        (plain_out, plain_grad), (fused_out, fused_grad) = results
        np.testing.assert_allclose(fused_out[0], plain_out[0], rtol=rtol, atol=rtol)
        np.testing.assert_allclose(fused_grad["t"], plain_grad["t"], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("ctx", CONTEXTS)
@pytest.mark.parametrize("keep_factors", [False, True])
def test_fm_interaction_equals_the_pair_sum_crosses(keep_factors, ctx):
    data = sym.Variable("data")
    plain = sym.BiInteractionCross(data) if keep_factors else sym.BiInnerSumCross(data)
    fused = sym.contrib.FMInteraction(data, keep_factors=keep_factors)
    for dtype, rtol in (("float64", 1e-12), ("float32", 1e-5)):
        (plain_out, plain_grad), (fused_out, fused_grad) = [step(net, ctx, dtype, "write", data=EMBEDDED)
                                                            for net in (plain, fused)]
        np.testing.assert_allclose(fused_out[0], plain_out[0], rtol=rtol, atol=rtol)
        np.testing.assert_allclose(fused_grad["data"], plain_grad["data"], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("pooling", ["none", "sum", "mean"])
def test_fused_embedding_weight_gradient_matches_central_differences(pooling):
    net = sym.contrib.FusedEmbedding(sym.Variable("ids"), output_dim=3, table="t", pooling=pooling)
    grads = check_gradients(net, {"ids": IDS, "t": WEIGHT}, ["t"], max_points=15)
    assert grads["t"].shape == WEIGHT.shape


@pytest.mark.parametrize("keep_factors", [False, True])
def test_fm_interaction_gradient_matches_central_differences(keep_factors):
    net = sym.contrib.FMInteraction(sym.Variable("data"), keep_factors=keep_factors, name="fm")
    check_gradients(net, {"data": EMBEDDED}, ["data"])
    _, (out,) = run(net, data=EMBEDDED)
    assert out.shape == ((6, 4) if keep_factors else (6, 1))


def test_bad_positions_are_named():
    net = sym.contrib.FusedEmbedding(sym.Variable("ids"), output_dim=3, table="t", name="read")
    for bad, what in ((np.array([[0.5, 1]]), "0.5"), (np.array([[5, 1]]), "5.0")):
        with pytest.raises(DataError, match=r"_contrib_FusedEmbedding 'read': input 'ids' must hold integer row "
                                            r"positions below 5 .*got %s" % what):
            run(net, ids=bad, t=WEIGHT)


def test_the_backward_graph_holds_the_fused_gradient_nodes():
    ids = sym.Variable("ids")
    rows = sym.contrib.FusedEmbedding(ids, output_dim=3, table="t", name="read")
    net = sym.contrib.FMInteraction(rows, name="fm")
    ops = [node["op"] for node in json.loads(net.backward_graph(["t"]).tojson())["nodes"]]
    assert "_backward_FMInteraction" in ops and "_backward_FusedEmbedding" in ops
    assert "_backward_EmbeddingRows" not in ops and "_backward_PairSumCross" not in ops


def test_fused_ops_round_trip_symbol_json():
    ids, table = sym.Variable("ids"), sym.Variable("t")
    rows = sym.contrib.FusedEmbedding(ids, weight=table, output_dim=3, pooling="mean", padding_id=-1, name="read")
    fields = sym.contrib.FusedEmbedding(ids, weight=table, output_dim=3, padding_id=-1)
    net = sym.Group([sym.contrib.FMInteraction(sym.Reshape(rows, shape=(0, 1, 3)), keep_factors=True, name="nfm"),
                     sym.contrib.FMInteraction(fields, name="fm")])
    text = net.tojson()
    again = sym.load_json(text)
    assert again.tojson() == text
    nodes = {node["name"]: node for node in json.loads(text)["nodes"]}
    assert nodes["read"]["op"] == "_contrib_FusedEmbedding" and nodes["read"]["attrs"]["pooling"] == "mean"
    assert nodes["nfm"]["op"] == "_contrib_FMInteraction" and nodes["nfm"]["attrs"]["keep_factors"] == "True"
    assert sparse_tables(again)["t"].padding_id == -1
    _, first = run(net, ids=IDS, t=WEIGHT)
    _, second = run(again, ids=IDS, t=WEIGHT)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)

"""Sparse embedding ops: HashEmbedding pooling (EmbeddingBag-style, absent ids masked), gradients by central
differences, Embedding(sparse_grad=True) bound to a batch-local matrix, and the tables a symbol reads."""
import numpy as np
import pytest
from opcheck import check_gradients, run

import sparkps.symbol as sym
from sparkps.errors import ConfigError, DataError
from sparkps.symbol.ops.embedding import sparse_tables

IDS = np.array([[0, 2, -1], [3, 3, 1], [-1, -1, -1], [4, 0, 2]], dtype=np.float64)   # -1 = absent
WEIGHT = np.random.default_rng(0).normal(size=(5, 3))


def expected_pooled(ids, weight, pooling):
    present = ids >= 0
    rows = weight[np.where(present, ids, 0).astype(int)] * present[..., None]
    if pooling == "none":
        return rows
    total = rows.sum(axis=-2)
    return total if pooling == "sum" else total / np.maximum(present.sum(axis=-1), 1)[..., None]


@pytest.mark.parametrize("pooling", ["none", "sum", "mean"])
def test_hash_embedding_pools_present_ids_and_masks_absent_ones(pooling):
    net = sym.contrib.HashEmbedding(sym.Variable("ids"), output_dim=3, table="t", pooling=pooling, name="h")
    _, (out,) = run(net, ids=IDS, t=WEIGHT)
    np.testing.assert_allclose(out, expected_pooled(IDS, WEIGHT, pooling), rtol=1e-12)
    if pooling != "none":
        np.testing.assert_array_equal(out[2], 0)     # a field with no ids gives zeros, not NaN


@pytest.mark.parametrize("pooling", ["none", "sum", "mean"])
def test_hash_embedding_weight_gradient_matches_central_differences(pooling):
    net = sym.contrib.HashEmbedding(sym.Variable("ids"), output_dim=3, table="t", pooling=pooling)
    grads = check_gradients(net, {"ids": IDS, "t": WEIGHT}, ["t"], max_points=15)
    assert grads["t"].shape == WEIGHT.shape


def test_sparse_embedding_gradient_is_shaped_like_the_bound_local_matrix():
    """Bound to 4 pulled rows instead of input_dim=1000, the gradient rows are the per-row sums of dy."""
    net = sym.Embedding(sym.Variable("ids"), input_dim=1000, output_dim=3, sparse_grad=True, name="emb")
    local_ids = np.array([[0, 1], [1, 3]], dtype=np.float64)
    grads = check_gradients(net, {"ids": local_ids, "emb_weight": WEIGHT[:4]}, ["emb_weight"])
    assert grads["emb_weight"].shape == (4, 3)
    np.testing.assert_array_equal(grads["emb_weight"][2], 0)     # row 2 was not read by this batch
    dense = sym.Embedding(sym.Variable("ids"), input_dim=1000, output_dim=3, name="emb")
    assert dense.infer_shape(ids=(2, 2))[0][1] == (1000, 3)


def test_contrib_sparse_embedding_keeps_mxnet_name_and_round_trips_json():
    net = sym.contrib.SparseEmbedding(sym.Variable("ids"), input_dim=10, output_dim=4, name="s")
    again = sym.load_json(net.tojson())
    assert '"_contrib_SparseEmbedding"' in net.tojson()
    assert sparse_tables(again) == sparse_tables(net)
    hashed = sym.contrib.HashEmbedding(sym.Variable("ids"), output_dim=2, table="u", pooling="mean", padding_id=0)
    assert sparse_tables(sym.load_json(hashed.tojson()))["u"].padding_id == 0


def test_sparse_tables_lists_fields_sharing_one_table():
    table = sym.Variable("shared")
    a = sym.contrib.HashEmbedding(sym.Variable("f1"), output_dim=4, weight=table, pooling="sum")
    b = sym.contrib.HashEmbedding(sym.Variable("f2"), output_dim=4, weight=table, pooling="sum")
    dense = sym.Embedding(sym.Variable("f3"), input_dim=5, output_dim=4, name="plain")
    tables = sparse_tables(sym.Group([a, b, dense]))
    assert list(tables) == ["shared"]
    assert tables["shared"].fields == ("f1", "f2") and tables["shared"].input_dim is None


def test_sparse_tables_refuses_disagreeing_readers_and_computed_ids():
    table = sym.Variable("shared")
    a = sym.contrib.HashEmbedding(sym.Variable("f1"), output_dim=4, weight=table)
    b = sym.contrib.HashEmbedding(sym.Variable("f2"), output_dim=8, weight=table, name="wide")
    with pytest.raises(ConfigError, match="table 'shared'.*'wide'"):
        sparse_tables(sym.Group([a, b]))
    computed = sym.Embedding(sym.Variable("x") * 2, input_dim=5, output_dim=2, sparse_grad=True, name="e")
    with pytest.raises(ConfigError, match="'e': its ids must be a variable"):
        sparse_tables(computed)


def test_hash_embedding_rejects_positions_past_the_local_matrix():
    net = sym.contrib.HashEmbedding(sym.Variable("ids"), output_dim=3, table="t", name="h")
    with pytest.raises(DataError, match="'h': input 'ids' must hold integer row positions below 5"):
        run(net, ids=np.array([[0, 5]], dtype=np.float64), t=WEIGHT)

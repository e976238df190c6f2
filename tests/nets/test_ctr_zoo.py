"""The CTR model zoo trained in one process on planted data (sparkps.ctr.synthetic): each model
comes within 0.01 of the AUC of the model that made the labels, on held-out rows."""
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import sparkps.nets as nets
from sparkps.ctr.hashing import hash_fields
from sparkps.ctr.numeric import NumericStats
from sparkps.ctr.packed import PackedLayout
from sparkps.ctr.synthetic import planted_ctr
from sparkps.errors import ConfigError, DataError
from sparkps.metric.ctr import binary_auc
from sparkps.nets.ctr_fit import fit_ctr, predict_ctr

TRAIN, TEST = 40000, 20000
# planted family per model: FM labels for the models with an explicit pairwise term, a planted ReLU tower
# for Wide&Deep and DCN, a planted logistic regression for LR
PLANTED = {"fm": dict(fm_scale=1.0, deep_scale=0.0), "lr": dict(fm_scale=0.0, deep_scale=0.0),
           "deep": dict(fm_scale=0.0, deep_scale=3.0)}
CASES = [("lr", "lr", (32, 16)), ("fm", "fm", (32, 16)), ("deepfm", "fm", (32, 16)), ("pnn", "fm", (16,)),
         ("nfm", "fm", (16,)), ("widedeep", "deep", (32, 16)), ("dcn", "deep", (32, 16))]
_CACHE = {}


def planted(family):
    if family not in _CACHE:
        data = planted_ctr(TRAIN + TEST, num_fields=4, num_numeric=2, vocab=10, zipf=1.3, seed=1, **PLANTED[family])
        ids = hash_fields(data.fields, [data.categorical[:, j] for j in range(len(data.fields))])
        stats = NumericStats.fit(data.numeric[:TRAIN], data.numeric_names, log=True)
        _CACHE[family] = (data, ids, stats.transform(data.numeric))
    return _CACHE[family]


def train_and_score(model, family, hidden):
    data, ids, numeric = planted(family)
    spec = nets.FeatureSpec(categorical=data.fields, numeric=data.numeric_names, embedding_dim=4,
                            hidden_units=hidden)
    inputs = spec.inputs(ids, numeric)
    train = {k: v[:TRAIN] for k, v in inputs.items()}
    test = {k: v[TRAIN:] for k, v in inputs.items()}
    with threadpool_limits(1):       # small matrices: BLAS threads only fight over the cores
        fitted = fit_ctr(nets.build(model, spec), train, data.labels[:TRAIN], num_epoch=6, learning_rate=0.01)
        auc = binary_auc(data.labels[TRAIN:], predict_ctr(fitted, test))
    return auc, binary_auc(data.labels[TRAIN:], data.probability[TRAIN:])


@pytest.mark.parametrize("model, family, hidden", CASES)
def test_zoo_model_reaches_planted_auc(model, family, hidden):
    auc, best = train_and_score(model, family, hidden)
    assert auc >= best - 0.01, "%s: test AUC %.4f, planted model %.4f" % (model, auc, best)


def test_fm_cross_term_beats_lr_on_fm_labels():
    fm_auc, _ = train_and_score("fm", "fm", (16,))
    lr_auc, _ = train_and_score("lr", "fm", (16,))
    assert fm_auc > lr_auc + 0.01


def test_unknown_model_and_bad_inputs_are_named():
    spec = nets.FeatureSpec(categorical=["a", "b"], numeric=["x"])
    with pytest.raises(ConfigError, match="unknown CTR model 'xgb'"):
        nets.build("xgb", spec)
    with pytest.raises(DataError, match=r"ids of shape \(rows, 2\) for fields \['a', 'b'\]"):
        spec.inputs(np.zeros((3, 3), np.uint64), np.zeros((3, 1)))
    with pytest.raises(DataError, match=r"numeric columns \['x'\]"):
        spec.inputs(np.zeros((3, 2), np.uint64), None)
    with pytest.raises(ConfigError, match="at least one categorical field"):
        nets.FeatureSpec(categorical=[])


def test_packed_rows_of_earlier_versions_carry_64_bit_ids_exactly():
    spec = nets.FeatureSpec(categorical=["a", "b"], numeric=["x"], multi_valued={"tags": 3})
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2**63, (4, 2)).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    ids[0, 0] = np.uint64(2**64 - 2)
    inputs = spec.inputs(ids, rng.normal(size=(4, 1)), multi={"tags": [[5, 2**64 - 3], [], [7], [1, 2, 3, 4]]})
    layout = PackedLayout(spec.input_parts())
    packed = layout.pack(inputs)
    assert packed.dtype == np.float32 and packed.shape == (4, layout.width) == (4, 2 * 3 + 3 * 3 + 1)
    back = layout.split(packed.astype(np.float64))       # Spark vectors are float64: planes stay exact
    for name in inputs:
        np.testing.assert_array_equal(back[name], inputs[name])
    assert back["ids_tags"][1].tolist() == [2**64 - 1] * 3 and back["ids_tags"][3].tolist() == [1, 2, 3]


def test_tables_are_sparse_and_shared_or_per_field():
    from sparkps.symbol.ops.embedding import sparse_tables
    shared = nets.FeatureSpec(categorical=["a", "b"], numeric=["x"], multi_valued={"tags": 3})
    tables = sparse_tables(nets.build("deepfm", shared))
    assert sorted(tables) == ["embedding_weight", "linear_embedding_weight"]
    assert tables["embedding_weight"].input_dim is None and tables["embedding_weight"].fields == ("ids", "ids_tags")
    per_field = nets.FeatureSpec(categorical=["a", "b"], multi_valued={"tags": 3}, tables="per_field")
    tables = sparse_tables(nets.build("fm", per_field))
    names = ["%s_%s_weight" % (k, f) for k in ("embedding", "linear") for f in ("a", "b", "tags")]
    assert sorted(tables) == sorted(names)
    net = nets.build("deepfm", per_field)
    assert net.infer_shape(**per_field.input_shapes(8))[1] == [(8, 1)]


def tagged_clicks(rows, pooling="mean", seed=3):
    """Planted clicks with a multi-valued field: fields a and b (vocab 8) and 1-4 tags a row out of 30; the logit
    is w_a + w_b + the mean (or sum) of the weights of the row's tags (w ~ N(0, 1), tag weights N(0, 1.5) for the
    mean, N(0, 0.6) for the sum; numpy Generator ``seed``)."""
    rng = np.random.default_rng(seed)
    wa, wb, wt = rng.normal(0, 1, 8), rng.normal(0, 1, 8), rng.normal(0, 1.5 if pooling == "mean" else 0.6, 30)
    a, b = rng.integers(0, 8, rows), rng.integers(0, 8, rows)
    counts = rng.integers(1, 5, rows)
    tags = [rng.choice(30, size=c, replace=False) for c in counts]
    logit = wa[a] + wb[b] + np.array([wt[t].mean() if pooling == "mean" else wt[t].sum() for t in tags])
    p = 1 / (1 + np.exp(-logit))
    labels = (rng.random(rows) < p).astype(np.float32)
    ids = hash_fields(["a", "b"], [a, b])
    tag_ids = [hash_fields(["tags"], [t])[:, 0] for t in tags]
    return ids, tag_ids, labels, p


@pytest.mark.parametrize("pooling", ["mean", "sum"])
def test_a_multi_valued_field_is_pooled_and_learned(pooling):
    ids, tag_ids, labels, p = tagged_clicks(15000, pooling)
    spec = nets.FeatureSpec(categorical=["a", "b"], multi_valued={"tags": 4}, pooling=pooling, embedding_dim=4)
    inputs = spec.inputs(ids, multi={"tags": tag_ids})
    assert inputs["ids_tags"].shape == (15000, 4)
    cut = 10000
    with threadpool_limits(1):
        model = fit_ctr(nets.build("lr", spec), {k: v[:cut] for k, v in inputs.items()}, labels[:cut], num_epoch=3,
                        learning_rate=0.05)
        auc = binary_auc(labels[cut:], predict_ctr(model, {k: v[cut:] for k, v in inputs.items()}))
    best = binary_auc(labels[cut:], p[cut:])
    assert auc >= best - 0.01, "pooling %s: AUC %.4f, planted %.4f" % (pooling, auc, best)
    if pooling == "mean":    # without the tags the same model falls well short
        blind = nets.FeatureSpec(categorical=["a", "b"], embedding_dim=4)
        plain = blind.inputs(ids)
        with threadpool_limits(1):
            model = fit_ctr(nets.build("lr", blind), {k: v[:cut] for k, v in plain.items()}, labels[:cut],
                            num_epoch=3, learning_rate=0.05)
            without = binary_auc(labels[cut:], predict_ctr(model, {k: v[cut:] for k, v in plain.items()}))
        assert without < auc - 0.03, (without, auc)


def test_pooling_ignores_padding_and_empty_rows():
    spec = nets.FeatureSpec(categorical=["a"], multi_valued={"tags": 3}, pooling="mean", embedding_dim=2)
    inputs = spec.inputs(np.array([[1], [1], [1]], np.uint64), multi={"tags": [[5, 6], [5, 6, 6], []]})
    net = nets.build("lr", spec)
    from sparkps.rows.values import RowSparse
    from sparkps.train.feedforward import FeedForward
    rows = {"linear_embedding_weight": RowSparse(np.array([1, 5, 6], np.int64),
                                                 np.array([[0.0], [1.0], [3.0]], np.float32), (None, 1)),
            "linear_weight": np.ones((1, 1), np.float32), "linear_bias": np.zeros(1, np.float32)}
    p = FeedForward(net, arg_params=rows).predict(inputs).reshape(-1)
    # the first-order sum is w(a) + mean(w(tags)): 0 + 2, 0 + 7/3 (6 twice), 0 + 0 (no tags: zeros)
    np.testing.assert_allclose(np.log(p / (1 - p)), [2.0, 7.0 / 3.0, 0.0], rtol=1e-5)

"""The CTR model zoo trained in one process on planted data (sparkps.train.io.synthetic_ctr): each model
comes within 0.01 of the AUC of the model that made the labels, on held-out rows."""
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import sparkps.nets as nets
from sparkps.errors import ConfigError, DataError
from sparkps.nets.training import fit_ctr, predict_ctr
from sparkps.train.io.hashing import hash_fields
from sparkps.train.io.numeric import NumericStats
from sparkps.train.io.synthetic_ctr import planted_ctr
from sparkps.train.metric_ctr import binary_auc

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
                            hidden_units=hidden, num_buckets=4096)
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


def test_packed_input_without_numeric_columns_is_the_id_row():
    spec = nets.FeatureSpec(categorical=["a", "b"], packed=True, num_buckets=64)
    inputs = spec.inputs(np.array([[1, 2], [3, 4]], np.uint64))
    assert list(inputs) == ["data"] and inputs["data"].shape == (2, 2)
    net = nets.build("deepfm", spec)
    assert net.infer_shape(**spec.input_shapes(8))[1] == [(8, 1)]


def test_packed_network_computes_what_the_two_input_network_does():
    rng = np.random.default_rng(0)
    ids, numeric = rng.integers(0, 2**63, (6, 3)).astype(np.uint64), rng.normal(size=(6, 2))
    outputs = []
    for packed in (False, True):
        spec = nets.FeatureSpec(categorical=["a", "b", "c"], numeric=["x", "y"], num_buckets=32, packed=packed)
        exe = nets.build("deepfm", spec).simple_bind("cpu", grad_req="null", **spec.input_shapes(6))
        for name, array in sorted(exe.arg_dict.items()):
            if name not in spec.input_shapes(6) and name != nets.LABEL:
                array[...] = np.random.default_rng(len(name)).normal(size=array.shape)
        exe.forward(is_train=False, **spec.inputs(ids, numeric))
        outputs.append(np.array(exe.outputs[0]))
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-6)

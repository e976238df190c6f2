"""The zoo's regularisation settings: an embedding weight-decay multiplier reaches exactly the table rows a batch
reads (two SGD steps of a tiny FM equal a numpy FM with L2 on the rows each step touched, on the local kvstore
and on a dist_sync cluster of 2 workers over tcp on loopback), and dropout on the deep part is in the graph only
when set and leaves inference deterministic.

Data: 2 fields, ids 101/102 and 201/202; step 1 reads all four rows, step 2 only 101 and 201 (so 102 and 202 must
keep their step-1 values)."""
import numpy as np
import pytest

import sparkps.nets as nets
from sparkps.errors import ConfigError
from sparkps.io import NDArrayIter
from sparkps.nets.blocks import ctr_initializer
from sparkps.nets.ctr_fit import predict_ctr
from sparkps.train.feedforward import FeedForward
from sparse_parity import PATIENT  # the tables' first id-index use may hold the interpreter for seconds

IDS = np.array([[101, 201], [102, 202], [101, 202], [102, 201]] + [[101, 201]] * 4, np.uint64)
LABELS = np.array([1, 0, 0, 1, 1, 0, 1, 1], np.float32)
BATCH, LR, WD, EMB_MULT = 4, 0.5, 0.1, 2.0
SPEC = nets.FeatureSpec(categorical=["a", "b"], embedding_dim=2)


def fm(**settings):
    return nets.build("fm", SPEC, linear_wd_mult=0.0, embedding_wd_mult=EMB_MULT, **settings)


def fit(kv, rows=slice(None), batch=BATCH, learning_rate=LR, optimizer="sgd"):
    model = FeedForward(fm(), num_epoch=1, optimizer=optimizer, learning_rate=learning_rate, wd=WD, seed=0,
                        initializer=ctr_initializer())
    return model.fit(NDArrayIter({"ids": IDS[rows]}, {"ctr_label": LABELS[rows]}, batch_size=batch), kvstore=kv,
                     eval_metric="auc")


def as_dicts(params):
    """{name: array} for dense parameters, {name: {id: row}} for tables."""
    out = {}
    for name, value in params.items():
        if hasattr(value, "ids"):
            out[name] = {int(i): np.array(r, np.float64) for i, r in zip(value.ids, value.rows)}
        else:
            out[name] = np.array(value, np.float64)
    return out


class NumpyRule:
    """MXNet 1.x's sgd, adagrad and adam (defaults) on one weight or table row ``key``, with L2 ``wd``; adam's
    bias correction counts the updates of that key (a table row's own count, as sparkps's lazy rows)."""

    def __init__(self, name):
        self.name, self.state = name, {}

    def step(self, key, w, g, wd):
        if self.name == "sgd":
            return w - LR * (g + wd * w)
        if self.name == "adagrad":
            h = self.state[key] = self.state.get(key, 0) + g * g
            return w - LR * (g / np.sqrt(h + 1e-7) + wd * w)
        g = g + wd * w
        m, v, t = self.state.get(key, (0, 0, 0))
        m, v, t = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g, t + 1
        self.state[key] = (m, v, t)
        return w - LR * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)


def numpy_fm_steps(w, optimizer="sgd", wd=WD):
    """Two steps of FM (sigmoid(lw * (L[a] + L[b]) + lb + <E[a], E[b]>), log loss, gradient / batch) with
    wd * EMB_MULT on the embedding rows each step reads, none on the linear part (multiplier 0) or the bias."""
    rule = NumpyRule(optimizer)
    L, E = dict(w["linear_embedding_weight"]), dict(w["embedding_weight"])
    lw, lb = w["linear_weight"].copy(), w["linear_bias"].copy()
    for step in range(2):
        rows = slice(step * BATCH, (step + 1) * BATCH)
        gL, gE = {}, {}
        glw, glb = np.zeros_like(lw), np.zeros_like(lb)
        for (a, b), y in zip(IDS[rows].astype(int), LABELS[rows]):
            lin = L[a] + L[b]
            p = 1 / (1 + np.exp(-(lw[0, 0] * lin[0] + lb[0] + E[a] @ E[b])))
            d = (p - y) / BATCH
            for i in (a, b):
                gL[i] = gL.get(i, 0) + d * lw[0, 0]
            gE[a] = gE.get(a, 0) + d * E[b]
            gE[b] = gE.get(b, 0) + d * E[a]
            glw += d * lin[0]
            glb += d
        for i in gL:
            L[i] = rule.step(("L", i), L[i], gL[i], 0.0)
        for i in gE:
            E[i] = rule.step(("E", i), E[i], gE[i], wd * EMB_MULT)
        lw, lb = rule.step("lw", lw, glw, 0.0), rule.step("lb", lb, glb, 0.0)
        if step == 0:
            after_first = {i: E[i].copy() for i in E}
    return {"linear_embedding_weight": L, "embedding_weight": E, "linear_weight": lw, "linear_bias": lb}, \
        after_first


@pytest.fixture(scope="module")
def start():
    """The parameters before training: a step at learning rate 0 moves nothing."""
    return as_dicts(fit("local", rows=slice(0, BATCH), learning_rate=0.0).arg_params)


def assert_equals_numpy(trained, start, optimizer="sgd"):
    expected, after_first = numpy_fm_steps(start, optimizer)
    got = as_dicts(trained.arg_params)
    # float32 against float64: adagrad's and adam's first steps divide by roots of tiny squares
    rtol = 1e-5 if optimizer == "sgd" else 1e-4
    for name in ("linear_weight", "linear_bias"):
        np.testing.assert_allclose(got[name], expected[name], rtol=rtol, atol=1e-7)
    for name in ("linear_embedding_weight", "embedding_weight"):
        assert sorted(got[name]) == [101, 102, 201, 202]
        for i in got[name]:
            np.testing.assert_allclose(got[name][i], expected[name][i], rtol=rtol, atol=1e-7, err_msg=f"{name}[{i}]")
    for i in (102, 202):      # not read by step 2: exactly their step-1 value (no decay)
        np.testing.assert_allclose(got["embedding_weight"][i], after_first[i], rtol=1e-6)
    # the decay is far above the tolerance
    undecayed = numpy_fm_steps(start, optimizer, wd=0.0)[0]["embedding_weight"]
    for i in (101, 201):
        assert not np.allclose(got["embedding_weight"][i], undecayed[i], rtol=1e-3, atol=0)


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "adam"])
def test_embedding_l2_reaches_exactly_the_rows_each_step_reads_local(start, optimizer):
    assert_equals_numpy(fit("local", optimizer=optimizer), start, optimizer)


def test_embedding_l2_reaches_exactly_the_rows_each_step_reads_dist_sync(start, ps_cluster):
    """2 workers on tcp://127.0.0.1, each with half of every batch: the server applies the summed gradient."""
    def work(kv):
        return fit(kv, rows=np.r_[kv.rank * 2:kv.rank * 2 + 2, 4 + kv.rank * 2:6 + kv.rank * 2], batch=2)

    with ps_cluster(num_servers=1, num_workers=2, kvtype="dist_sync", transport="tcp",
                    timeouts=PATIENT) as cluster:
        models = cluster.run_workers(work, timeout=120)
    for model in models:
        assert_equals_numpy(model, start)


def test_multipliers_are_on_the_weights_of_their_part_only():
    spec = nets.FeatureSpec(categorical=["a", "b"], numeric=["x"], hidden_units=(4,))
    attrs = nets.build("dcn", spec, embedding_wd_mult=1.0, deep_wd_mult=0.5).attr_dict()
    mults = {k: float(v["__wd_mult__"]) for k, v in attrs.items() if "__wd_mult__" in v}
    assert mults == {"embedding_weight": 1.0, "cross1_weight": 0.5, "cross2_weight": 0.5, "deep_fc1_weight": 0.5,
                     "dcn_out_weight": 0.5}
    plain = nets.build("dcn", spec)
    assert not any("__wd_mult__" in v for v in plain.attr_dict().values())
    assert plain.list_arguments() == nets.build("dcn", spec, embedding_wd_mult=1.0).list_arguments()


@pytest.mark.parametrize("settings, message", [
    (dict(dropout=1.0), r"dropout must be a rate in \[0, 1\), got 1.0"),
    (dict(deep_wd_mult=-1), r"deep_wd_mult must be a number >= 0 \(or None\), got -1"),
    (dict(embedding_wd_mult="big"), r"embedding_wd_mult must be a number"),
])
def test_bad_settings_are_named(settings, message):
    with pytest.raises(ConfigError, match=message):
        nets.build("deepfm", SPEC, **settings)


def test_dropout_is_in_the_deep_part_only_when_set_and_inference_is_deterministic():
    spec = nets.FeatureSpec(categorical=["a", "b"], hidden_units=(8, 4))
    outputs = nets.build("deepfm", spec, dropout=0.5).get_internals().list_outputs()
    assert [o for o in outputs if "dropout" in o] == ["deep_dropout1_output", "deep_dropout2_output"]
    assert not any("dropout" in o for o in nets.build("deepfm", spec).get_internals().list_outputs())
    assert not any("dropout" in o for o in nets.build("fm", spec, dropout=0.5).get_internals().list_outputs())

    rng = np.random.default_rng(3)
    ids = rng.integers(1, 40, size=(64, 2)).astype(np.uint64)
    labels = (rng.random(64) < 0.5).astype(np.float32)
    model = FeedForward(nets.build("deepfm", spec, dropout=0.5), num_epoch=1, optimizer="sgd", learning_rate=0.1,
                        seed=0, initializer=ctr_initializer())
    model.fit(NDArrayIter({"ids": ids}, {"ctr_label": labels}, batch_size=16), kvstore="local", eval_metric="auc")
    first, second = predict_ctr(model, {"ids": ids}), predict_ctr(model, {"ids": ids})
    np.testing.assert_array_equal(first, second)

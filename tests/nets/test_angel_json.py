"""Angel's JSON networks: the files under jobs/networks/ load unchanged and train on planted data in
Angel's dummy layout; every validation error names the layer, before anything is built."""
import copy
import json
import pathlib

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from sparkps.ctr.synthetic import planted_ctr
from sparkps.errors import ConfigError
from sparkps.metric.ctr import binary_auc
from sparkps.nets import angel_json
from sparkps.nets.ctr_fit import fit_ctr, predict_ctr

NETWORKS = pathlib.Path(__file__).resolve().parents[2] / "jobs" / "networks"
DEEPFM = json.loads((NETWORKS / "deepfm.json").read_text())


@pytest.fixture(scope="module")
def dummy_rows():
    """13 fields of 11 values: Angel's dummy indices field * 11 + rank (< indexrange 148)."""
    data = planted_ctr(40000, num_fields=13, num_numeric=0, vocab=11, zipf=1.3, seed=2, deep_scale=0.0)
    return (np.arange(13) * 11 + data.ranks).astype(np.float32), data


@pytest.mark.parametrize("name", ["deepfm", "widedeep", "pnn", "nfm", "dcn"])
def test_network_file_loads_and_trains(name, dummy_rows):
    ids, data = dummy_rows
    net = angel_json.load(NETWORKS / (name + ".json"))
    args = net.fit_args(num_rows=30000)
    assert args["num_epoch"] == 5 and args["optimizer"] == "adam" and args["learning_rate"] == 0.01
    with threadpool_limits(1):       # small matrices: BLAS threads only fight over the cores
        model = fit_ctr(net.symbol, {"ids": ids[:30000]}, data.labels[:30000], **args)
        auc = binary_auc(data.labels[30000:], predict_ctr(model, {"ids": ids[30000:]}))
    best = binary_auc(data.labels[30000:], data.probability[30000:])
    assert auc > best - 0.04, "%s: AUC %.4f, planted %.4f" % (name, auc, best)


def test_train_section_and_per_layer_reg2():
    net = angel_json.loads(json.dumps(DEEPFM))
    args = net.fit_args(num_rows=2560)
    assert "wd" not in args and "wd_mult" not in args       # only the embedding layer has reg2 ...
    own = net.symbol.attr_dict()["embedding_weight"]["__table_options__"]
    assert json.loads(own)["optimizer"]["params"]["wd"] == 0.0001      # ... its table's own adam applies it
    schedule = args["lr_scheduler"]
    schedule.base_lr = 0.01
    # StandardDecay once per epoch (10 updates): epoch e trains at lr / sqrt(1 + 0.01 * (e + 1)), as Angel
    assert schedule(1) == schedule(10) == pytest.approx(0.01 / np.sqrt(1.01))
    assert schedule(11) == pytest.approx(0.01 / np.sqrt(1.02))


def mutated(change):
    config = copy.deepcopy(DEEPFM)
    change(config)
    return json.dumps(config)


def layer(config, name):
    return next(entry for entry in config["layers"] if entry["name"] == name)


ERRORS = [
    (lambda c: layer(c, "fclayer").update(type="Conv2D"), r"layer 'fclayer' has unknown type 'Conv2D'"),
    (lambda c: layer(c, "fclayer").update(inputlayer="embeding"),
     r"layer 'fclayer' reads input layer 'embeding', which is not defined"),
    (lambda c: layer(c, "fclayer").update(inputlayer="sumPooling"), r"layer '\w+' is part of a cycle"),
    (lambda c: layer(c, "embedding").update(outputdim=100),
     r"layer 'embedding' \(embedding\): outputdim 100 does not match its inputs, which give width 104"),
    (lambda c: layer(c, "fclayer").update(outputdims=[100, 100, 2]),
     r"layer 'sumPooling' \(SumPooling\): inputs must have one width"),
    (lambda c: layer(c, "biinnersumcross").update(inputlayer="wide"),
     r"layer 'biinnersumcross' \(BiInnerSumCross\): input 'wide' must be an embedding layer"),
    (lambda c: layer(c, "fclayer").update(transfuncs=["relu", "swish", "identity"]),
     r"layer 'fclayer' \(FCLayer\): unknown transfunc 'swish'"),
    (lambda c: layer(c, "fclayer").update(transfuncs=["relu"]), r"layer 'fclayer' \(FCLayer\): 3 outputdims"),
    (lambda c: layer(c, "fclayer").update(optimizer={"type": "ftrl"}),
     r"layer 'fclayer' optimizer .* differs from default_optimizer .* only the layers over sparse tables"),
    (lambda c: layer(c, "simplelosslayer").update(lossfunc="hinge"), r"layer 'simplelosslayer'.*'hinge'"),
    (lambda c: c["layers"].append(dict(layer(c, "wide"))), r"layer name 'wide' is used twice"),
    (lambda c: c.update(optimizer="sgd"), r"unknown section\(s\) \['optimizer'\]"),
    (lambda c: c["data"].pop("indexrange"), r"data.indexrange"),
    (lambda c: c.update(default_optimizer="lbfgs"), r"default_optimizer: unknown optimizer 'lbfgs'"),
]


@pytest.mark.parametrize("change, message", ERRORS)
def test_validation_errors_name_the_layer_before_building(change, message, monkeypatch):
    monkeypatch.setattr(angel_json.AngelNetwork, "_build", lambda self: pytest.fail("built a bad network"))
    with pytest.raises(ConfigError, match=message):
        angel_json.loads(mutated(change), "deepfm.json")


def test_malformed_json_names_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "layers": [\n    {"name": "wide",, "type": "simpleinputlayer"}\n  ]\n}\n')
    with pytest.raises(ConfigError, match=r"broken.json: not valid JSON at line 3 column 21"):
        angel_json.load(path)


def test_reg2_of_a_dense_layer_is_its_weight_decay():
    config = json.loads(mutated(lambda c: layer(c, "fclayer").update(optimizer={"type": "adam", "reg2": 0.01})))
    args = angel_json.loads(json.dumps(config)).fit_args()
    wd = args["wd_mult"]
    assert args["wd"] == 1.0 and wd["wide_weight"] == 0.0     # a table on the job's optimizer: its layer's reg2 (0)
    assert wd["fclayer_0_weight"] == 0.01 and wd["fclayer_0_bias"] == 0.0 and wd["wide_bias"] == 0.0


def test_a_table_layer_may_have_its_own_optimizer_type():
    from sparkps.symbol.ops.embedding import sparse_tables
    config = json.loads(mutated(lambda c: layer(c, "wide").update(optimizer={"type": "ftrl", "reg1": 0.1})))
    tables = sparse_tables(angel_json.loads(json.dumps(config)).symbol)
    assert sorted(tables) == ["embedding_weight", "wide_weight"]
    own = tables["wide_weight"].options["optimizer"]
    assert own["name"] == "ftrl" and own["params"]["lamda1"] == 0.1 and own["params"]["learning_rate"] == 0.01
    assert tables["embedding_weight"].options["optimizer"]["name"] == "adam"      # its reg2 as wd


def test_the_wide_table_trains_with_its_own_ftrl(dummy_rows):
    """wide: ftrl with a strong L1 (Angel's reg1) under a default adam: rows end exactly at zero (FTRL-proximal's
    L1 cut), which adam never gives; the embedding table (adam) has no zero row."""
    ids, data = dummy_rows
    config = mutated(lambda c: layer(c, "wide").update(optimizer={"type": "ftrl", "reg1": 5.0}))
    net = angel_json.loads(config)
    args = dict(net.fit_args(num_rows=8000), num_epoch=1)
    with threadpool_limits(1):
        model = fit_ctr(net.symbol, {"ids": ids[:8000]}, data.labels[:8000], **args)
    wide, embedding = model.arg_params["wide_weight"], model.arg_params["embedding_weight"]
    assert wide.ids.size > 100 and np.mean(wide.rows == 0.0) > 0.1
    assert not np.any(np.all(embedding.rows == 0.0, axis=1))


def reg2_network(fc_reg2):
    """Angel JSON: a table layer without reg2 (an embedding of 2 factors over 3 fields) under an FCLayer whose sgd
    has ``fc_reg2``; default optimizer sgd."""
    return json.dumps({
        "data": {"format": "dummy", "indexrange": 30, "numfield": 3}, "train": {"epoch": 1, "lr": 0.5},
        "default_optimizer": {"type": "sgd"},
        "layers": [{"name": "embedding", "type": "embedding", "numfactors": 2, "outputdim": 6},
                   {"name": "fc", "type": "FCLayer", "outputdims": [1], "transfuncs": ["identity"],
                    "inputlayer": "embedding", "optimizer": {"type": "sgd", "reg2": fc_reg2}},
                   {"name": "loss", "type": "simplelosslayer", "lossfunc": "logloss", "inputlayer": "fc"}]})


def test_a_table_layer_with_reg2_0_beside_a_dense_layer_with_reg2_does_not_decay():
    """One sgd step (a batch of all 64 rows; seed 7 ids, seed 8 labels): the table's rows equal those of the same
    network without any reg2 (the step's gradient is taken before any weight moves), fc's weights do not."""
    ids = (np.arange(3) * 10 + np.random.default_rng(7).integers(0, 10, size=(64, 3))).astype(np.int64)
    labels = (np.random.default_rng(8).random(64) < 0.5).astype(np.float32)
    models = {}
    for reg2 in (0.0, 0.5):
        net = angel_json.loads(reg2_network(reg2))
        args = net.fit_args()
        assert ("wd_mult" in args) == (reg2 > 0)
        args.update(batch_size=64)
        models[reg2] = fit_ctr(net.symbol, {"ids": ids}, labels, **args)
    plain, decayed = models[0.0].arg_params, models[0.5].arg_params
    table, other = plain["embedding_weight"], decayed["embedding_weight"]
    np.testing.assert_array_equal(table.ids, other.ids)
    np.testing.assert_allclose(other.rows, table.rows, atol=1e-7, rtol=0)
    fc = [n for n in plain if n.startswith("fc") and n.endswith("_weight")]
    assert fc and all(np.abs(plain[n] - decayed[n]).max() > 1e-3 for n in fc)

"""SparkpsCTRClassifier's early stopping and regularisation params on a real local[2] Spark (2 workers, 1 server):
a fit on tiny data that overfits stops after the validation AUC stops improving, says why, and returns the best
epoch's dense weights and table rows; embeddingL2 and dropout reach the built network and persist."""
import numpy as np
import pytest

from sparkps.ctr.synthetic import planted_ctr
from sparkps.errors import ConfigError

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def tiny(spark):
    """600 planted clicks: an FM of width 8 on 420 of them learns for an epoch or two, then overfits (its held-out
    AUC with seed 4 went 0.645, 0.670, 0.664, 0.650, ... over 8 epochs)."""
    data = planted_ctr(600, num_fields=4, num_numeric=0, vocab=40, zipf=1.3, seed=11, deep_scale=0.0)
    rows = [(float(y), *[str(v) for v in cats]) for y, cats in zip(data.labels, data.categorical)]
    return spark.createDataFrame(rows, ["click", "a", "b", "c", "d"]).repartition(2).cache()


def classifier(**kwargs):
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier
    settings = dict(labelCol="click", categoricalCols=["a", "b", "c", "d"], model="fm", embeddingDim=8,
                    numEpochs=8, batchSize=32, optimizer="adam", learningRate=0.05, numWorkers=2, numServers=1,
                    validationFraction=0.3, seed=4)
    settings.update(kwargs)
    return SparkpsCTRClassifier(**settings)


def test_overfitting_fit_stops_early_and_keeps_the_best_epochs_weights_and_rows(tiny, caplog, tmp_path):
    from pyspark.ml.functions import vector_to_array
    from sklearn.metrics import roc_auc_score

    from sparkps.spark.driver.input_rows import held_out
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRModel
    with caplog.at_level("INFO", logger="sparkps.spark"):
        model = classifier(earlyStoppingPatience=1).fit(tiny)
    history = model.history
    aucs = [h["validation-auc"] for h in history]
    best = model.bestEpoch
    assert len(history) < 8, aucs                           # stopped before the last epoch
    assert best == len(history) - 1 and aucs[best - 1] > aucs[-1] + 1e-3, aucs     # patience 1: one worse epoch
    assert best == int(np.argmax(aucs)) + 1 and best > 1
    # the epoch ends' validation, timed part by part: every epoch end pulled the held-out ids' rows and scored the
    # held-out rows, and each new best epoch had the servers snapshot the tables; all of it inside the fit
    spent = model.fit_timings["validation_seconds"]
    assert set(spent) == {"rows_pull", "scoring", "snapshot"} and min(spent.values()) > 0, spent
    assert sum(spent.values()) < model.fit_timings["fit_seconds"], (spent, model.fit_timings)
    said = caplog.text
    assert "early stopping after epoch %d: validation auc" % len(history) in said, said
    assert "keeps epoch %d" % best in said
    progress = [r.getMessage() for r in caplog.records if r.getMessage().startswith("epoch ")]
    assert progress and not [line for line in progress if line.startswith("epoch 8/8")], progress
    assert progress[-1].startswith("epoch %d/8" % len(history)), progress
    validation = held_out(tiny, 0.3, seed=4)[1]
    rows = model.transform(validation).select("click", vector_to_array("probability")[1].alias("p")).collect()
    labels, p = np.array([r.click for r in rows]), np.array([r.p for r in rows])
    # the model scores as the best epoch did (its dense weights and its rows), not as the last epoch
    assert roc_auc_score(labels, p) == pytest.approx(aucs[best - 1], abs=1e-6)
    assert roc_auc_score(labels, p) != pytest.approx(aucs[-1], abs=1e-4)
    path = str(tmp_path / "stopped")
    model.write().save(path)
    assert SparkpsCTRModel.load(path).bestEpoch == best


def test_early_stopping_params_are_checked_before_any_job(tiny):
    with pytest.raises(ConfigError, match="earlyStoppingPatience=2 needs held-out rows"):
        classifier(earlyStoppingPatience=2, validationFraction=0.0).fit(tiny)
    with pytest.raises(ConfigError, match="earlyStoppingMetric must be auc or logloss, got 'acc'"):
        classifier(earlyStoppingPatience=2, earlyStoppingMetric="acc").fit(tiny)


def test_embedding_l2_and_dropout_reach_the_network_and_persist(tmp_path):
    from sparkps.ctr.features import FeatureSpec
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier
    clf = classifier(model="deepfm", embeddingL2=1e-4, dropout=0.25, hiddenUnits=[8])
    path = str(tmp_path / "clf")
    clf.write().save(path)
    loaded = SparkpsCTRClassifier.load(path)
    assert (loaded.getOrDefault("embeddingL2"), loaded.getOrDefault("dropout")) == (1e-4, 0.25)
    spec = FeatureSpec(categorical=["a", "b", "c", "d"], embedding_dim=8, hidden_units=[8])
    symbol, settings = loaded.network_symbol(spec)
    attrs = symbol.attr_dict()
    assert float(attrs["embedding_weight"]["__wd_mult__"]) == 1.0
    assert float(attrs["deep_fc1_weight"]["__wd_mult__"]) == 0.0
    assert settings["optimizer_args"] == {"wd": 1e-4}
    ops = [n["op"] for n in __import__("json").loads(symbol.tojson())["nodes"]]
    assert "Dropout" in ops
    from sparkps.nets.ctr_defaults import CTR_DEFAULTS
    plain, plain_settings = classifier(model="deepfm", hiddenUnits=[8]).network_symbol(spec)    # the defaults
    assert ("Dropout" in plain.tojson()) == bool(CTR_DEFAULTS["dropout"])
    assert plain_settings["optimizer_args"] == ({"wd": CTR_DEFAULTS["embeddingL2"]} if CTR_DEFAULTS["embeddingL2"]
                                                else {})
    none, none_settings = classifier(model="deepfm", hiddenUnits=[8], embeddingL2=0.0,
                                     dropout=0.0).network_symbol(spec)
    assert none_settings["optimizer_args"] == {} and "Dropout" not in none.tojson()
    assert float(none.attr_dict().get("embedding_weight", {}).get("__wd_mult__", 0.0)) == 0.0
    with pytest.raises(ConfigError, match="dropout must be in"):
        classifier(dropout=1.5).network_symbol(spec)


def test_early_stopping_is_on_by_default_and_off_without_held_out_rows():
    from sparkps.nets.ctr_defaults import CTR_DEFAULTS
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier
    plain = SparkpsCTRClassifier(categoricalCols=["a"])
    assert plain.getOrDefault("validationFraction") == CTR_DEFAULTS["validationFraction"] > 0
    assert plain.early_stopping_patience() == CTR_DEFAULTS["earlyStoppingPatience"] > 0
    assert SparkpsCTRClassifier(categoricalCols=["a"], validationFraction=0.0).early_stopping_patience() == 0
    assert SparkpsCTRClassifier(categoricalCols=["a"], earlyStoppingPatience=0).early_stopping_patience() == 0
    assert SparkpsCTRClassifier(categoricalCols=["a"], earlyStoppingPatience=5).early_stopping_patience() == 5
    for name in ("learningRate", "embeddingL2", "embeddingDim", "batchSize", "numEpochs"):
        assert plain.getOrDefault(name) == CTR_DEFAULTS[name], name

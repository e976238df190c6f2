"""train_ctr's early-stopping and regularisation flags reach the estimator, are checked before Spark starts
(naming the flag), and summary.json records the best epoch."""
import argparse
import importlib.util
import os

import pytest

from sparkps.errors import ConfigError
from sparkps.nets.ctr_defaults import CTR_DEFAULTS
from sparkps.spark.submit.job_settings import check_ctr_settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def train_ctr():
    spec = importlib.util.spec_from_file_location("train_ctr", os.path.join(ROOT, "jobs", "train_ctr.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_flags_reach_the_estimator():
    job = train_ctr()
    args = job.parse_args(["--demo", "--validation-fraction", "0.2", "--early-stopping-patience", "2",
                           "--early-stopping-metric", "logloss", "--embedding-l2", "1e-5", "--dropout", "0.1"])
    check_ctr_settings(args)
    clf = job.estimator(args, ["C1", "C2"], [])
    get = clf.getOrDefault
    assert (get("earlyStoppingPatience"), get("earlyStoppingMetric")) == (2, "logloss")
    assert (get("embeddingL2"), get("dropout")) == (1e-5, 0.1)
    plain = job.estimator(job.parse_args(["--demo"]), ["C1"], [])      # the measured defaults: early stopping on
    assert (plain.getOrDefault("validationFraction"), plain.getOrDefault("earlyStoppingPatience"),
            plain.getOrDefault("embeddingL2"), plain.getOrDefault("learningRate")) == (
        CTR_DEFAULTS["validationFraction"], CTR_DEFAULTS["earlyStoppingPatience"], CTR_DEFAULTS["embeddingL2"],
        CTR_DEFAULTS["learningRate"])
    assert CTR_DEFAULTS["validationFraction"] > 0 and CTR_DEFAULTS["earlyStoppingPatience"] > 0
    from sparkps.spark.ml import SparkpsCTRClassifier
    estimator = SparkpsCTRClassifier(categoricalCols=["C1"])     # the job and the estimator agree on every default
    for name in CTR_DEFAULTS:
        assert plain.getOrDefault(name) == estimator.getOrDefault(name) == CTR_DEFAULTS[name], name
    unheld = job.estimator(job.parse_args(["--demo", "--validation-fraction", "0"]), ["C1"], [])
    assert unheld.getOrDefault("earlyStoppingPatience") == 0      # nothing held out: no early stopping
    off = job.estimator(job.parse_args(["--demo", "--early-stopping-patience", "0", "--embedding-l2", "0",
                                        "--dropout", "0"]), ["C1"], [])
    assert (off.getOrDefault("earlyStoppingPatience"), off.getOrDefault("embeddingL2"),
            off.getOrDefault("dropout")) == (0, 0.0, 0.0)


@pytest.mark.parametrize("flags,message", [
    (["--validation-fraction", "0", "--early-stopping-patience", "2"],
     "--early-stopping-patience 2 needs held-out rows"),
    (["--early-stopping-patience", "-1"], "--early-stopping-patience must be >= 0"),
    (["--dropout", "1"], "--dropout must be in [0, 1), got 1.0"),
    (["--embedding-l2", "-0.1"], "--embedding-l2 must be >= 0"),
])
def test_bad_flags_are_named_before_spark(flags, message):
    args = train_ctr().parse_args(["--demo"] + flags)
    with pytest.raises(ConfigError) as error:
        check_ctr_settings(args)
    assert message in str(error.value)


def test_an_unknown_metric_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        train_ctr().parse_args(["--demo", "--early-stopping-metric", "acc"])
    assert stop.value.code == 2 and "invalid choice: 'acc'" in capsys.readouterr().err


def test_summary_records_the_best_epoch():
    job = train_ctr()
    history = [{"epoch": e, "logloss": 0.5} for e in range(4)]
    stopped = argparse.Namespace(history=history, bestEpoch=2)
    summary = job.summary(stopped, 0.7, 0.5, 100, None)
    assert (summary["epochs"], summary["best_epoch"]) == (4, 2) and summary["history"][0]["epoch"] == 1
    assert job.summary(argparse.Namespace(history=history, bestEpoch=None), 0.7, 0.5, 100, None)["best_epoch"] == 4

"""Both pyspark.ml estimators reach every strategy option, the compression and the checkpoint/restart settings of
SparkTrainer (``kvstoreParams``, ``gradientCompression``, ``checkpointDir``, ``checkpointSteps``, ``maxRestarts``),
keep them through a Pipeline's save and load, and name an unknown option or a strategy that cannot train sparse
tables before any Spark job runs."""
import os

import pytest

from sparkps.errors import ConfigError

pytestmark = pytest.mark.spark

CTR_COLUMNS = dict(labelCol="click", categoricalCols=["site", "app"], model="fm", embeddingDim=4, numWorkers=2)
SETTINGS = dict(kvstore="dist_sync_replicas", kvstoreParams=["replicas_to_aggregate=1", "total_num_replicas=2"],
                gradientCompression="2bit", compressionThreshold=0.25, checkpointDir="/tmp/ckpt", checkpointSteps=7,
                maxRestarts=1, schedulerPlacement="stage", resultChunkBytes=4096)


class Captured(Exception):
    """Raised by the stand-in SparkTrainer with the keyword arguments it was built with."""


def capture_trainer(monkeypatch, module):
    """Replace ``module.SparkTrainer`` by one that raises Captured(kwargs) when built."""
    def built(*args, **kwargs):
        raise Captured(kwargs)
    monkeypatch.setattr(module, "SparkTrainer", built)


def estimators():
    from sparkps.spark.ml.classifier import SparkpsClassifier, SparkpsCTRClassifier
    return [SparkpsClassifier(layers=[4, 3, 2]), SparkpsCTRClassifier(**CTR_COLUMNS)]


@pytest.fixture(scope="module")
def clicks(spark):
    rows = [(float(i % 2), "s%d" % (i % 3), "a%d" % (i % 5)) for i in range(40)]
    return spark.createDataFrame(rows, ["click", "site", "app"])


def test_defaults_are_those_of_spark_trainer():
    import inspect

    from sparkps.spark.driver.trainer import SparkTrainer
    defaults = inspect.signature(SparkTrainer).parameters
    for estimator in estimators():
        assert estimator.getOrDefault("maxRestarts") == defaults["max_restarts"].default == 2
        assert estimator.getOrDefault("checkpointSteps") == 0 and defaults["checkpoint_steps"].default is None
        assert estimator.getOrDefault("checkpointDir") == "" and defaults["checkpoint_dir"].default is None
        assert estimator.getOrDefault("kvstoreParams") == [] and estimator.getOrDefault("gradientCompression") == ""


@pytest.mark.parametrize("which", ["classifier", "ctr"])
def test_strategy_and_checkpoint_params_reach_the_trainer(monkeypatch, clicks, which):
    import sparkps.spark.ml.classifier as ml_module
    import sparkps.spark.ml.ctr_classifier as ctr_module
    estimator = estimators()[which == "ctr"].setParams(**SETTINGS)
    capture_trainer(monkeypatch, ctr_module if which == "ctr" else ml_module)
    with pytest.raises(Captured) as built:
        estimator.fit(clicks)
    kwargs = built.value.args[0]
    assert kwargs["kvstore"] == "dist_sync_replicas"
    assert kwargs["kvstore_params"] == {"replicas_to_aggregate": 1, "total_num_replicas": 2}
    assert kwargs["gradient_compression"] == {"type": "2bit", "threshold": 0.25}
    assert (kwargs["checkpoint_dir"], kwargs["checkpoint_steps"], kwargs["max_restarts"]) == ("/tmp/ckpt", 7, 1)
    assert (kwargs["scheduler"], kwargs["chunk_bytes"]) == ("stage", 4096)


@pytest.mark.parametrize("settings, message", [
    (dict(schedulerPlacement="executor"),
     "param schedulerPlacement must be one of auto, driver, stage, got 'executor'"),
    (dict(resultChunkBytes=0), "param resultChunkBytes must be a whole number of bytes >= 1, got 0"),
])
def test_a_bad_placement_param_is_one_config_error_naming_it(settings, message):
    from sparkps.spark.ml.shared_params import placement_settings
    for estimator in estimators():
        with pytest.raises(ConfigError) as info:
            placement_settings(estimator.setParams(**settings))
        assert message in str(info.value)


@pytest.mark.parametrize("which", ["classifier", "ctr"])
def test_a_pipeline_keeps_the_settings_through_save_and_load(tmp_path, which):
    from pyspark.ml import Pipeline
    estimator = estimators()[which == "ctr"].setParams(**SETTINGS)
    Pipeline(stages=[estimator]).write().overwrite().save(str(tmp_path / "pipeline"))
    loaded = Pipeline.load(str(tmp_path / "pipeline")).getStages()[0]
    assert {name: loaded.getOrDefault(name) for name in SETTINGS} == SETTINGS


@pytest.mark.parametrize("which", ["classifier", "ctr"])
@pytest.mark.parametrize("settings, message", [
    (dict(kvstore="dist_easgd", kvstoreParams=["interval_steps=4"]),
     "kvstore 'dist_easgd' has no option(s) interval_steps (known: communication_period, moving_rate)"),
    (dict(kvstore="dist_sync", kvstoreParams=["replicas_to_aggregate"]),
     "strategy option 'replicas_to_aggregate' is not name=value"),
    (dict(kvstore="dist_averaging"), "kvstore must be one of dist_sync"),
    (dict(kvstore="dist_async", kvstoreParams=["max_staleness=-1"]), "max_staleness must be a non-negative int"),
    (dict(gradientCompression="3bit"), "3bit"),
])
def test_an_unknown_strategy_or_option_is_one_config_error_before_any_spark_job(which, settings, message):
    estimator = estimators()[which == "ctr"].setParams(**settings)
    with pytest.raises(ConfigError) as info:
        estimator.fit(None)         # no data is read: the settings fail first
    assert message in str(info.value)


@pytest.mark.parametrize("kvstore", ["dist_model_average", "dist_easgd"])
def test_strategies_training_on_the_workers_refuse_sparse_tables_naming_them(clicks, kvstore):
    ctr = estimators()[1].setParams(kvstore=kvstore)
    with pytest.raises(ConfigError, match="kvstore '%s' trains on the workers' own copy of every weight, but sparse "
                                          "table\\(s\\) embedding_weight, linear_embedding_weight live on the "
                                          "servers" % kvstore):
        ctr.fit(clicks)


def test_checkpoint_steps_of_the_classifier_write_step_checkpoints(spark, digits, tmp_path):
    from pyspark.ml.linalg import Vectors

    from sparkps.runtime.resume import checkpoints
    from sparkps.spark.ml.classifier import SparkpsClassifier
    X_train, y_train, _, _ = digits
    frame = spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X_train[:640], y_train)],
                                  ["features", "label"])
    classifier = SparkpsClassifier(layers=[64, 16, 10], numEpochs=2, batchSize=32, checkpointDir=str(tmp_path),
                                   checkpointSteps=4, maxRestarts=0)
    model = classifier.fit(frame)
    names = sorted(os.path.basename(p.path) for p in checkpoints(str(tmp_path)))
    assert "epoch-0002" in names and any(n.startswith("step-") for n in names), names
    assert all(int(n[5:]) % 4 == 0 for n in names if n.startswith("step-")), names
    assert model.getOrDefault("checkpointSteps") == 4 and 0.0 <= model.history[-1]["accuracy"] <= 1.0


def job_module(name):
    import importlib.util
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, "jobs", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


JOB_FLAGS = ["--kvstore", "dist_sync_replicas", "--kvstore-param", "replicas_to_aggregate=1", "--kvstore-param",
             "total_num_replicas=2", "--compression", "2bit",
             "--compression-threshold", "0.25", "--checkpoint-dir", "/tmp/ckpt", "--checkpoint-steps", "7",
             "--max-restarts", "1", "--scheduler", "stage"]


def test_the_spark_submit_jobs_take_every_strategy_and_the_checkpoint_flags():
    from sparkps.spark.submit.flags import estimator_settings, trainer_settings
    args = job_module("train_classifier").parse_args(["--demo"] + JOB_FLAGS)
    assert trainer_settings(args) == {"kvstore": "dist_sync_replicas",
                                      "kvstore_params": {"replicas_to_aggregate": 1, "total_num_replicas": 2},
                                      "gradient_compression": {"type": "2bit", "threshold": 0.25},
                                      "checkpoint_dir": "/tmp/ckpt", "checkpoint_steps": 7, "max_restarts": 1,
                                      "scheduler": "stage"}
    args = job_module("train_ctr").parse_args(["--demo"] + JOB_FLAGS)
    assert estimator_settings(args) == {k: v for k, v in SETTINGS.items() if k != "resultChunkBytes"}   # no flag
    estimators()[1].setParams(**estimator_settings(args))       # the estimator takes them as they are


@pytest.mark.parametrize("name, kvstore", [("train_classifier", "dist_easgd"), ("train_ctr", "dist_async")])
def test_a_job_with_an_unknown_strategy_option_stops_before_spark_starts(name, kvstore, capsys):
    with pytest.raises(SystemExit) as stop:
        job_module(name).parse_args(["--demo", "--kvstore", kvstore, "--kvstore-param", "interval_steps=4"])
    assert stop.value.code == 2
    assert "kvstore '%s' has no option(s) interval_steps" % kvstore in capsys.readouterr().err


def test_curve_is_a_constructor_param_of_both_estimators_and_the_ctr_jobs_flag_reaches_it():
    """``curve`` (auto, on, off) is taken by both constructors, and ``--curve`` / ``--no-curve`` of the jobs give
    the estimator's param (train_ctr builds its estimator from estimator_settings)."""
    import argparse

    from sparkps.spark.ml import SparkpsClassifier, SparkpsCTRClassifier
    from sparkps.spark.submit.flags import add_strategy_flags, estimator_settings
    assert SparkpsClassifier(curve="on").getCurve() == "on"
    assert SparkpsCTRClassifier(curve="off").getCurve() == "off"
    assert SparkpsCTRClassifier().getCurve() == "auto"
    parser = argparse.ArgumentParser()
    add_strategy_flags(parser)
    for flags, value in ((["--curve"], "on"), (["--no-curve"], "off"), ([], "auto")):
        settings = estimator_settings(parser.parse_args(["--kvstore", "dist_sync"] + flags))
        assert SparkpsCTRClassifier(**settings).getCurve() == value

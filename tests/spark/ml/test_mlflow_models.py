"""The pyspark.ml models in MLflow, against a local SQLite tracking store: ``mlflow.pyspark.ml.autolog`` with
sparkps's models allowlisted (its params, sparkps's per-epoch metrics, the model), ``mlflow.spark.log_model`` and
``sparkps.spark.ml.mlflow_flavor.log_model`` round trips of a CTR model, a Pipeline holding one and a classifier
Pipeline (``mlflow.spark.load_model`` scores as the model did; the pyfunc scores pandas rows).

One 1-epoch fit of each estimator on a few hundred rows; requirements are given to every mlflow.spark.log_model
(MLflow would otherwise infer them by loading the model in a new Python process); sparkps's log_model writes its
own."""
import numpy as np
import pytest

from sparkps.errors import ConfigError

pytestmark = pytest.mark.spark

REQUIREMENTS = ["pyspark", "sparkps"]
ALLOWLIST = ["pyspark.ml.pipeline.PipelineModel", "sparkps.spark.ml.*"]


@pytest.fixture(scope="module")
def mlflow(tmp_path_factory):
    """mlflow with a fresh SQLite store and an experiment whose artifacts stay in the test's folder."""
    mlflow = pytest.importorskip("mlflow")
    folder = tmp_path_factory.mktemp("mlflow")
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri("sqlite:///%s" % (folder / "mlflow.db"))
    mlflow.set_experiment(experiment_id=mlflow.create_experiment("sparkps", str(folder / "artifacts")))
    yield mlflow
    mlflow.set_tracking_uri(before)


@pytest.fixture(scope="module")
def clicks(spark):
    """300 rows: two string fields (the first decides the click rate) and a numeric one."""
    rng = np.random.default_rng(3)
    site, app, hour = rng.integers(0, 6, 300), rng.integers(0, 4, 300), rng.random(300)
    click = rng.random(300) < np.where(site < 3, 0.8, 0.1)
    rows = [(float(c), "s%d" % s, "a%d" % a, float(h)) for c, s, a, h in zip(click, site, app, hour)]
    return spark.createDataFrame(rows, ["click", "site", "app", "hour"]).repartition(2).cache()


@pytest.fixture(scope="module")
def autologged(mlflow, clicks):
    """A SparkpsCTRClassifier fit under autolog with sparkps allowlisted: (model, the run's id)."""
    import mlflow.models
    import mlflow.pyspark.ml

    from sparkps.spark.ml import SparkpsCTRClassifier
    clf = SparkpsCTRClassifier(labelCol="click", categoricalCols=["site", "app"], numericCols=["hour"], model="fm",
                               embeddingDim=4, numEpochs=1, batchSize=64, learningRate=0.05, numWorkers=2,
                               numServers=1, seed=1)
    mlflow.pyspark.ml.autolog(log_model_allowlist=ALLOWLIST, log_datasets=False, silent=True)
    try:
        with pytest.MonkeyPatch.context() as patch, mlflow.start_run() as run:
            # the requirements of the autologged model: MLflow's fallback, not a new Python process loading it
            patch.setattr(mlflow.models, "infer_pip_requirements", lambda path, flavor, fallback=None, **_: fallback)
            model = clf.fit(clicks)
    finally:
        mlflow.pyspark.ml.autolog(disable=True)
    return model, run.info.run_id


def probabilities(frame, column="probability", index=None):
    values = np.array([row[0].toArray() for row in frame.select(column).collect()])
    return values if index is None else values[:, index]


def test_autolog_logs_the_params_the_epoch_metrics_and_the_allowlisted_model(mlflow, autologged):
    model, run_id = autologged
    run = mlflow.get_run(run_id)
    params = run.data.params
    assert params["model"] == "fm" and params["embeddingDim"] == "4" and params["numEpochs"] == "1"   # autolog's
    assert params["sparkps.model"] == "ctr-fm"        # the trainer's own name of it, beside autolog's
    assert params["num_workers"] == "2"
    history = mlflow.MlflowClient().get_metric_history(run_id, "logloss")
    assert [(m.step, m.value) for m in history] == [(1, pytest.approx(model.history[0]["logloss"]))]
    again = mlflow.spark.load_model("runs:/%s/model" % run_id).stages[-1]       # the allowlisted model
    assert type(again).__name__ == "SparkpsCTRModel" and again.history == model.history


def test_a_ctr_model_and_its_pipeline_round_trip_through_both_flavors(mlflow, autologged, clicks):
    import mlflow.pyfunc
    import mlflow.spark
    from pyspark.ml import PipelineModel

    from sparkps.spark.ml import mlflow_flavor
    model, run_id = autologged
    expected = probabilities(model.transform(clicks), index=1)
    pandas_rows = clicks.select("site", "app", "hour").toPandas()
    plain = "runs:/%s/model" % run_id          # autolog's mlflow.spark.log_model(model, "model")
    np.testing.assert_allclose(probabilities(mlflow.spark.load_model(plain).transform(clicks), index=1), expected,
                               rtol=1e-6)
    # mlflow.spark's pyfunc: the prediction column, p > 0.5
    assert mlflow.pyfunc.load_model(plain).predict(pandas_rows.head(50)) == [float(p > 0.5) for p in expected[:50]]
    with mlflow.start_run():
        ours = mlflow_flavor.log_model(PipelineModel([model]), "ctr-pipeline", pip_requirements=REQUIREMENTS)
    # sparkps's pyfunc (which loads the spark flavor): the click probabilities, in the rows' order
    np.testing.assert_allclose(mlflow.pyfunc.load_model(ours.model_uri).predict(pandas_rows), expected, rtol=1e-6)


def test_sparkps_log_model_writes_its_requirements_without_loading_the_model_in_a_new_process(mlflow, autologged,
                                                                                              monkeypatch):
    """MLflow's inference (a new Python process loading the model, which starts Spark: ~30 s) is not called; the
    requirements are sparkps's and its scoring distributions', pinned, plus the extra ones."""
    import mlflow.models
    import mlflow.pyfunc

    import sparkps
    from sparkps.spark.ml import mlflow_flavor
    inferred = []
    monkeypatch.setattr(mlflow.models, "infer_pip_requirements", lambda *a, **k: inferred.append(a) or [])
    model, _ = autologged
    with mlflow.start_run():
        info = mlflow_flavor.log_model(model, "ctr-requirements", extra_pip_requirements=["scikit-learn"])
    assert inferred == []
    with open(mlflow.pyfunc.get_model_dependencies(info.model_uri), encoding="utf-8") as f:
        required = f.read().split()
    import pyspark
    assert {"sparkps==%s" % sparkps.__version__, "pyspark==%s" % pyspark.__version__, "scikit-learn"} <= set(required)
    assert [name for name in required if name.startswith("numpy==")]


def test_a_classifier_pipeline_round_trips_and_its_pyfunc_reads_lists_of_features(mlflow, spark, digits,
                                                                                   tmp_path):
    import mlflow.pyfunc
    import mlflow.spark
    import pandas as pd
    from pyspark.ml import Pipeline
    from pyspark.ml.linalg import Vectors

    from sparkps.spark.ml import SparkpsClassifier, mlflow_flavor
    X, y = digits[0][:300], digits[1][:300]
    frame = spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X, y)],
                                  ["features", "label"])        # X's order
    clf = SparkpsClassifier(layers=[64, 16, 10], numEpochs=1, batchSize=32, numWorkers=2, numServers=1, seed=2)
    pipeline = Pipeline(stages=[clf]).fit(frame)
    scored = pipeline.transform(frame)
    expected, predicted = probabilities(scored), [row.prediction for row in scored.select("prediction").collect()]
    with mlflow.start_run():
        info = mlflow.spark.log_model(pipeline, artifact_path="mlp", pip_requirements=REQUIREMENTS)
    rows = pd.DataFrame({"features": [list(map(float, x)) for x in X[:40]]})
    # mlflow.spark's pyfunc (mlflow.spark.load_model's PipelineModel): the predicted classes
    assert mlflow.pyfunc.load_model(info.model_uri).predict(rows) == predicted[:40]
    # sparkps's pyfunc of the same pipeline, without an MLflow run: the class probabilities
    path = str(tmp_path / "mlp")
    mlflow_flavor.save_model(pipeline, path, pip_requirements=REQUIREMENTS)
    answered = mlflow.pyfunc.load_model(path).predict(rows)
    assert answered.shape == (40, 10)
    np.testing.assert_allclose(answered, expected[:40], rtol=1e-5, atol=1e-7)


def test_a_model_without_a_sparkps_stage_is_refused_before_anything_is_logged(mlflow, spark):
    from pyspark.ml import PipelineModel
    from pyspark.ml.feature import Binarizer

    from sparkps.spark.ml import mlflow_flavor
    with pytest.raises(ConfigError, match="PipelineModel holds no SparkpsCTRModel"):
        mlflow_flavor.log_model(PipelineModel([Binarizer(inputCol="x", outputCol="y")]), "binarizer")
    assert mlflow.active_run() is None


def test_a_param_the_run_holds_with_another_value_is_logged_beside_it():
    from sparkps.spark.driver.tracking import params_to_log
    logged = {"model": "fm", "optimizer": "adam"}
    assert params_to_log({"model": "ctr-fm", "optimizer": "adam", "num_workers": "2"}, logged) == \
        {"sparkps.model": "ctr-fm", "num_workers": "2"}
    assert params_to_log({"model": "ctr-fm"}, {}) == {"model": "ctr-fm"}


def test_a_model_with_sharded_tables_logs_its_shard_files_and_scores_through_the_pyfunc(mlflow, autologged, clicks,
                                                                                      tmp_path):
    """The logged model carries the shard files (copied file by file, no table loaded) and its pyfunc scores through
    the join path: the probabilities of the same model with its tables inline."""
    import mlflow.pyfunc
    import mlflow.spark

    from sparkps.spark.ml import mlflow_flavor
    model, _ = autologged
    sharded = model.copy()
    sharded.spark_model = model.spark_model.with_sharded_tables(str(tmp_path / "sharded"))
    expected = probabilities(model.transform(clicks), index=1)
    with mlflow.start_run():
        info = mlflow_flavor.log_model(sharded, "ctr-sharded", pip_requirements=REQUIREMENTS)
    loaded = mlflow.spark.load_model(info.model_uri).stages[-1]
    assert loaded.spark_model.table_manifest == sharded.spark_model.table_manifest
    assert loaded.spark_model.tables_folder != sharded.spark_model.tables_folder       # the artifact's own copy
    pandas_rows = clicks.select("site", "app", "hour").toPandas()
    np.testing.assert_allclose(mlflow.pyfunc.load_model(info.model_uri).predict(pandas_rows), expected, atol=1e-6)

"""SparkTrainer.fit(initial_model=...): a fit starts from a SparkModel or a saved one (its dense weights here; the
tables' rows in tests/spark/ml/test_warm_start.py and tests/server/test_load_tables.py). A model that cannot start the
fit's network is one ConfigError naming the parameter or table, before any Spark job."""
import numpy as np
import pytest

from sparkps.errors import ConfigError
from sparkps.spark import SparkModel, SparkTrainer, mlp_symbol

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]   # several fits a test on a loaded machine

SGD = {"learning_rate": 0.1, "momentum": 0.9}


def trainer(layers=(64, 32, 10), **kw):
    settings = dict(batch_size=32, num_epoch=2, optimizer_params=SGD, progress=False, timeout=300, num_workers=2,
                    num_servers=1, seed=3)
    settings.update(kw)
    return SparkTrainer(mlp_symbol(list(layers)), (layers[0],), **settings)


@pytest.fixture(scope="module")
def frame(spark, digits):
    from pyspark.ml.linalg import Vectors
    X_train, y_train, _, _ = digits
    rows = [(Vectors.dense(x.tolist()), float(y)) for x, y in zip(X_train, y_train)]
    return spark.createDataFrame(rows, ["features", "label"]).repartition(2).cache()


@pytest.fixture(scope="module")
def yesterday(frame):
    return trainer().fit(frame)


def ran_jobs(spark):
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup())


def test_a_warm_fit_on_another_server_count_starts_from_the_saved_dense_weights(yesterday, frame, digits, tmp_path):
    _, _, X_test, _ = digits
    path = str(tmp_path / "yesterday")
    yesterday.save(path)
    still = trainer(optimizer_params={"learning_rate": 1e-9, "momentum": 0.0}, num_epoch=1, num_servers=2)
    warm = still.fit(frame, initial_model=path)
    np.testing.assert_allclose(warm.predict_numpy(X_test), yesterday.predict_numpy(X_test), atol=1e-5)
    cold = still.fit(frame)          # the same budget from the initializer: nowhere near
    assert np.abs(cold.predict_numpy(X_test) - yesterday.predict_numpy(X_test)).max() > 0.1


def test_a_model_of_another_layer_size_is_named_before_any_job(yesterday, frame, spark):
    jobs = ran_jobs(spark)
    with pytest.raises(ConfigError, match=r"parameter '\w+': the initial model holds shape \(32,?\), this fit's "
                                          r"network needs \(48,?\)"):
        trainer(layers=(64, 48, 10)).fit(frame, initial_model=yesterday)
    with pytest.raises(ConfigError, match=r"the initial model holds the parameter '\w+', which this fit's network "
                                          r"lacks: it is another network"):
        trainer(layers=(64, 10)).fit(frame, initial_model=yesterday)
    assert ran_jobs(spark) == jobs


def test_a_path_that_is_not_a_model_is_named(frame, tmp_path):
    with pytest.raises(ConfigError, match=r"%s is not a saved SparkModel" % tmp_path.name):
        trainer().fit(frame, initial_model=str(tmp_path))
    with pytest.raises(ConfigError, match=r"initial_model must be a SparkModel or the path of a saved model, got int"):
        trainer().fit(frame, initial_model=42)


def test_a_table_of_another_width_or_another_network_is_named(frame):
    from sparkps.ctr.features import FeatureSpec
    from sparkps.nets import build
    from sparkps.spark.common.typed_inputs import TypedInputs
    narrow = FeatureSpec(categorical=("site", "app"), embedding_dim=4)
    wide = FeatureSpec(categorical=("site", "app"), embedding_dim=8)
    inputs = TypedInputs(wide.input_parts())
    model = SparkModel(build("fm", narrow), {}, input_shape=(2,), input_layout=TypedInputs(narrow.input_parts()))
    ctr = SparkTrainer(build("fm", wide), None, inputs=inputs, label_name="ctr_label",
                       data_name=wide.input_parts()[0][0], num_workers=2, num_servers=1, progress=False)
    with pytest.raises(ConfigError, match=r"table 'embedding_weight': the initial model has rows 4 wide, this fit's "
                                          r"network 8 \(embedding width\)"):
        ctr.fit(frame, initial_model=model)
    other = SparkTrainer(build("deepfm", wide), None, inputs=inputs, label_name="ctr_label",
                         data_name=wide.input_parts()[0][0], num_workers=2, num_servers=1, progress=False)
    with pytest.raises(ConfigError, match=r"another network"):
        other.fit(frame, initial_model=SparkModel(build("lr", wide), {}, input_shape=(2,)))


def test_the_mlp_classifier_starts_from_its_fitted_model_and_keeps_its_layers(frame, digits):
    from sparkps.spark.ml.classifier import SparkpsClassifier
    _, _, X_test, _ = digits
    settings = dict(numWorkers=2, numServers=1, validationFraction=0.0, batchSize=32, seed=3)
    yesterday = SparkpsClassifier(layers=[64, 32, 10], numEpochs=2, **settings).fit(frame)
    # the layers come from the initial model; the learning rate moves nothing
    warm = SparkpsClassifier(initialModel=yesterday, numEpochs=1, learningRate=1e-9, momentum=0.0,
                             **settings).fit(frame)
    assert warm.getOrDefault("layers") == [64, 32, 10]
    np.testing.assert_allclose(warm.spark_model.predict_numpy(X_test), yesterday.spark_model.predict_numpy(X_test),
                               atol=1e-5)
    with pytest.raises(ConfigError, match=r"param layers is \[64, 48, 10\], but the initial model was trained with "
                                          r"layers=\[64, 32, 10\]"):
        SparkpsClassifier(initialModel=yesterday, layers=[64, 48, 10], **settings).fit(frame)

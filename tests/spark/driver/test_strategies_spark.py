"""The strategies through SparkTrainer and SparkpsClassifier on real Spark local[2], on the digits."""
import numpy as np
import pytest

from sparkps.errors import ConfigError
from sparkps.spark import SparkTrainer, mlp_symbol
from sparkps.spark.ml.classifier import SparkpsClassifier

pytestmark = pytest.mark.spark


def trainer(**kw):
    return SparkTrainer(mlp_symbol([64, 64, 10]), (64,), batch_size=32, num_epoch=8, num_workers=2, num_servers=1,
                        optimizer_params={"learning_rate": 0.1, "momentum": 0.5}, progress=False, timeout=120, **kw)


@pytest.mark.parametrize("kw,message", [
    (dict(kvstore="dist_sync", kvstore_params={"replicas_to_aggregate": 1}),
     "kvstore 'dist_sync' has no option(s) replicas_to_aggregate (known: none)"),
    (dict(kvstore="dist_model_averaging"), "kvstore must be one of dist_sync, dist_async, dist_sync_replicas"),
    (dict(gradient_compression={"type": "2bit", "treshold": 0.5}), "'2bit' has no option(s) treshold"),
    (dict(kvstore="dist_model_average", gradient_compression={"type": "2bit"}), "pushes weights, not gradients"),
])
def test_unknown_strategies_and_options_are_config_errors_naming_them(kw, message):
    with pytest.raises(ConfigError) as info:
        trainer(**kw)
    assert message in str(info.value)


def test_model_averaging_with_fp16_pushes_on_spark(spark, digits):
    X_train, y_train, X_test, y_test = digits
    model = trainer(kvstore="dist_model_average", kvstore_params={"interval_steps": 4},
                    gradient_compression={"type": "fp16"}).fit(
        spark.sparkContext.parallelize(list(zip(X_train, y_train)), 2))
    assert np.mean(model.predict_numpy(X_test).argmax(axis=1) == y_test) >= 0.93


def test_the_estimator_takes_mxnet_style_strategy_names_and_options(spark, digits):
    from pyspark.ml.linalg import Vectors
    X_train, y_train, X_test, y_test = digits
    frame = spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X_train, y_train)],
                                  ["features", "label"])
    classifier = SparkpsClassifier(layers=[64, 64, 10], numEpochs=8, batchSize=32, learningRate=0.1, momentum=0.5,
                                   kvstore="dist_sync_replicas", kvstoreParams=["replicas_to_aggregate=1"])
    model = classifier.fit(frame)
    test = spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X_test, y_test)],
                                 ["features", "label"])
    rows = model.transform(test).select("label", "prediction").collect()
    assert np.mean([r.label == r.prediction for r in rows]) >= 0.93

"""The pyspark.ml Estimator/Model pair inside a Pipeline, saved and loaded with DefaultParams* writers."""
import numpy as np
import pytest

pytestmark = pytest.mark.spark


def test_pipeline_fit_save_load_round_trip(spark, digits, tmp_path):
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.feature import StandardScaler
    from pyspark.ml.linalg import Vectors

    from sparkps.spark.ml import SparkpsClassificationModel, SparkpsClassifier
    X_train, y_train, X_test, y_test = digits

    def frame(X, y):
        return spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X, y)], ["raw", "target"])

    scaler = StandardScaler(inputCol="raw", outputCol="scaled")
    classifier = SparkpsClassifier(featuresCol="scaled", labelCol="target", layers=[64, 64, 10], numEpochs=8,
                                   batchSize=32, learningRate=0.05, predictionCol="digit")
    model = Pipeline(stages=[scaler, classifier]).fit(frame(X_train, y_train))
    test_df = frame(X_test, y_test)
    first = model.transform(test_df).select("target", "digit", "probability").collect()
    accuracy = np.mean([r.target == r.digit for r in first])
    assert accuracy >= 0.9, accuracy

    path = str(tmp_path / "pipeline")
    model.write().overwrite().save(path)
    loaded = PipelineModel.load(path)
    stage = loaded.stages[-1]
    assert isinstance(stage, SparkpsClassificationModel)
    assert stage.getOrDefault("predictionCol") == "digit" and stage.getOrDefault("layers") == [64, 64, 10]
    again = loaded.transform(test_df).select("target", "digit", "probability").collect()
    assert [r.digit for r in again] == [r.digit for r in first]
    np.testing.assert_allclose(np.stack([r.probability.toArray() for r in again]),
                               np.stack([r.probability.toArray() for r in first]), rtol=1e-5, atol=1e-6)

    classifier.write().overwrite().save(str(tmp_path / "estimator"))
    assert SparkpsClassifier.load(str(tmp_path / "estimator")).getOrDefault("numEpochs") == 8

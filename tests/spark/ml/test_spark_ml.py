"""The pyspark.ml Estimator/Model pair inside a Pipeline, saved and loaded with DefaultParams* writers."""
import numpy as np
import pytest

pytestmark = pytest.mark.spark


def test_pipeline_fit_save_load_round_trip(spark, digits, tmp_path):
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.feature import StandardScaler
    from pyspark.ml.linalg import Vectors

    from sparkps.spark.ml.classifier import SparkpsClassificationModel, SparkpsClassifier
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


def test_defaults_reach_090_on_the_digits_last_rows(spark):
    """Every param but layers at its default: >= 0.9 test accuracy on scikit-learn's digits, the first 1400 rows
    (file order, unshuffled) training and the last 397 testing, where scikit-learn's MLPClassifier reaches
    0.91-0.92 in 10 epochs. The defaults were chosen on rows 1150-1399 (benchmarks/digits_defaults.py), never on
    these test rows; with the former 10 epochs the accuracy sat at the 0.9 line (below it for some seeds)."""
    from pyspark.ml.linalg import Vectors
    from sklearn.datasets import load_digits

    from sparkps.spark.ml.classifier import SparkpsClassifier
    data = load_digits()
    rows = [(Vectors.dense((x / 16.0).tolist()), float(label)) for x, label in zip(data.data, data.target)]
    train = spark.createDataFrame(rows[:1400], ["features", "label"])
    test = spark.createDataFrame(rows[1400:], ["features", "label"])
    assert len(rows) - 1400 == 397
    scored = SparkpsClassifier(layers=[64, 64, 10]).fit(train).transform(test).select("label", "prediction")
    accuracy = np.mean([r.label == r.prediction for r in scored.collect()])
    assert accuracy >= 0.9, accuracy


def digit_frame(spark, X, y, extra=()):
    """(features, label, weight) rows: label 1 for digits >= 5 (a two-class problem); ``extra`` appended."""
    from pyspark.ml.linalg import Vectors, VectorUDT
    from pyspark.sql.types import DoubleType, StructField, StructType
    schema = StructType([StructField("features", VectorUDT()), StructField("label", DoubleType()),
                         StructField("weight", DoubleType())])
    rows = [(Vectors.dense(x), float(v >= 5), 1.0 + (i % 2)) for i, (x, v) in enumerate(zip(X, y))]
    return spark.createDataFrame(rows + list(extra), schema)


def test_mllib_columns_and_options(spark, digits, tmp_path):
    """rawPrediction for BinaryClassificationEvaluator's defaults; handleInvalid='skip' counts what it drops;
    weightCol; validationFraction stops early; checkpointDir gets each epoch."""
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.linalg import Vectors

    from sparkps.spark.ml.classifier import SparkpsClassifier
    X_train, y_train, X_test, y_test = digits
    bad = [(Vectors.dense(X_train[0]), float("nan"), 1.0), (Vectors.dense(X_train[1]), 7.0, 1.0),
           (Vectors.dense([float("nan")] * 64), 1.0, 1.0)]
    classifier = SparkpsClassifier(layers=[64, 32, 2], numEpochs=40, batchSize=32, learningRate=0.1,
                                   handleInvalid="skip", weightCol="weight", validationFraction=0.2,
                                   earlyStoppingPatience=1, checkpointDir=str(tmp_path / "checkpoints"))
    model = classifier.fit(digit_frame(spark, X_train, y_train, bad))
    assert model.skippedRows == 3
    epochs = len(model.history)
    losses = {entry["epoch"]: entry["validation-cross-entropy"] for entry in model.history
              if "validation-cross-entropy" in entry}                  # worker 0's scores, until it stopped
    assert 1 < epochs < 40 and 1 < len(losses)
    assert losses[model.bestEpoch] <= min(losses.values()) + 1e-4, (model.bestEpoch, losses)   # tolerance
    assert len(list((tmp_path / "checkpoints").iterdir())) >= epochs
    scored = model.transform(digit_frame(spark, X_test, y_test))
    assert {"rawPrediction", "probability", "prediction"} <= set(scored.columns)
    assert BinaryClassificationEvaluator().evaluate(scored) >= 0.95


def test_bad_weights_and_unknown_handle_invalid_are_refused(spark, digits):
    from sparkps.errors import ConfigError, DataError
    from sparkps.spark.ml.classifier import SparkpsClassifier
    df = digit_frame(spark, digits[0][:20], digits[1][:20]).withColumn("weight", F_when_row(3, -0.5))
    with pytest.raises(DataError, match=r"row 3: weight -0\.5 in column weight is not a finite number >= 0"):
        SparkpsClassifier(layers=[64, 2], weightCol="weight").fit(df)
    with pytest.raises(ConfigError, match="handleInvalid must be one of error, skip, keep"):
        SparkpsClassifier(layers=[64, 2], handleInvalid="drop").fit(df)


def F_when_row(row, value):
    """A column equal to ``value`` at the frame's row ``row`` and 1.0 elsewhere (rows numbered by order)."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window
    index = F.row_number().over(Window.orderBy(F.monotonically_increasing_id())) - 1
    return F.when(index == row, F.lit(value)).otherwise(F.lit(1.0))

"""weightCol as MLlib takes it: real weights >= 0 scale each row's gradient (a weighted loss, not repeated
rows).  With one worker and one full batch per epoch, training on weights w equals training on the rows
repeated w times, and on the weights w / 4: the gradient is that of the weighted mean loss either way."""
import numpy as np
import pytest

from sparkps.errors import ConfigError, DataError

pytestmark = pytest.mark.spark

ROWS = 60


def frame(spark, X, y, weights=None):
    from pyspark.ml.linalg import Vectors, VectorUDT
    from pyspark.sql.types import DoubleType, StructField, StructType
    fields = [StructField("features", VectorUDT()), StructField("label", DoubleType())]
    if weights is None:
        return spark.createDataFrame([(Vectors.dense(x), float(v)) for x, v in zip(X, y)], StructType(fields))
    fields.append(StructField("weight", DoubleType()))
    return spark.createDataFrame([(Vectors.dense(x), float(v), None if w is None else float(w))
                                  for x, v, w in zip(X, y, weights)],
                                 StructType(fields))


def fitted_probabilities(df, batch_size, test_df, weight_col=None):
    from sparkps.spark.ml.classifier import SparkpsClassifier
    options = {"weightCol": weight_col} if weight_col else {}
    classifier = SparkpsClassifier(layers=[64, 8, 2], numWorkers=1, numServers=1, batchSize=batch_size,
                                   numEpochs=4, learningRate=0.5, momentum=0.0, seed=1, **options)
    scored = classifier.fit(df).transform(test_df).select("probability").collect()
    return np.stack([row.probability.toArray() for row in scored])


@pytest.fixture(scope="module")
def two_class(digits):
    X, y = digits[0][:ROWS], (digits[1][:ROWS] >= 5).astype(np.float32)
    return X, y, 1.0 + np.arange(ROWS) % 3                        # weights 1, 2, 3, 1, 2, 3, ...


def test_weights_train_as_repeated_rows_do_and_fractions_as_their_multiples(spark, digits, two_class):
    X, y, weights = two_class
    test_df = frame(spark, digits[2][:50], digits[3][:50])
    repeat = weights.astype(int)
    repeated = fitted_probabilities(frame(spark, np.repeat(X, repeat, axis=0), np.repeat(y, repeat)),
                                    int(repeat.sum()), test_df)
    weighted = fitted_probabilities(frame(spark, X, y, weights), ROWS, test_df, "weight")
    np.testing.assert_allclose(weighted, repeated, atol=2e-4)
    # a quarter of each weight, plus a row of weight 0 with the wrong label: nothing changes
    X0, y0, w0 = np.vstack([X, X[:1]]), np.append(y, 1 - y[0]), np.append(weights / 4, 0.0)
    fractional = fitted_probabilities(frame(spark, X0, y0, w0), ROWS, test_df, "weight")
    np.testing.assert_allclose(fractional, repeated, atol=2e-4)
    unweighted = fitted_probabilities(frame(spark, X, y), ROWS, test_df)
    assert np.abs(unweighted - repeated).max() > 1e-3                # the weights did change the training


@pytest.mark.parametrize("bad, shown", [(-1.0, r"-1\.0"), (float("nan"), "nan"), (None, "None")])
def test_a_negative_nan_or_missing_weight_is_named_by_row_and_column(spark, two_class, bad, shown):
    from sparkps.spark.ml.classifier import SparkpsClassifier
    X, y, weights = two_class
    weights = list(weights)
    weights[7] = bad
    df = frame(spark, X, y, weights)
    with pytest.raises(DataError, match=r"^row 7: weight %s in column weight is not a finite number >= 0 "
                                        r"\(1 such weights\)$" % shown):
        SparkpsClassifier(layers=[64, 2], numWorkers=1, weightCol="weight").fit(df)


def test_all_zero_weights_and_a_weightless_head_are_refused(spark, two_class):
    from sparkps import symbol as sym
    from sparkps.spark import SparkTrainer
    X, y, _ = two_class
    from sparkps.spark.ml.classifier import SparkpsClassifier
    with pytest.raises(DataError, match="every weight in column weight is 0"):
        SparkpsClassifier(layers=[64, 2], numWorkers=1, weightCol="weight").fit(frame(spark, X, y, [0.0] * ROWS))
    net = sym.LinearRegressionOutput(sym.FullyConnected(sym.Variable("data"), num_hidden=1), name="out")
    trainer = SparkTrainer(net, (64,), num_workers=1, label_name="out_label", progress=False)
    with pytest.raises(ConfigError, match="weightCol needs a network whose output is a SoftmaxOutput"):
        trainer.fit(frame(spark, X, y, [1.0] * ROWS), weight_col="weight")

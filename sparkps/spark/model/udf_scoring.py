"""DataFrame scoring with UDFs, on classic and Spark Connect sessions alike (no SparkContext, no broadcast): a
pandas UDF over features as float32 Arrow arrays (prediction + probability out), and an Arrow UDF over a CTR
model's raw columns (typed ids and numeric values straight from Arrow, a click probability out). The model
travels in the UDF's closure as ``SparkModel.source`` (its payload, or the folder of its files)."""
import numpy as np

from sparkps.errors import DataError
from sparkps.spark.common.feature_blocks import FEATURES_TMP, features_as_arrays, stack_features
from sparkps.spark.common.worker_python import settle_worker_python

PROBABILITY_TMP = "__sparkps_probability"
RAW_FLOOR = 1e-30      # log-probabilities stay finite for probabilities that round to 0


def add_predictions(df, source, features_col, prediction_col, probability_col, raw_prediction_col=None):
    """``df`` plus ``prediction_col`` (double, arg-max of the first output), ``probability_col`` (Vector of
    the first output) and, when named, ``raw_prediction_col`` (Vector of log-probabilities: pyspark.ml's
    rawPrediction, a score that grows with each class's confidence, as BinaryClassificationEvaluator wants).
    Lazy; ``source`` is the model's source (``SparkModel.source``: its payload, or the folder of its files).

    A scalar pandas UDF over the features as float32 arrays returns both as one struct: only the features
    travel to Python (through Arrow), every other column stays in the JVM untouched.
    """
    import pandas as pd
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, FloatType, StructField, StructType
    check_outputs(df, prediction_col, probability_col, raw_prediction_col)
    settle_worker_python(df)      # before the UDF is wrapped: a freshly loaded model in a new program too
    prepared = features_as_arrays(df, features_col)
    result_type = StructType([StructField("prediction", DoubleType()),
                              StructField("probability", ArrayType(FloatType()))])
    from sparkps.spark.model.predictor import float_row_width
    num_features = float_row_width(source["input_shape"], source.get("input_layout"))

    def score(features):
        from sparkps.spark.model.predictor import predictor_for
        predictor = predictor_for(source)
        outputs = predictor.predict(stack_features(features, num_features, features_col)).reshape(len(features), -1)
        return pd.DataFrame({"prediction": outputs.argmax(axis=1).astype(np.float64) if len(features) else [],
                             "probability": list(outputs.astype(np.float32))})

    scored = prepared.withColumn(PROBABILITY_TMP, F.pandas_udf(score, result_type)(F.col(FEATURES_TMP)))
    return with_outputs(scored, prediction_col, probability_col, raw_prediction_col).drop(FEATURES_TMP)


def check_outputs(df, prediction_col, probability_col, raw_prediction_col=None):
    """DataError naming the first output column that ``df`` already has."""
    for name in (prediction_col, probability_col, raw_prediction_col):
        if name and name in df.columns:
            raise DataError("output column %r already exists in the DataFrame" % name)


def with_outputs(scored, prediction_col, probability_col, raw_prediction_col=None):
    """``scored`` (with the scoring UDF's struct in ``PROBABILITY_TMP``) plus the output columns, that struct
    dropped. Lazy."""
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F
    scored = (scored.withColumn(prediction_col, F.col(PROBABILITY_TMP + ".prediction"))
              .withColumn(probability_col, array_to_vector(F.col(PROBABILITY_TMP + ".probability"))))
    if raw_prediction_col:
        logs = F.transform(F.col(PROBABILITY_TMP + ".probability"),
                           lambda p: F.log(F.greatest(p.cast("double"), F.lit(RAW_FLOOR))))
        scored = scored.withColumn(raw_prediction_col, array_to_vector(logs))
    return scored.drop(PROBABILITY_TMP)


def add_click_probability(df, source, columns, feature_columns, output_col):
    """``df`` plus ``output_col``: a CTR model's click probability (double) for each row, from its raw feature
    columns. An Arrow UDF: ``columns`` (a ColumnFeaturizer) hashes each batch's categorical columns and
    standardises its numeric ones into the network's typed inputs (ids uint64, numeric float32), which the worker's
    cached Predictor reads as they are (no packed float planes). ``feature_columns``: the Spark columns the
    featurizer reads, in its order. Lazy."""
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType
    if output_col in df.columns:
        raise DataError("output column %r already exists in the DataFrame" % output_col)
    settle_worker_python(df)      # before the UDF is wrapped: a freshly loaded model in a new program too

    def score(*arrays):
        from sparkps.spark.model.predictor import predictor_for
        outputs = predictor_for(source).predict_inputs(columns.inputs(arrays))
        return pa.array(outputs[:, 0].astype(np.float64), pa.float64())

    return df.withColumn(output_col, F.arrow_udf(score, DoubleType())(*feature_columns))

"""DataFrame scoring with a pandas UDF: features as float32 Arrow arrays in, prediction + probability out."""
import numpy as np

from sparkps.errors import DataError

FEATURES_TMP = "__sparkps_features"
PROBABILITY_TMP = "__sparkps_probability"


def features_as_arrays(df, features_col):
    """``df`` with a float32 array column FEATURES_TMP made from ``features_col`` (Vector or array)."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, FloatType
    if features_col not in df.columns:
        raise DataError("features column %r not found; columns are %s" % (features_col, df.columns))
    column_type = df.schema[features_col].dataType
    if isinstance(column_type, VectorUDT) or type(column_type).__name__ == "VectorUDT":
        values = vector_to_array(F.col(features_col), dtype="float32")
    elif isinstance(column_type, ArrayType):
        values = F.col(features_col).cast(ArrayType(FloatType()))
    else:
        raise DataError("features column %r has type %s; expected a Vector or an array of numbers"
                        % (features_col, column_type.simpleString()))
    return df.withColumn(FEATURES_TMP, values)


def add_predictions(df, broadcast, features_col, prediction_col, probability_col):
    """``df`` plus ``prediction_col`` (double, arg-max of the first output) and ``probability_col``
    (Vector of the first output).  Lazy; ``broadcast`` holds the model payload (SparkModel.payload).

    A scalar pandas UDF over the features as float32 arrays returns both as one struct: only the features
    travel to Python (through Arrow), every other column stays in the JVM untouched.
    """
    import pandas as pd
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, FloatType, StructField, StructType
    for name in (prediction_col, probability_col):
        if name in df.columns:
            raise DataError("output column %r already exists in the DataFrame" % name)
    prepared = features_as_arrays(df, features_col)
    result_type = StructType([StructField("prediction", DoubleType()),
                              StructField("probability", ArrayType(FloatType()))])
    num_features = int(np.prod(broadcast.value["input_shape"]))

    def score(features):
        from sparkps.spark.predictor import predictor_for
        predictor = predictor_for(broadcast.value)
        outputs = predictor.predict(_stack(features, num_features)).reshape(len(features), -1)
        return pd.DataFrame({"prediction": outputs.argmax(axis=1).astype(np.float64) if len(features) else [],
                             "probability": list(outputs.astype(np.float32))})

    scored = prepared.withColumn(PROBABILITY_TMP, F.pandas_udf(score, result_type)(F.col(FEATURES_TMP)))
    return (scored.withColumn(prediction_col, F.col(PROBABILITY_TMP + ".prediction"))
            .withColumn(probability_col, array_to_vector(F.col(PROBABILITY_TMP + ".probability")))
            .drop(PROBABILITY_TMP, FEATURES_TMP))


def _stack(cells, num_features):
    """One (n, num_features) float32 matrix from a pandas Series of equal-length arrays."""
    if len(cells) == 0:
        return np.empty((0, num_features), np.float32)
    try:
        X = np.stack(cells.to_numpy()).astype(np.float32, copy=False)
    except ValueError:
        raise DataError("features rows have different lengths; expected %d each" % num_features) from None
    if X.ndim != 2 or X.shape[1] != num_features:
        raise DataError("features of shape %s, expected %d per row" % (X.shape[1:], num_features))
    return X

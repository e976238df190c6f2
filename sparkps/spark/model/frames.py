"""DataFrame scoring with UDFs, on classic and Spark Connect sessions alike (no SparkContext, no broadcast): a
pandas UDF over features as float32 Arrow arrays (prediction + probability out), and an Arrow UDF over a CTR
model's raw columns (typed ids and numeric values straight from Arrow, a click probability out). The model
travels in the UDF's closure as ``SparkModel.source`` (its payload, or the folder of its files)."""
import numpy as np

from sparkps.errors import DataError
from sparkps.spark.common.worker_python import settle_worker_python

FEATURES_TMP = "__sparkps_features"
PROBABILITY_TMP = "__sparkps_probability"
RAW_FLOOR = 1e-30      # log-probabilities stay finite for probabilities that round to 0


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


def add_predictions(df, source, features_col, prediction_col, probability_col, raw_prediction_col=None):
    """``df`` plus ``prediction_col`` (double, arg-max of the first output), ``probability_col`` (Vector of
    the first output) and, when named, ``raw_prediction_col`` (Vector of log-probabilities: pyspark.ml's
    rawPrediction, a score that grows with each class's confidence, as BinaryClassificationEvaluator wants).
    Lazy; ``source`` is the model's source (``SparkModel.source``: its payload, or the folder of its files).

    A scalar pandas UDF over the features as float32 arrays returns both as one struct: only the features
    travel to Python (through Arrow), every other column stays in the JVM untouched.
    """
    import pandas as pd
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, FloatType, StructField, StructType
    for name in (prediction_col, probability_col, raw_prediction_col):
        if name and name in df.columns:
            raise DataError("output column %r already exists in the DataFrame" % name)
    settle_worker_python(df)      # before the UDF is wrapped: a freshly loaded model in a new program too
    prepared = features_as_arrays(df, features_col)
    result_type = StructType([StructField("prediction", DoubleType()),
                              StructField("probability", ArrayType(FloatType()))])
    num_features = int(np.prod(source["input_shape"]))

    def score(features):
        from sparkps.spark.model.predictor import predictor_for
        predictor = predictor_for(source)
        outputs = predictor.predict(_stack(features, num_features)).reshape(len(features), -1)
        return pd.DataFrame({"prediction": outputs.argmax(axis=1).astype(np.float64) if len(features) else [],
                             "probability": list(outputs.astype(np.float32))})

    scored = prepared.withColumn(PROBABILITY_TMP, F.pandas_udf(score, result_type)(F.col(FEATURES_TMP)))
    scored = (scored.withColumn(prediction_col, F.col(PROBABILITY_TMP + ".prediction"))
              .withColumn(probability_col, array_to_vector(F.col(PROBABILITY_TMP + ".probability"))))
    if raw_prediction_col:
        logs = F.transform(F.col(PROBABILITY_TMP + ".probability"),
                           lambda p: F.log(F.greatest(p.cast("double"), F.lit(RAW_FLOOR))))
        scored = scored.withColumn(raw_prediction_col, array_to_vector(logs))
    return scored.drop(PROBABILITY_TMP, FEATURES_TMP)


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


BLOCK_BYTES = 128 << 20    # largest dense Arrow batch of features worth building in one piece


def blocks_fit(df, num_features):
    """True when a dense float32 Arrow batch of the session's batch size stays under BLOCK_BYTES (wide
    sparse data is better streamed row by row, densifying one mini-batch at a time)."""
    rows = int(df.sparkSession.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000") or 10000)
    return rows * int(num_features) * 4 <= BLOCK_BYTES


def frame_to_blocks(df, features_col, label_col, num_features, weight_col=None):
    """An RDD of ``(X float32 (n, num_features), y float32 (n,))`` blocks, one per Arrow batch, from the
    DataFrame's features (Vector or array) and label columns; with ``weight_col`` X has one more column, the
    rows' weights.  Vectorised: no Python object per row.  Keeps the DataFrame's partitions.  Lazy."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType
    for name in (features_col, label_col, weight_col):
        if name and name not in df.columns:
            raise DataError("DataFrame has no column %r; columns are %s" % (name, df.columns))
    columns = [F.col(FEATURES_TMP), F.col(label_col).cast("float").alias("label")]
    if weight_col:
        columns.append(F.col(weight_col).cast("float").alias("weight"))
    settle_worker_python(df)
    prepared = features_as_arrays(df, features_col).select(*columns)
    width = num_features + (1 if weight_col else 0)
    schema = StructType([StructField("X", BinaryType()), StructField("y", BinaryType()),
                         StructField("rows", IntegerType())])

    def encode(frames):
        import pandas as pd
        for frame in frames:
            if len(frame) == 0:
                continue
            X = _stack(frame[FEATURES_TMP], num_features)
            if weight_col:
                X = np.concatenate([X, frame["weight"].to_numpy(np.float32).reshape(-1, 1)], axis=1)
            if frame["label"].isna().any():
                raise DataError("label column %r has a null" % label_col)
            y = frame["label"].to_numpy(np.float32)
            yield pd.DataFrame({"X": [X.tobytes()], "y": [y.tobytes()], "rows": [len(X)]})

    def decode(row):
        X = np.frombuffer(row.X, np.float32).reshape(row.rows, width)
        return X, np.frombuffer(row.y, np.float32)

    return prepared.mapInPandas(encode, schema).rdd.map(decode)

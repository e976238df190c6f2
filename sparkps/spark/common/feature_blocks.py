"""A DataFrame's features column (a Vector or an array of numbers) recognised, read as arrays and stacked into
float32 blocks: what a fit's input path (``sparkps.spark.driver.training_input``, ``schema``, ``input_rows``) and
the scoring UDFs (``sparkps.spark.model.udf_scoring``) share. Lazy Spark expressions and plain numpy; no Spark job.
"""
import numpy as np

from sparkps.errors import DataError
from sparkps.spark.common.worker_python import settle_worker_python

FEATURES_TMP = "__sparkps_features"


def is_vector(data_type):
    """True for a pyspark.ml Vector column type (``VectorUDT``), classic or Spark Connect: matched by its class
    name, since a Connect session's schema may carry the VectorUDT of another pyspark module than the one imported
    here."""
    return type(data_type).__name__ == "VectorUDT"


def feature_values(df, features_col):
    """The features column of ``df`` as an array<double> expression (a Vector's values, or the numeric array cast)."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F
    column = F.col(features_col)
    return vector_to_array(column) if is_vector(df.schema[features_col].dataType) else column.cast("array<double>")


def features_as_arrays(df, features_col):
    """``df`` with a float32 array column FEATURES_TMP made from ``features_col`` (Vector or array)."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, FloatType
    if features_col not in df.columns:
        raise DataError("features column %r not found; columns are %s" % (features_col, df.columns))
    from pyspark.sql.types import NumericType
    column_type = df.schema[features_col].dataType
    if is_vector(column_type):      # a null Vector stays null (Spark's vector_to_array fails on one, in the JVM)
        values = F.when(F.col(features_col).isNotNull(), vector_to_array(F.col(features_col), dtype="float32"))
    elif isinstance(column_type, ArrayType) and isinstance(column_type.elementType, NumericType):
        values = F.col(features_col).cast(ArrayType(FloatType()))
    else:
        raise DataError("features column %r has type %s; expected a Vector or an array of numbers"
                        % (features_col, column_type.simpleString()))
    return df.withColumn(FEATURES_TMP, values)


def stack_features(cells, num_features, column=None):
    """One (n, num_features) float32 matrix from a pandas Series of equal-length arrays; ``column``: the features
    column they come from, named by the DataError for a null row."""
    if len(cells) == 0:
        return np.empty((0, num_features), np.float32)
    if cells.isna().any():
        raise null_features(column or "features", int(np.flatnonzero(cells.isna().to_numpy())[0]))
    try:
        X = np.stack(cells.to_numpy()).astype(np.float32, copy=False)
    except ValueError:
        raise DataError("features rows have different lengths; expected %d each" % num_features) from None
    if X.ndim != 2 or X.shape[1] != num_features:
        raise DataError("features of shape %s, expected %d per row" % (X.shape[1:], num_features))
    return X


def null_features(column, row):
    """The DataError of a null row (``row``: its index in its batch) in features column ``column``."""
    return DataError("features column %r holds a null row (row %d of a batch): every row needs its "
                     "features; drop or fill the null rows first (df.dropna(subset=[%r]))" % (column, row, column))


def arrow_features(cells, num_features, column):
    """One (n, num_features) float32 matrix from an Arrow list array of float32 features (``FEATURES_TMP``),
    read from its buffers (no Python object per row); DataError naming ``column`` for a null row, a null value or a
    row of another length."""
    import pyarrow as pa
    if isinstance(cells, pa.ChunkedArray):
        cells = cells.combine_chunks()
    if not len(cells):
        return np.empty((0, num_features), np.float32)
    if cells.null_count:
        raise null_features(column, int(np.flatnonzero(cells.is_null().to_numpy(zero_copy_only=False))[0]))
    offsets = cells.offsets.to_numpy(zero_copy_only=False)
    lengths = np.diff(offsets)
    if (lengths != num_features).any():
        raise DataError("features column %r: a row holds %d values, expected %d per row"
                        % (column, int(lengths[lengths != num_features][0]), num_features))
    values = cells.flatten()
    if values.null_count:
        raise DataError("features column %r holds a null value inside a row: every feature needs a number"
                        % column)
    return values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(cells), num_features)


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
            X = stack_features(frame[FEATURES_TMP], num_features, features_col)
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

"""The data a fit's barrier stage reads, shaped on the driver: the session it runs on, a DataFrame's columns for the
Arrow stage or an RDD of rows for the RDD stage, dealt into exactly one partition per worker (Spark refuses a
barrier stage over a coalesced input), and a small validation set collected into arrays. Lazy plans, except where a
function says it collects.

    session = session_for(data)
    frame, reader = frame_input(df, workers, 'features', 'label', None, None, inputs, ids=False, num_features=64)
    rdd, places = partitioned(as_rdd(data, 'features', 'label', 64), workers, tag=True)
    X, y = validation_arrays(validation_df, 'features', 'label', None, inputs, ids=False, num_features=64)

(What the pyspark.ml estimators do to their rows before this, handleInvalid, weights, held-out rows, is
:mod:`sparkps.spark.driver.input_rows`.)
"""
import numpy as np

from sparkps.errors import ConfigError, DataError
from sparkps.spark.common.row_places import tag_rows
from sparkps.spark.common.session import is_connect, is_frame, session_of
from sparkps.spark.driver.input_rows import row_draw
from sparkps.spark.driver.placement import rdd_refused


def session_for(data):
    """The SparkSession a fit of ``data`` runs on: a DataFrame's own, or the classic session of an RDD's context.
    ConfigError for anything else, and for an RDD while the active session is a Spark Connect one (it has none)."""
    session = session_of(data)
    if session is not None:
        return session
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if not hasattr(data, "mapPartitions"):
        if active is not None and is_connect(active):
            raise rdd_refused(type(data).__name__)
        raise ConfigError("fit needs an RDD or a DataFrame, got %s" % type(data).__name__)
    if active is not None and is_connect(active):
        raise rdd_refused()
    return SparkSession(data.context) if active is None else active


def wide_rows(df, typed, width):
    """True for a classic DataFrame of one features column too wide for dense Arrow batches (``blocks_fit``): it
    trains in the RDD stage from its rows (sparse vectors stay sparse until a mini-batch is built)."""
    if typed or is_connect(df):
        return False
    from sparkps.spark.common.feature_blocks import blocks_fit
    return not blocks_fit(df, width)


def frame_input(df, workers, features_col, label_col, weight_col, reader, inputs, ids, num_features,
                order_seed=None):
    """``(DataFrame of the columns the task reads, dealt into ``workers`` partitions, reader)``: with ``reader``
    the frame as it is; with ``inputs`` (a TypedInputs) its named input columns and the label, read by a
    TypedReader; else the features column (float32 arrays, or with ``ids`` the 64-bit ids in their own type), the
    label and the ``weight_col``, read by a FeatureReader of ``num_features``. ``order_seed``: see ``dealt``.
    ConfigError naming a missing column."""
    from pyspark.sql import functions as F

    from sparkps.spark.common.arrow_inputs import FeatureReader, TypedReader
    if reader is None and inputs is not None:
        missing = [c for c in inputs.names + [label_col] if c not in df.columns]
        if missing:
            raise ConfigError("DataFrame has no column(s) %s for the inputs %s; columns are %s"
                              % (missing, inputs.names, df.columns))
        df = df.select(*[F.col(n) for n in inputs.names], F.col(label_col).cast("float").alias(label_col))
        reader = TypedReader(inputs, label_col)
    elif reader is None:
        from sparkps.spark.common.feature_blocks import FEATURES_TMP, features_as_arrays
        # ids keep their column's own type (bigint, or whole doubles checked in the task), never a cast
        features = _id_values(df, features_col) if ids else F.col(FEATURES_TMP)
        columns = [features, F.col(label_col).cast("float").alias(label_col)]
        if weight_col:
            if weight_col not in df.columns:
                raise ConfigError("DataFrame has no column %r; columns are %s" % (weight_col, df.columns))
            columns.append(F.col(weight_col).cast("float").alias(weight_col))
        df = (df if ids else features_as_arrays(df, features_col)).select(*columns)
        reader = FeatureReader(num_features, ids=ids, weight=bool(weight_col),
                               names=(features_col, label_col, weight_col))
    return dealt(df, workers, order_seed), reader


def validation_arrays(data, features_col, label_col, reader, inputs, ids, num_features):
    """``(X, y)`` of a small validation DataFrame or RDD, collected on the driver (a DataFrame through the
    training data's reader, as Arrow: ``frame_input``'s, or ``reader`` itself). DataError when it has no rows or
    is too large to ship to every task. Blocks on the collect."""
    from sparkps.spark.task.early_stopping import check_size
    if not is_frame(data):
        return _collected_arrays(data, features_col, label_col, num_features)
    from sparkps.spark.common.arrow_inputs import read_blocks
    if reader is None and inputs is None:
        from sparkps.spark.driver.schema import check_schema
        check_schema(data, features_col, label_col)
    frame, reader = frame_input(data, 1, features_col, label_col, None, reader, inputs, ids, num_features) \
        if reader is None else (data, reader)
    blocks = list(read_blocks(reader, frame.toArrow().to_batches()))
    if not blocks:
        raise DataError("the validation data has no rows")
    X, y = np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])
    check_size(X)
    return X, y


def _collected_arrays(data, features_col, label_col, num_features):
    """``(X float32, y float32)`` of a small validation DataFrame or RDD, collected on the driver."""
    from sparkps.spark.common.batches import is_block, iter_batches
    from sparkps.spark.task.early_stopping import check_size
    if is_frame(data):
        from sparkps.spark.driver.schema import check_schema
        check_schema(data, features_col, label_col)
        rows = data.select(features_col, label_col).collect()
    else:
        rows = data.collect()
    if not rows:
        raise DataError("the validation data has no rows")
    pairs = [(row[0], row[1]) for row in rows]
    size = sum(len(row[1]) if is_block(row[0]) else 1 for row in pairs)     # an RDD of blocks holds many rows
    X, y = next(iter_batches(iter(pairs), size, num_features))
    check_size(X)
    return X, y


def _id_values(df, features_col):
    """The features column of a network reading 64-bit ids, as an array column of its own element type (a Vector's
    values as doubles: the task accepts whole numbers below 2**53 from them and names the row of any other)."""
    from pyspark.sql import functions as F
    if features_col not in df.columns:
        raise ConfigError("DataFrame has no column %r; columns are %s" % (features_col, df.columns))
    from sparkps.spark.common.feature_blocks import is_vector
    if is_vector(df.schema[features_col].dataType):
        from pyspark.ml.functions import vector_to_array
        return vector_to_array(F.col(features_col)).alias(features_col)
    return F.col(features_col)


def dealt(df, num_workers, order_seed=None):
    """``df`` in exactly ``num_workers`` partitions, rows dealt evenly: a shuffle unless it has that many already
    and its plan ends in no coalesce (Spark refuses a barrier stage over a coalesced input). A Spark Connect frame's
    partitions cannot be counted from the client, so it is always dealt. The deal itself is Spark's round robin over
    each input partition's rows sorted first, so which rows reach which worker depends only on the input's
    partitioning; the order a worker reads them in is the order the shuffle's blocks arrive in, which is the map
    order on a local master but varies from run to run on a cluster: with ``order_seed`` a dealt frame's rows are
    read in the order of a seeded hash of their values instead (``input_rows.row_draw``), so the first epoch and
    every later shuffle of it are the same for a seed. Lazy."""
    if not is_connect(df) and df.rdd.getNumPartitions() == num_workers and not _coalesced(df):
        return df
    spread = df.repartition(num_workers)
    return spread if order_seed is None else spread.sortWithinPartitions(row_draw(df, order_seed, salt=1))


def _coalesced(df):
    """True when the physical plan of a classic DataFrame coalesces partitions (or cannot be read)."""
    try:
        return "Coalesce" in str(df._jdf.queryExecution().executedPlan().toString())
    except Exception:     # no JVM plan to read: deal the rows, which is always allowed
        return True


def as_rdd(data, features_col, label_col, num_features, weight_col=None):
    """An RDD of rows from an RDD; from a DataFrame (``features_col``, ``label_col``) an RDD of float32
    blocks, or of rows when the features are too wide for dense Arrow batches.  With ``weight_col`` each
    row's weight follows its features as one more column."""
    if is_frame(data):
        from sparkps.spark.common.feature_blocks import blocks_fit, frame_to_blocks
        if blocks_fit(data, num_features + (1 if weight_col else 0)):
            return frame_to_blocks(data, features_col, label_col, num_features, weight_col)
        missing = [c for c in (features_col, label_col, weight_col) if c and c not in data.columns]
        if missing:
            raise ConfigError("DataFrame has no column(s) %s; columns are %s" % (missing, data.columns))
        if weight_col:
            from sparkps.spark.task.row_weights import with_weight
            return data.select(features_col, label_col, weight_col).rdd.map(with_weight)
        return data.select(features_col, label_col).rdd
    if not hasattr(data, "mapPartitions"):
        raise ConfigError("fit needs an RDD or a DataFrame, got %s" % type(data).__name__)
    return data


def partitioned(rdd, num_workers, tag=False):
    """``(rdd, row_places)``: exactly ``num_workers`` partitions (a shuffle when the count differs: Spark
    refuses a barrier stage over a coalesced RDD).  With ``tag`` the tasks can name a row by its place in
    ``rdd`` (row_places 'partition': task p reads input partition p; 'tagged': elements were tagged with
    their place before the shuffle, see sparkps.spark.common.row_places); else row_places is None."""
    if rdd.getNumPartitions() != num_workers:
        if tag:
            return rdd.mapPartitionsWithIndex(tag_rows).repartition(num_workers), "tagged"
        return rdd.repartition(num_workers), None
    return rdd, "partition" if tag else None

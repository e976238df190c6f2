"""What the pyspark.ml estimator does to its input rows before training: invalid rows (handleInvalid), row
weights (weightCol) and the held-out validation share (validationFraction).  Lazy DataFrame plans, plus one
aggregation when rows may be dropped or weighted.

    rows = prepare_rows(df, 'features', 'label', 'skip', num_classes=10, weight_col=None)
    rows.frame, rows.skipped          # the rows to train on, how many were dropped
    rows.weight_col                   # None, or the column of weights normalised to mean 1 (weightCol)
    train, validation = held_out(rows.frame, 0.1, seed=0)
"""
import logging
from collections import namedtuple

from sparkps.errors import ConfigError, DataError
from sparkps.spark.common.feature_blocks import feature_values
from sparkps.spark.driver.schema import check_schema, first_bad_label
from sparkps.spark.task.row_weights import ROW_WEIGHT

LOG = logging.getLogger("sparkps.spark")
HANDLE_INVALID = ("error", "skip", "keep")

PreparedRows = namedtuple("PreparedRows", ["frame", "skipped", "weight_col"])


def prepare_rows(df, features_col, label_col, handle_invalid="error", num_classes=None, weight_col=None):
    """The rows to train on, as PreparedRows(frame, skipped, weight_col).

    ``handle_invalid``: 'error' leaves the rows to the trainer's checks (which fail naming the first bad row),
    'skip' drops rows with a null, NaN, fractional or out-of-range label or null/NaN features (and logs
    how many), 'keep' turns null/NaN feature values into 0.  ``weight_col``: real weights >= 0, as MLlib
    takes them; rows of weight 0 are dropped and the others get a column (PreparedRows.weight_col) of their
    weights over the mean weight, by which training scales each row's gradient (sparkps.spark.task.row_weights).
    Blocks on one aggregation over the weights (and one more to name the row of a bad weight).
    """
    if handle_invalid not in HANDLE_INVALID:
        raise ConfigError("handleInvalid must be one of %s, got %r" % (", ".join(HANDLE_INVALID), handle_invalid))
    check_schema(df, features_col, label_col)
    skipped = 0
    if handle_invalid == "skip":
        df, skipped = _skip_invalid(df, features_col, label_col, num_classes)
    elif handle_invalid == "keep":
        df = _zero_invalid_features(df, features_col)
    if weight_col:
        return PreparedRows(_weighted(df, weight_col), skipped, ROW_WEIGHT)
    return PreparedRows(df, skipped, None)


def held_out(df, fraction, seed=0):
    """``(train, validation)``: a ``fraction`` of the rows held out (validation None for 0), drawn from a seeded
    hash of each row's values (:func:`row_draw`), so the same seed holds out the same rows whatever the input's
    partitioning, the order of its rows or how often the sides are read, and the sides never overlap. Both sides
    keep the input's order (``DataFrame.randomSplit`` sorts every partition by all columns first: a label in the
    first column would reach the first epoch, which streams rows in order, sorted by label). Rows with the same
    values in every column fall on the same side. Lazy: no Spark job, nothing cached."""
    held = held_out_rows(df, fraction, seed)
    if held is None:
        return df, None
    return df.where(~held), df.where(held)


def held_out_rows(df, fraction, seed=0):
    """A boolean column, True on the rows :func:`held_out` holds out of ``df`` (None for a ``fraction`` of 0): an
    aggregation over ``df`` can count either side in the same pass (``CTRFeaturizer.fit_stats``). ConfigError for
    a fraction outside [0, 1). Lazy."""
    fraction = float(fraction or 0.0)
    if fraction == 0.0:
        return None
    if not 0.0 < fraction < 1.0:
        raise ConfigError("validationFraction must be in [0, 1), got %r" % fraction)
    return row_draw(df, seed) < fraction


def check_held_out(held, rows, fraction):
    """DataError when :func:`held_out` drew none of ``rows`` input rows (``held``: the held-out rows counted) for
    validation, saying why (the draw goes by each row's values) and what to change. Needs no Spark."""
    if rows and not held:
        raise DataError("validationFraction=%g held out none of the %d rows: the draw hashes each row's values, and "
                        "rows equal in every column fall on the same side; set validationFraction=0 (nothing held "
                        "out) or give more distinct rows" % (float(fraction), rows))


def row_draw(df, seed=0, salt=0):
    """A column of numbers in [0, 1), one a row, from a 64-bit hash (Spark's ``xxhash64``) of ``seed``, ``salt``
    and the row's values in every column Spark can hash (all but maps): the same for a row however the input is
    partitioned or ordered, uniform across rows with different values. ConfigError when no column can be hashed."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType
    columns = [F.col("`%s`" % field.name.replace("`", "``")) for field in df.schema.fields
               if not isinstance(field.dataType, MapType)]
    if not columns:
        raise ConfigError("cannot draw rows of a DataFrame whose columns are all maps (%s)" % df.columns)
    bits = F.xxhash64(F.lit(int(seed)), F.lit(int(salt)), *columns).bitwiseAND(F.lit(_MANTISSA - 1))
    return bits.cast("double") / float(_MANTISSA)


_MANTISSA = 1 << 53


def _skip_invalid(df, features_col, label_col, num_classes):
    from pyspark.sql import functions as F
    y = F.col(label_col).cast("double")
    bad_label = y.isNull() | F.isnan(y) | (F.abs(y) == float("inf")) | (y != F.floor(y))
    if num_classes is not None:
        bad_label = bad_label | (y < 0) | (y >= num_classes)
    values = feature_values(df, features_col)
    bad_features = F.col(features_col).isNull() | F.exists(values, lambda v: v.isNull() | F.isnan(v))
    flagged = df.withColumn("__sparkps_invalid", F.coalesce(bad_label | bad_features, F.lit(True)))
    counts = flagged.agg(F.count(F.lit(1)).alias("rows"),
                         F.sum(F.col("__sparkps_invalid").cast("int")).alias("invalid")).first()
    skipped = int(counts["invalid"] or 0)
    if skipped:
        LOG.warning("handleInvalid='skip': skipped %d of %d rows (a null, NaN or out-of-range label, or "
                    "null/NaN features)", skipped, counts["rows"])
    return flagged.filter(~F.col("__sparkps_invalid")).drop("__sparkps_invalid"), skipped


def _zero_invalid_features(df, features_col):
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F
    cleaned = F.transform(feature_values(df, features_col),
                          lambda v: F.when(v.isNull() | F.isnan(v), F.lit(0.0)).otherwise(v))
    return df.withColumn(features_col, array_to_vector(cleaned))


def _weighted(df, weight_col):
    """``df`` without its rows of weight 0 and with a ROW_WEIGHT column: the weights over their mean.
    DataError naming the row and the column of a null, NaN, infinite or negative weight, or when every
    weight is 0."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType
    if weight_col not in df.columns:
        raise ConfigError("weightCol %r is not a column; the columns are %s" % (weight_col, df.columns))
    if not isinstance(df.schema[weight_col].dataType, NumericType):
        raise ConfigError("Column %s must be of type numeric but was actually of type %s"
                          % (weight_col, df.schema[weight_col].dataType.simpleString()))
    w = F.col(weight_col).cast("double")
    bad = w.isNull() | F.isnan(w) | (F.abs(w) == float("inf")) | (w < 0)
    facts = df.agg(F.sum(F.when(bad, 1).otherwise(0)).alias("bad"),
                   F.sum(F.when(~bad & (w > 0), w)).alias("total"),
                   F.sum(F.when(~bad & (w > 0), 1).otherwise(0)).alias("positive")).first()
    if facts["bad"]:
        row, value = first_bad_label(df, weight_col, "weight")
        raise DataError("row %d: weight %r in column %s is not a finite number >= 0 (%d such weights)"
                        % (row, value, weight_col, facts["bad"]))
    if not facts["positive"]:
        raise DataError("every weight in column %s is 0: there is nothing to train on" % weight_col)
    mean = facts["total"] / facts["positive"]
    return df.filter(w > 0).withColumn(ROW_WEIGHT, w / F.lit(mean))

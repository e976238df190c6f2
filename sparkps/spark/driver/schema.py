"""Schema and data checks made on the driver before any training task starts, in MLlib's words.

    labels = check_schema(df, 'features', 'label')             # types only: no Spark job
    facts = scan_labels(df, 'label')                            # one aggregation over the label column
    check_labels(facts, num_classes=10)                         # raises DataError naming the input row

``scan_labels`` runs one Spark job (an aggregation over the label column: rows, nulls, non-finite values,
fractions, min and max); only when a label is bad does a second job find its row.  Row numbers count the
DataFrame's rows from 0 in its own order (for a single input file, its data lines in order).
"""
import logging

from sparkps.errors import ConfigError, DataError
from sparkps.spark.common.feature_blocks import feature_values, is_vector

LOG = logging.getLogger("sparkps.spark")


def check_schema(df, features_col, label_col):
    """Refuse a DataFrame whose columns cannot train: missing columns, a non-numeric label (MLlib's
    "must be of type numeric", with the StringIndexer advice) or features that are not a Vector or an array
    of numbers.  Looks at the schema only: no Spark job."""
    from pyspark.sql.types import ArrayType, NumericType
    missing = [c for c in (features_col, label_col) if c not in df.columns]
    if missing:
        raise ConfigError("the DataFrame has no column(s) %s; its columns are %s" % (missing, df.columns))
    label_type = df.schema[label_col].dataType
    if not isinstance(label_type, NumericType):
        raise ConfigError("Column %s must be of type numeric but was actually of type %s. Index string labels "
                          "first with pyspark.ml.feature.StringIndexer(inputCol=%r, outputCol=...)"
                          % (label_col, label_type.simpleString(), label_col))
    features_type = df.schema[features_col].dataType
    if is_vector(features_type):
        return
    if isinstance(features_type, ArrayType) and isinstance(features_type.elementType, NumericType):
        return
    raise ConfigError("Column %s must be of type vector or array<numeric> but was actually of type %s. "
                      "Assemble numeric columns with pyspark.ml.feature.VectorAssembler"
                      % (features_col, features_type.simpleString()))


def classes_from_metadata(df, label_col):
    """The class count StringIndexer (or any pyspark.ml attribute) recorded on the label column, or None."""
    attr = (df.schema[label_col].metadata or {}).get("ml_attr") or {}
    if attr.get("vals"):
        return len(attr["vals"])
    if attr.get("num_vals"):
        return int(attr["num_vals"])
    return None


def scan_labels(df, label_col, features_col=None, num_features=None):
    """One aggregation over ``label_col`` (and ``features_col``, a vector or numeric array, when given, whose
    rows should hold ``num_features`` values): {'rows', 'nulls', 'non_finite', 'fractional', 'min', 'max',
    'bad_features', 'bad_width'}."""
    from pyspark.sql import functions as F
    y = F.col("y")
    finite = ~F.isnan(y) & (F.abs(y) != float("inf"))
    bad = F.lit(False) if features_col is None else bad_features(df, features_col)
    width = F.lit(False) if features_col is None or num_features is None else \
        bad_width(df, features_col, num_features)
    row = df.select(F.col(label_col).cast("double").alias("y"), bad.alias("bad"), width.alias("width")).agg(
        F.sum(F.col("bad").cast("int")).alias("bad_features"),
        F.sum(F.coalesce(F.col("width"), F.lit(False)).cast("int")).alias("bad_width"),
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.when(y.isNull(), 1).otherwise(0)).alias("nulls"),
        F.sum(F.when(~finite, 1).otherwise(0)).alias("non_finite"),
        F.sum(F.when(finite & (y != F.floor(y)), 1).otherwise(0)).alias("fractional"),
        F.min(F.when(finite, y)).alias("min"),
        F.max(F.when(finite, y)).alias("max")).first()
    return {key: row[key] if row[key] is not None else 0 for key in
            ("rows", "nulls", "non_finite", "fractional", "bad_features", "bad_width")} | \
        {"min": row["min"], "max": row["max"]}


def bad_width(df, features_col, num_features):
    """A boolean column: the row's features do not hold ``num_features`` values (null for null features)."""
    from pyspark.sql import functions as F
    return F.size(feature_values(df, features_col)) != F.lit(int(num_features))


def check_width(facts, num_features, where):
    """Raise DataError naming the first row whose features do not hold ``num_features`` values (``where()``
    gives ``(row, width)``)."""
    if facts.get("bad_width"):
        row, width = where()
        raise DataError("row %d: features hold %d values but the network takes %d (%d such rows)"
                        % (row, width, num_features, facts["bad_width"]))


def first_bad_width(df, features_col, num_features):
    """``(row, width)`` of the first row, in the DataFrame's order, whose features do not hold
    ``num_features`` values (one Spark job; the error path only)."""
    from pyspark.sql import functions as F
    found = first_where(df.select(F.size(feature_values(df, features_col)).alias("n")),
                        lambda n: n is not None and n >= 0 and n != num_features)
    return (found[1], found[0]) if found else (-1, -1)


def bad_features(df, features_col):
    """A boolean column: the row's features are null or hold a null, NaN or infinite value."""
    from pyspark.sql import functions as F
    column = F.col(features_col)
    values = feature_values(df, features_col)
    return column.isNull() | F.exists(values, lambda v: v.isNull() | F.isnan(v) | (F.abs(v) == float("inf")))


def check_features(facts, where):
    """Raise DataError naming the first row whose features are null, NaN or infinite (``where()`` gives
    its row)."""
    if facts.get("bad_features"):
        row = where()
        raise DataError("row %d: features are null or hold NaN or infinity (%d such rows); drop or fill them, "
                        "or use handleInvalid='skip' or 'keep' with the estimator" % (row, facts["bad_features"]))


def first_bad_features(df, features_col):
    """The 0-based row index, in the DataFrame's order, of the first row with bad features (one Spark job)."""
    found = first_where(df.select(bad_features(df, features_col).alias("bad")), bool)
    return found[1] if found else -1


def check_labels(facts, num_classes=None, where=None):
    """Raise DataError for no rows, or (through ``where``, a function of a predicate name returning
    ``(row, value)``) for the first null, non-finite, fractional or out-of-range label.

    ``num_classes`` None (a regression output) skips the class checks.
    """
    if not facts["rows"]:
        raise DataError("the training data has no rows")
    problems = [("nulls", "is null"), ("non_finite", "is not a finite number")]
    if num_classes is not None:
        problems.append(("fractional", "is not a whole number"))
    for key, what in problems:
        if facts[key]:
            _raise_at(where, key, "%s (%d such labels)" % (what, facts[key]), num_classes)
    if num_classes is not None and (facts["min"] < 0 or facts["max"] >= num_classes):
        _raise_at(where, "range", "is outside [0, %d)" % num_classes, num_classes)


def _raise_at(where, key, what, num_classes):
    row, value = where(key) if where is not None else (None, None)
    place = "row %d: label %r" % (row, value) if row is not None else "a label"
    advice = (" (labels must be class indices 0..%d; index other labels with StringIndexer)"
              % (num_classes - 1)) if num_classes else ""
    raise DataError("%s %s%s" % (place, what, advice))


def first_bad_label(df, label_col, key, num_classes=None):
    """``(row, value)`` of the first label of the kind ``key`` names, counting rows from 0 in the
    DataFrame's order (one Spark job; used only on the error path)."""
    import math
    test = {"nulls": lambda v: v is None,
            "non_finite": lambda v: v is not None and not math.isfinite(v),
            "fractional": lambda v: v is not None and math.isfinite(v) and v != math.floor(v),
            "range": lambda v: v is not None and num_classes is not None and not 0 <= v < num_classes,
            "binary": lambda v: v is not None and math.isfinite(v) and v not in (0.0, 1.0),
            "weight": lambda v: v is None or not math.isfinite(v) or v < 0}[key]
    found = first_where(df.select(label_col), lambda v: test(None if v is None else float(v)))
    return (found[1], found[0]) if found else (None, None)


def first_where(df, test):
    """``(value, row)`` of the first row, counting from 0 in the DataFrame's order, whose one column's value passes
    ``test``; None when none does. A classic session asks Spark (one job, ``zipWithIndex``); a Spark Connect one,
    which has no RDDs, reads the column as Arrow on the driver (the error path only)."""
    from sparkps.spark.common.session import is_connect
    if is_connect(df):
        for row, value in enumerate(df.toArrow().column(0).to_pylist()):
            if test(value):
                return value, row
        return None
    found = df.rdd.map(lambda r: r[0]).zipWithIndex().filter(lambda pair: test(pair[0])).take(1)
    return found[0] if found else None


def checked_workers(rows, num_workers, num_servers):
    """``(workers, servers)`` for ``rows`` training rows: fewer workers, with a warning, when there are
    fewer rows than workers (a worker with no rows has nothing to train on)."""
    if rows >= num_workers:
        return num_workers, num_servers
    workers = max(int(rows), 1)
    LOG.warning("the training data has %d rows, fewer than the %d workers asked for: training with %d "
                "worker(s)", rows, num_workers, workers)
    return workers, min(num_servers, workers)

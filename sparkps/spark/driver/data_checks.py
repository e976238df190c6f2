"""The driver's checks of a fit's training data, made before any task starts; they decide how many workers and
servers the fit runs (never more workers than rows) and raise ConfigError / DataError naming the column or the input
row at fault. The checks themselves, in MLlib's words, are :mod:`sparkps.spark.driver.schema`'s.

    workers, servers = check_training_data(df, 'features', 'label', num_workers=2, num_servers=1,
                                           num_classes=10, num_features=64)
"""
from sparkps.errors import ConfigError, DataError
from sparkps.spark.common.session import is_frame


def check_training_data(data, features_col, label_col, num_workers, num_servers, num_classes, num_features,
                        known_rows=None, typed=False):
    """Driver-side checks before any task starts; returns ``(workers, servers)`` for this fit.

    A DataFrame: schema (label numeric, features a vector or numeric array), then one aggregation over
    the label column (no rows, nulls, NaN, fractions, labels out of the network's ``num_classes``, named by
    input row).  An RDD: ``take(num_workers)`` (no rows, fewer rows than workers). ``typed``: the frame's named
    inputs are checked where they enter (the task), its labels here. ``known_rows``: the caller checked its
    frame already (no Spark job). Blocks on those Spark jobs."""
    from sparkps.spark.driver import schema
    if known_rows is not None:       # the caller checked its frame (the CTR estimator's one pass)
        return schema.checked_workers(int(known_rows), num_workers, num_servers)
    if is_frame(data) and typed:     # named inputs: their columns are checked where they enter (the task)
        if label_col not in data.columns:
            raise ConfigError("the DataFrame has no column %r; its columns are %s" % (label_col, data.columns))
        facts = schema.scan_labels(data, label_col)
        schema.check_labels(facts, num_classes,
                            where=lambda key: schema.first_bad_label(data, label_col, key, num_classes))
        return schema.checked_workers(facts["rows"], num_workers, num_servers)
    if is_frame(data):
        schema.check_schema(data, features_col, label_col)
        classes = _classes_of(data, label_col, num_classes)
        try:
            width = int(num_features)
            facts = schema.scan_labels(data, label_col, features_col, width)
        except Exception as exc:    # the frame's own lineage failed (a UDF, a missing file): one line
            from sparkps.spark.driver.stage import describe_stage_error
            cause = describe_stage_error(exc).replace("a Spark task failed: ", "", 1)
            raise DataError("reading the training data failed: %s" % cause) from None
        schema.check_labels(facts, classes,
                            where=lambda key: schema.first_bad_label(data, label_col, key, classes))
        schema.check_features(facts, where=lambda: schema.first_bad_features(data, features_col))
        schema.check_width(facts, width, where=lambda: schema.first_bad_width(data, features_col, width))
        rows = facts["rows"]
    else:
        if not hasattr(data, "mapPartitions"):
            raise ConfigError("fit needs an RDD or a DataFrame, got %s" % type(data).__name__)
        rows = len(data.take(num_workers))
        if not rows:
            raise DataError("the training data has no rows")
    return schema.checked_workers(rows, num_workers, num_servers)


def _classes_of(df, label_col, num_classes):
    """The network's class count, checked against StringIndexer's label metadata when present."""
    from sparkps.spark.driver.schema import classes_from_metadata
    indexed = classes_from_metadata(df, label_col)
    if indexed is not None and num_classes is not None and indexed != num_classes:
        raise ConfigError("column %s has %d classes (its StringIndexer metadata) but the network predicts %d;"
                          " make the last layer %d wide" % (label_col, indexed, num_classes, indexed))
    return num_classes

"""Training input for the Spark job: any path or table Spark can read, as a DataFrame of (features, label).

    frame = read_input(spark, path='data/train.parquet')                        # format from the content
    frame = read_input(spark, table='db.clicks', label_col='y', features_cols=['a', 'b'])
    frame = read_input(spark, path='out/csv-folder/', fmt='csv', label_col='_c0')

The format comes from ``fmt`` or the content (sparkps.io.formats, the rule the CLI uses too).  The
features are a Vector column named ``features`` when the input has one, else ``features_cols``, else every
other numeric column, assembled with VectorAssembler.  The label column keeps its type; the jobs index a string
label as RFormula does (``index_string_label``), and the trainer's schema checks refuse any other non-numeric one
with MLlib's advice (StringIndexer) instead of a cast to null.
"""
import contextlib
import logging

from sparkps.errors import ConfigError, DataError
from sparkps.io.formats import csv_has_header, detect_format

LOG = logging.getLogger("sparkps.spark")
FEATURES = "features"


def read_input(spark, path=None, table=None, fmt=None, num_features=None, label_col="label",
               features_cols=None):
    """A DataFrame (``features`` Vector, ``label_col``) from ``path`` or ``table``.  Runs one small Spark
    job (is the input empty?); raises ConfigError naming the path, table or column at fault and DataError
    ("the training data has no rows") for an empty input."""
    if bool(path) == bool(table):
        raise ConfigError("give either a path or a table as input, not %s" % ("both" if path else "neither"))
    name = path or "table %s" % table
    frame = read_table(spark, table) if table else _read_path(spark, path, fmt, num_features)
    if label_col not in frame.columns:
        hint = " (a CSV file without a header names its columns _c0, _c1, ...)" if "_c0" in frame.columns else ""
        raise ConfigError("%s has no label column %r; its columns are %s%s: give --label-col"
                          % (name, label_col, _shown(frame.columns), hint))
    if frame.isEmpty():
        raise DataError("the training data has no rows (%s)" % name)
    return frame.select(features_column(frame, label_col, features_cols, name), label_col)


def features_column(frame, label_col, features_cols=None, name="the input"):
    """The ``features`` Vector column of ``frame``: its own, or ``features_cols`` (else every numeric
    column but the label) assembled.  ConfigError names a missing or non-numeric column."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType
    types = {field.name: field.dataType for field in frame.schema.fields}
    if not features_cols and FEATURES in types and FEATURES != label_col:
        return F.col(FEATURES)
    if features_cols:
        missing = [c for c in features_cols if c not in types]
        if missing:
            raise ConfigError("%s has no feature column(s) %s; its columns are %s"
                              % (name, missing, _shown(frame.columns)))
        chosen = list(features_cols)
    else:
        chosen = [c for c in frame.columns if c != label_col]
    wrong = [c for c in chosen if not isinstance(types[c], NumericType)]
    if wrong:
        raise ConfigError("column %s of %s is of type %s, not numeric: choose the feature columns with "
                          "--features-cols, or index it with StringIndexer first"
                          % (wrong[0], name, types[wrong[0]].simpleString()))
    if not chosen:
        raise ConfigError("%s has no feature columns besides the label %r" % (name, label_col))
    return _assembled(chosen)


def _assembled(chosen):
    """A dense Vector of the columns ``chosen``; a null becomes NaN, which the training tasks report with
    its row (VectorAssembler would fail on it inside Spark, without the row)."""
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F
    cells = [F.coalesce(F.col(c).cast("double"), F.lit(float("nan"))) for c in chosen]
    return array_to_vector(F.array(*cells)).alias(FEATURES)


def _read_path(spark, path, fmt, num_features):
    kind = detect_format(path, fmt)
    if kind == "libsvm":
        reader = spark.read.format("libsvm")
        if num_features:
            reader = reader.option("numFeatures", str(num_features))
        return reader.load(path)
    if kind == "csv":
        header = csv_has_header(path)
        return spark.read.option("header", str(header).lower()).option("inferSchema", "true").csv(path)
    return spark.read.format(kind).load(path)


def read_table(spark, table):
    """The DataFrame of ``table`` (any name Spark's catalog knows); ConfigError naming it when it is unknown."""
    try:
        return spark.table(table)
    except Exception as exc:   # AnalysisException: the table is unknown to the catalog
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError("cannot read table %s: %s" % (table, first[:300])) from None


def _shown(columns, limit=12):
    return columns if len(columns) <= limit else columns[:limit] + ["... (%d in all)" % len(columns)]


def index_string_label(train, others, label_col):
    """``(train, others, class names)``: a string ``label_col`` indexed as MLlib's RFormula indexes a string label
    (StringIndexer, most frequent first, ties by name), fitted on ``train`` and applied to ``train`` and each of
    ``others`` (None kept); a numeric label as it is, with class names None.  A label in ``others`` that
    ``train`` lacks is a ConfigError naming it.  Blocks for one Spark job (the label counts)."""
    from pyspark.ml.feature import StringIndexer
    from pyspark.sql.types import StringType
    if label_col not in train.columns or not isinstance(train.schema[label_col].dataType, StringType):
        return train, others, None
    indexed = label_col + "__indexed"
    indexer = StringIndexer(inputCol=label_col, outputCol=indexed, stringOrderType="frequencyDesc",
                            handleInvalid="error").fit(train)     # unseen labels are named below
    names = list(indexer.labels)

    def index(frame):
        if frame is None:
            return None
        unseen = frame.select(label_col).distinct().where(~frame[label_col].isin(names)).limit(1).collect()
        if unseen:
            raise ConfigError("label %r of column %r is not among the training labels %s"
                              % (unseen[0][0], label_col, names[:10]))
        return indexer.transform(frame).drop(label_col).withColumnRenamed(indexed, label_col)
    return index(train), [index(frame) for frame in others], names


@contextlib.contextmanager
def local_input(spark, path):
    """``path`` as a path Python's file I/O reads on the driver (the formats read there: libffm, dummy, the CTR job's
    libsvm): itself on the local disk; a store's file or folder (a Spark URI) copied through Spark's Hadoop file
    systems into a temporary folder, removed when the block ends; a ConfigError or DataError raised in the block names
    ``path``, not the copy. ConfigError naming ``path`` when no file system reaches it. Blocks on the copy."""
    import os
    import shutil
    import tempfile

    from sparkps.spark.model.storage import files_for, get_folder, is_uri
    if not is_uri(path):
        yield path
        return
    files = files_for(path, spark)
    if not files.exists(path):
        raise DataError("%s: no such file or folder" % path)
    folder = tempfile.mkdtemp(prefix="sparkps-input-")
    try:
        local = os.path.join(folder, os.path.basename(str(path).rstrip("/")) or "input")
        if files.isdir(path):
            get_folder(files, path, local)
        else:
            files.get_file(path, local)
        try:
            yield local
        except (ConfigError, DataError) as exc:      # a bad line named by file:line, in the user's own URI
            raise type(exc)(str(exc).replace(local, str(path).rstrip("/"))) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)

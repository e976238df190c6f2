"""The cells of a CTR input Spark reads (CSV, Parquet, ORC, a table) checked before training, a bad one named by its
file (or table), row and column: the ``--bad-lines`` policy of jobs/train_ctr.py beyond Criteo's TSV.

    frame, skipped = checked_cells(frame, "train.csv", "click", numeric_cols=["hour"], bad_lines="error")

A bad cell: an empty (null) label, a label that is not a number (``nan`` included) or not 0 or 1, and a cell of a
numeric column that Spark read as text and that is not a number.  Empty cells elsewhere are missing values (a
categorical column's: the field's missing id; a numeric column's: NaN, standardised as missing).  A label column of
strings none of which is a number is two class names, indexed later (sparkps.spark.submit.inputs).

With ``error`` the first bad row found is one DataError naming ``file:line`` (a local CSV file), else the file and
its row (counted from 1 in the file, as Spark reads it), or, for a table not backed by files, the row's cells.
With ``skip`` bad rows are dropped and counted.  Blocks for one Spark job (two with skip: the count).
"""
from sparkps.errors import DataError

BAD = "_sparkps_bad_cell"
EXTRA = "_sparkps_extra_cell"     # a CSV read's column past the header's last: set on lines with too many cells
FILE, BLOCK, ORDER = "_sparkps_file", "_sparkps_block", "_sparkps_order"
LABEL_RULE = "a click label is 0 or 1"


def checked_cells(frame, name, label_col, numeric_cols=(), bad_lines="error", csv=False):
    """(``frame`` without its bad rows, a label that holds numbers as doubles; how many rows were dropped).
    ``csv``: the frame is Spark's read of CSV files with a header (a bad row is named by its file line)."""
    from pyspark.sql import functions as F
    if label_col not in frame.columns:
        return frame.drop(EXTRA), 0          # the estimator names the missing column
    checks, numeric_label = cell_checks(frame, label_col, numeric_cols)
    if EXTRA in frame.columns:
        checks.insert(0, (EXTRA, F.col(EXTRA).isNotNull(), "more cells than the header's %d columns"
                          % (len(frame.columns) - 1)))
    located, has_files = with_places(frame)
    problem = F.coalesce(*[F.when(bad, F.lit(i)) for i, (_, bad, _) in enumerate(checks)])
    flagged = located.withColumn(BAD, problem)
    skipped = 0
    if bad_lines == "skip":
        skipped = flagged.where(F.col(BAD).isNotNull()).count()
    else:
        first = flagged.where(F.col(BAD).isNotNull()).first()
        if first is not None:
            raise DataError(bad_cell_message(flagged, first, checks, name, has_files, csv))
    kept = flagged.where(F.col(BAD).isNull()).select(*[c for c in frame.columns if c != EXTRA])
    if numeric_label:
        kept = kept.withColumn(label_col, F.col(label_col).try_cast("double"))
    return kept, skipped


def cell_checks(frame, label_col, numeric_cols):
    """([(column, Column true where the cell is bad, what is wrong)], whether the label holds numbers), in the
    order a row's first fault is reported.  Blocks for one small Spark job when the label column holds text."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType
    types = {field.name: field.dataType for field in frame.schema.fields}
    label = F.col(label_col)
    y = label.try_cast("double")
    checks = [(label_col, label.isNull(), "is empty: " + LABEL_RULE)]
    numeric_label = not isinstance(types[label_col], StringType) or \
        not frame.where(y.isNotNull()).isEmpty()
    if numeric_label:
        checks += [(label_col, y.isNull(), "is not a number: " + LABEL_RULE),
                   (label_col, F.isnan(y), "is NaN: " + LABEL_RULE),
                   (label_col, ~y.isin(0.0, 1.0), "is not 0 or 1: " + LABEL_RULE)]
    for column in numeric_cols:
        if column in types and isinstance(types[column], StringType):
            checks.append((column, F.col(column).isNotNull() & F.col(column).try_cast("double").isNull(),
                           "is not a number (a numeric column; an empty cell is a missing value)"))
    return checks, numeric_label


def with_places(frame):
    """(``frame`` with each row's file, block start and read order, True), or (``frame``, False) for a source
    without files (a table of rows in memory)."""
    from pyspark.sql import functions as F
    if not frame.inputFiles():
        return frame, False
    try:
        located = frame.select("*", F.col("_metadata.file_path").alias(FILE),
                               F.col("_metadata.file_block_start").alias(BLOCK),
                               F.monotonically_increasing_id().alias(ORDER))
        return located, True
    except Exception:      # AnalysisException (analysed at select): a source without files has no _metadata
        return frame, False


def bad_cell_message(flagged, row, checks, name, has_files, csv=False):
    """The message of the flagged ``row``: where it is, its column, its value and what is wrong."""
    column, _, why = checks[row[BAD]]
    value = row[column]
    if column == EXTRA:
        return "%s: %s (the first extra cell: %r)" % (place(flagged, row, name, has_files, csv), why, value)
    what = why if value is None else "holds %r, which %s" % (value, why)
    return "%s: column %r %s" % (place(flagged, row, name, has_files, csv), column, what)


def place(flagged, row, name, has_files, csv=False):
    """``file:line`` for a local CSV file, ``file, row N`` for other files, else ``name`` and the row's cells."""
    from pyspark.sql import functions as F
    if not has_files:
        cells = {k: v for k, v in row.asDict().items() if k != BAD}
        return "%s, the row %s" % (name, _shown(cells))
    same_file = flagged.where(F.col(FILE) == row[FILE])
    before = same_file.where((F.col(BLOCK) < row[BLOCK])
                             | ((F.col(BLOCK) == row[BLOCK]) & (F.col(ORDER) < row[ORDER]))).count()
    path = _local(row[FILE])
    line = _csv_line(path, before) if csv and path else None
    shown = path or row[FILE]
    return "%s:%d" % (shown, line) if line else "%s, row %d" % (shown, before + 1)


def _csv_line(path, row):
    from sparkps.io.formats import input_line
    try:
        return input_line(path, "csv", row)
    except (OSError, ValueError):
        return None


def _local(uri):
    from urllib.parse import unquote, urlparse
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("", "file") else None


def _shown(cells, limit=8):
    items = list(cells.items())
    text = ", ".join("%s=%r" % kv for kv in items[:limit])
    return "(%s%s)" % (text, ", ..." if len(items) > limit else "")

"""Criteo TSV read by Spark, its bad lines found before training and named by ``file:line`` and column.

    frame, skipped = read_criteo(spark, "day0.tsv", bad_lines="error")   # DataError at the first bad line
    frame, skipped = read_criteo(spark, "day0.tsv", bad_lines="skip")    # bad lines dropped, counted

Spark reads every cell as a string (so a bad cell never becomes a Java NumberFormatException inside a task);
one pass over the data flags the lines that are not Criteo's (40 cells, a 0/1 or -1 label, integers or empty
cells in I1-I13; the session's CSV column pruning is turned off for that), and the first one is found again in
its file on the driver to name its line and column.
An empty cell is a missing value (I columns: NaN, standardised as such; C columns: the field's missing id);
``nan`` or any other non-integer in I1-I13 is a bad line.  Blocks for that pass (a Spark job).
"""
from sparkps.ctr.files import CRITEO_CATEGORICAL, CRITEO_NUMERIC, check_criteo_line
from sparkps.errors import DataError

BAD_LINES = ("error", "skip")
CORRUPT = "_sparkps_criteo_line"
BAD = "_sparkps_bad_line"
COLUMNS = ("label",) + CRITEO_NUMERIC + CRITEO_CATEGORICAL


def read_criteo(spark, path, bad_lines="error"):
    """(DataFrame of label and I1-I13 as doubles, C1-C26 as strings; the number of lines skipped)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType
    # a line's width is checked only when the parser reads every cell, not the columns a query needs
    spark.conf.set("spark.sql.csv.parser.columnPruning.enabled", "false")
    schema = StructType([StructField(c, StringType()) for c in COLUMNS + (CORRUPT,)])
    raw = spark.read.csv(path, sep="\t", schema=schema, header=False, mode="PERMISSIVE",
                         columnNameOfCorruptRecord=CORRUPT)
    integer = [F.col(c).isNotNull() & F.col(c).try_cast("long").isNull() for c in CRITEO_NUMERIC]
    bad = F.col(CORRUPT).isNotNull() | ~F.coalesce(F.col("label").isin("0", "1", "-1"), F.lit(False))
    for check in integer:
        bad = bad | check
    flagged = raw.withColumn(BAD, bad)
    skipped = 0
    if bad_lines == "skip":
        skipped = int(flagged.agg(F.sum(F.col(BAD).cast("int"))).collect()[0][0] or 0)
    else:
        first = flagged.where(F.col(BAD)).select(F.input_file_name().alias("file"), CORRUPT, *COLUMNS).first()
        if first is not None:
            raise bad_line_error(first)
    label = F.when(F.col("label") == "1", 1.0).otherwise(0.0).alias("label")
    numeric = [F.col(c).try_cast("long").cast("double").alias(c) for c in CRITEO_NUMERIC]
    return flagged.where(~F.col(BAD)).select(label, *numeric, *CRITEO_CATEGORICAL), skipped


def bad_line_error(row):
    """The DataError of a flagged row: its file line found again on the driver, the problem named by column."""
    text = row[CORRUPT] if row[CORRUPT] is not None else "\t".join(row[c] or "" for c in COLUMNS)
    path = _local(row["file"])
    lineno = _find_line(path, text) if path else None
    where = "%s:%d" % (path, lineno) if lineno else "%s (a line starting %r)" % (row["file"], text[:60])
    try:
        check_criteo_line(where, text)
    except DataError as exc:
        return exc
    return DataError("%s: not a Criteo line (label, I1-I13, C1-C26)" % where)


def _find_line(path, text):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                if line.rstrip("\r\n") == text:
                    return number
    except OSError:
        return None
    return None


def _local(uri):
    from urllib.parse import unquote, urlparse
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("", "file") else None

"""train_ctr's --bad-lines error|skip for every input kind: libffm / dummy / libsvm lines read on the driver
(sparkps.ctr.files), CSV / Parquet / ORC files and tables read by Spark (sparkps.spark.submit.ctr_cells): error names
file:line (or file and row, or table) and column; skip drops and counts, printed as criteo's count is."""
import types

import pytest

from sparkps.ctr.files import LinePolicy, one_feature_per_field, read_dummy, read_libffm, read_libsvm_ids
from sparkps.errors import ConfigError, DataError
from tests.spark.submit.test_job_flags import job_module

GOOD = {"libffm": "1 0:3:1 1:2:1", "dummy": "1 3 7", "libsvm": "0 3:1 7:1"}
BAD = {"libffm": ("1 0:3:1 1:4", r":3: malformed feature '1:4' \(column 3; expected field:feature:value\)"),
       "dummy": ("-1 3 x", r":3: feature index 'x' is not an integer \(column 3\)"),
       "libsvm": ("2 3:1 7:1", r":3: label '2' must be 0 or 1")}
READERS = {"libffm": read_libffm, "dummy": read_dummy, "libsvm": read_libsvm_ids}


@pytest.mark.parametrize("fmt", sorted(GOOD))
def test_driver_formats_name_the_bad_line_or_skip_it(fmt, tmp_path):
    path = tmp_path / ("in." + fmt)
    path.write_text("\n".join([GOOD[fmt], GOOD[fmt], BAD[fmt][0], GOOD[fmt]]) + "\n")
    with pytest.raises(DataError, match=str(path) + BAD[fmt][1]):
        READERS[fmt](str(path))
    policy = LinePolicy("skip")
    rows = READERS[fmt](str(path), bad_lines=policy)
    assert policy.skipped == 1 and len(rows.labels) == 3 and list(rows.lines) == [1, 2, 4]


def test_a_row_of_another_width_is_a_bad_line(tmp_path):
    path = tmp_path / "in.dummy"
    path.write_text("1 3 7\n0 2 8\n1 3\n0 4 9\n")
    with pytest.raises(DataError, match=r"in.dummy:3: expected 2 features \(one per field, as most rows hold\), got 1"):
        one_feature_per_field(read_dummy(str(path)), str(path))
    policy = LinePolicy("skip")
    rows, width = one_feature_per_field(read_dummy(str(path)), str(path), policy)
    assert (width, policy.skipped, list(rows.lines), rows.ids.tolist()) == (2, 1, [1, 2, 4], [3, 7, 2, 8, 4, 9])


def job_args(fmt, bad_lines, numeric=""):
    return types.SimpleNamespace(format=fmt, bad_lines=bad_lines, label_col="click", numeric_cols=numeric)


def write_csv(path, bad_row):
    rows = ["click,site,hour", "0,a,1", "1,b,2", bad_row, "0,c,4"]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


@pytest.mark.spark
@pytest.mark.parametrize("bad_row,message", [
    ("2,a,3", "column 'click' holds 2, which is not 0 or 1: a click label is 0 or 1"),
    ("x,a,3", "column 'click' holds 'x', which is not a number: a click label is 0 or 1"),
    ("nan,a,3", "column 'click' holds 'nan', which is NaN: a click label is 0 or 1"),
    (",a,3", "column 'click' is empty: a click label is 0 or 1"),
    ("1,a,x", "column 'hour' holds 'x', which is not a number"),
])
def test_csv_cells_name_file_line_and_column(spark, tmp_path, bad_row, message, capsys):
    job = job_module("train_ctr")
    path = write_csv(tmp_path / "t.csv", bad_row)
    with pytest.raises(DataError) as error:
        job.read(spark, job_args("csv", "error", "hour"), path)
    assert str(error.value).startswith("%s:4: %s" % (path, message)), str(error.value)
    if bad_row != "nan,a,3":
        return                     # skip once: it drops what error names
    frame = job.read(spark, job_args("csv", "skip", "hour"), path)[0]
    assert frame.count() == 3 and dict(frame.dtypes)["click"] == "double"
    assert "train_ctr: %s: skipped 1 bad lines (--bad-lines skip)" % path in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_parquet_and_orc_cells_name_file_row_and_column(spark, tmp_path, fmt, capsys):
    job = job_module("train_ctr")
    folder = str(tmp_path / fmt)
    spark.createDataFrame([(0.0, "a"), (1.0, "b"), (float("nan"), "c"), (1.0, "d")], ["click", "site"]) \
        .coalesce(1).write.format(fmt).save(folder)
    with pytest.raises(DataError, match=r"%s/part-[^,]+, row 3: column 'click' holds nan, which is NaN" % folder):
        job.read(spark, job_args(fmt, "error"), folder)
    assert job.read(spark, job_args(fmt, "skip"), folder)[0].count() == 3
    assert "train_ctr: %s: skipped 1 bad rows (--bad-lines skip)" % folder in capsys.readouterr().err


@pytest.mark.spark
def test_a_table_row_is_named_by_its_cells(spark):
    job = job_module("train_ctr")
    spark.createDataFrame([(1.0, "a"), (None, "b")], "click double, site string").createOrReplaceTempView("ctr_bad")
    with pytest.raises(DataError, match=r"table ctr_bad, the row \(click=None, site='b'\): column 'click' is empty"):
        job.read(spark, job_args("auto", "error"), None, "ctr_bad")
    assert job.read(spark, job_args("auto", "skip"), None, "ctr_bad")[0].count() == 1


def test_the_job_takes_orc_tables_and_skip_for_every_format(tmp_path):
    job = job_module("train_ctr")
    args = job.parse_args(["--input-table", "db.t", "--test-table", "db.v", "--bad-lines", "skip"])
    assert (args.input_table, args.test_table) == ("db.t", "db.v")
    assert job.parse_args(["--train", "a", "--test", "b", "--format", "orc"]).format == "orc"
    path = tmp_path / "t.ffm"
    path.write_text("1 0:3:1\n")
    args = job.parse_args(["--train", str(path), "--test", str(path), "--bad-lines", "skip"])
    job.settle_format(args)        # libffm with skip: no longer refused
    assert args.format == "libffm"


def test_format_orc_on_a_text_file_is_refused_naming_both(tmp_path):
    from sparkps.errors import ConfigError
    job = job_module("train_ctr")
    path = tmp_path / "day0.ffm"
    path.write_text("1 0:3:1\n")
    args = job.parse_args(["--train", str(path), "--test", str(path), "--format", "orc"])
    with pytest.raises(ConfigError, match="--format orc, but --train %s holds libffm" % path):
        job.settle_format(args)


@pytest.mark.spark
@pytest.mark.parametrize("lines,message", [
    (["click,site,hour", "0,a,1", "1,b,2,surplus", "0,c,4"],
     r"t.csv:3: more cells than the header's 3 columns \(the first extra cell: 'surplus'\)"),
    (["0,a,1", "1,b,2"], r"--train .*t.csv has no header line: its first line \(0,a,1\) holds none of the columns"),
    (["click,site,hour"], r"t.csv holds no rows \(a header line only\)"),
])
def test_csv_extra_cells_no_header_and_no_rows_are_named(spark, tmp_path, lines, message):
    job = job_module("train_ctr")
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    args = types.SimpleNamespace(format="csv", bad_lines="error", label_col="click", numeric_cols="hour",
                                 categorical_cols="site", multi_value_cols="")
    with pytest.raises((DataError, ConfigError), match=message):
        job.read(spark, args, str(path))


@pytest.mark.spark
def test_a_corrupt_parquet_file_is_one_line_naming_it(spark, tmp_path):
    job = job_module("train_ctr")
    path = tmp_path / "c.parquet"
    path.write_bytes(b"PAR1" + bytes(range(200)) + b"PAR1")
    with pytest.raises(DataError, match=r"--train .*c.parquet cannot be read as parquet: \[FAILED_READ_FILE") as error:
        job.read(spark, job_args("parquet", "error"), str(path))
    assert "\n" not in str(error.value)


@pytest.mark.spark
def test_test_columns_label_kinds_and_one_class_are_checked_before_training(spark):
    job = job_module("train_ctr")
    args = types.SimpleNamespace(format="csv", label_col="click", train="a.csv", test="b.csv", input_table=None,
                                 test_table=None)
    train = spark.createDataFrame([(1.0, "a"), (1.0, "b")], ["click", "site"])
    with pytest.raises(ConfigError, match=r"--test b.csv has no column 'site' \(--categorical-cols\)"):
        job.check_columns(spark.createDataFrame([(1.0, "a")], ["click", "sight"]), "b.csv", "--test", args,
                          ["site"], [], [])
    with pytest.raises(ConfigError, match=r"holds strings in --train a.csv but numbers in --test b.csv"):
        job.check_label_types(spark.createDataFrame([("yes", "a")], ["click", "site"]), train, "click", args)
    with pytest.raises(DataError, match=r"--train a.csv: every label of column 'click' is 1.0"):
        job.check_label_classes(train, "click", "a.csv")

"""The job's inputs: Parquet files and folders, Spark-written CSV folders and tables, features from a vector
column, chosen columns or every numeric column; an empty input or a header-only CSV is refused in one line."""
import numpy as np
import pytest

from sparkps.errors import ConfigError, DataError
from sparkps.spark.submit.inputs import read_input

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def table(spark, digits):
    """The first 50 digits as columns label, f0..f63 (doubles)."""
    X, y = digits[0][:50], digits[1][:50]
    columns = ["label"] + ["f%d" % i for i in range(64)]
    return spark.createDataFrame([[float(v)] + [float(a) for a in x] for x, v in zip(X, y)], columns)


def features_of(frame):
    rows = frame.collect()
    return np.array([r.features.toArray() for r in rows]), np.array([r.label for r in rows])


def test_parquet_folders_csv_folders_and_tables_read_the_same_rows(spark, table, digits, tmp_path):
    table.coalesce(1).write.parquet(str(tmp_path / "parquet"))
    table.coalesce(1).write.csv(str(tmp_path / "csv"))                  # Spark's default: no header
    table.createOrReplaceTempView("digits_view")
    single = next((tmp_path / "parquet").glob("part-*.parquet"))
    frames = [read_input(spark, path=str(tmp_path / "parquet")), read_input(spark, path=str(single)),
              read_input(spark, path=str(tmp_path / "csv"), label_col="_c0").withColumnRenamed("_c0", "label"),
              read_input(spark, table="digits_view")]
    for frame in frames:
        X, y = features_of(frame)
        np.testing.assert_allclose(X, digits[0][:50], rtol=1e-6)
        np.testing.assert_array_equal(y, digits[1][:50])


def test_feature_columns_can_be_chosen_and_must_be_numeric(spark, table):
    from pyspark.sql import functions as F
    table.createOrReplaceTempView("digits_view")
    X, _ = features_of(read_input(spark, table="digits_view", features_cols=["f3", "f5"]))
    assert X.shape == (50, 2)
    table.withColumn("name", F.lit("x")).createOrReplaceTempView("named_view")
    with pytest.raises(ConfigError, match=r"column name of table named_view is of type string, not numeric: "
                                          r"choose the feature columns with --features-cols"):
        read_input(spark, table="named_view")
    with pytest.raises(ConfigError, match=r"table named_view has no feature column\(s\) \['nope'\]"):
        read_input(spark, table="named_view", features_cols=["nope"])
    with pytest.raises(ConfigError, match="cannot read table no_such_table"):
        read_input(spark, table="no_such_table")


def test_empty_inputs_are_refused_in_one_line(spark, tmp_path):
    header_only = tmp_path / "empty.csv"
    header_only.write_text("label,f0,f1\n")
    with pytest.raises(DataError, match=r"^the training data has no rows \(.*empty.csv\)$"):
        read_input(spark, path=str(header_only))
    with pytest.raises(ConfigError, match=r"has no label column 'label'.*_c0, _c1"):
        spark.createDataFrame([(1.0, 2.0)], ["_c0", "_c1"]).createOrReplaceTempView("nolabel")
        read_input(spark, table="nolabel")

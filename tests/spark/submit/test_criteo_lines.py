"""Criteo TSV read by Spark: a bad line (25 or 41 cells, ``abc`` or ``nan`` in an integer column, a label 2) is
one DataError naming file:line and the column, before training; --bad-lines skip drops and counts them; the job
prints that one line and exits 2, with no Java trace."""
import os
import subprocess
import sys

import pytest

from spark_env import spark_env
from sparkps.errors import DataError
from sparkps.spark.submit.criteo import read_criteo

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GOOD = "1\t" + "\t".join(str(i) for i in range(13)) + "\t" + "\t".join("c%d" % i for i in range(26))
CELLS = GOOD.split("\t")


def line_with(column, value):
    cells = list(CELLS)
    cells[column] = value
    return "\t".join(cells)


BAD = {
    "25 cells": ("\t".join(CELLS[:25]), "expected 40 tab-separated columns (label, I1-I13, C1-C26), got 25"),
    "41 cells": (GOOD + "\tx", "expected 40 tab-separated columns (label, I1-I13, C1-C26), got 41"),
    "abc": (line_with(6, "abc"), "column I6 holds 'abc', expected an integer or an empty cell"),
    "nan": (line_with(8, "nan"), "column I8 holds 'nan', expected an integer or an empty cell"),
    "label 2": (line_with(0, "2"), "label '2' must be 0 or 1 (or -1 for a negative)"),
}


def write(path, bad_line):
    lines = [GOOD, line_with(3, ""), GOOD, bad_line, GOOD]      # an empty cell is a missing value, not bad
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_criteo_line_is_named_by_file_line_and_column(spark, tmp_path, case):
    path = write(tmp_path / "day0.tsv", BAD[case][0])
    with pytest.raises(DataError) as caught:
        read_criteo(spark, path)
    assert str(caught.value) == "%s:4: %s" % (path, BAD[case][1])


def test_bad_lines_skip_drops_and_counts_them(spark, tmp_path):
    path = tmp_path / "day0.tsv"
    path.write_text("\n".join([GOOD, line_with(3, "")] + [line for line, _ in BAD.values()]) + "\n")
    frame, skipped = read_criteo(spark, str(path), bad_lines="skip")
    rows = frame.collect()
    assert skipped == len(BAD) and len(rows) == 2
    assert rows[1].I3 is None and rows[0].I3 == 2.0 and rows[0].label == 1.0 and rows[0].C1 == "c0"


def test_the_job_prints_one_line_and_exits_2(tmp_path):
    train = write(tmp_path / "day0.tsv", BAD["abc"][0])
    done = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", "train_ctr.py"), "--train", train,
                           "--test", train, "--master", "local[1]", "--num-workers", "1", "--output",
                           str(tmp_path / "out")], env=spark_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "train_ctr: %s:4: %s\n" % (train, BAD["abc"][1]) in done.stderr
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr and not os.path.exists(tmp_path / "out")

"""A string label column is indexed as MLlib's RFormula indexes it (most frequent first) by train_classifier: the
class names go with the model (classes.json, summary.json) and into the predictions."""
import csv
import glob
import json
import os
import subprocess
import sys

import pytest

from spark_env import spark_env

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_train_classifier_indexes_a_string_label(tmp_path):
    data = tmp_path / "pets.csv"
    rows = ["species,a,b"] + ["%s,%d,%d" % (("cat", 1, 0) if i % 3 else ("dog", 0, 1)) for i in range(60)]
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", "train_classifier.py"), "--train", str(data),
                           "--validation", str(data), "--label-col", "species", "--layers", "2,4,2", "--epochs", "2",
                           "--master", "local[2]", "--output", str(out)], env=spark_env(), capture_output=True,
                          text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "label column 'species' indexed as RFormula does: 'cat' -> 0, 'dog' -> 1" in done.stdout
    assert json.load(open(out / "model" / "classes.json")) == ["cat", "dog"]
    assert json.load(open(out / "summary.json"))["classes"] == ["cat", "dog"]
    written = [row for part in sorted(glob.glob(str(out / "predictions" / "part-*.csv")))
               for row in csv.DictReader(open(part))]
    assert len(written) == 60 and {row["label"] for row in written} == {"cat", "dog"}
    assert {row["prediction"] for row in written} <= {"cat", "dog"}

"""jobs/train_ctr.py end to end as spark-submit would run it (its own Spark, local[2]): Criteo's TSV with
empty cells in, a saved model and the closing ``test AUC ... logloss ... (n rows)`` line out."""
import json
import os
import re
import subprocess
import sys

import pytest

from sparkps.ctr.synthetic import planted_ctr, write_criteo_tsv

pytestmark = pytest.mark.spark
JOB = os.path.join(os.path.dirname(__file__), "..", "..", "..", "jobs", "train_ctr.py")


def test_criteo_job_trains_scores_and_reports(tmp_path):
    data = planted_ctr(4000, vocab=20, zipf=1.3, linear_scale=0.5, fm_scale=0.0, deep_scale=0.0, missing=0.2,
                       seed=3)
    halves = [slice(0, 3000), slice(3000, None)]
    paths = [str(tmp_path / name) for name in ("train.tsv", "test.tsv")]
    for path, part in zip(paths, halves):
        write_criteo_tsv(type(data)(*[x[part] if hasattr(x, "shape") else x for x in data]), path)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    out = subprocess.run([sys.executable, JOB, "--train", paths[0], "--test", paths[1], "--format", "criteo",
                          "--model", "lr", "--epochs", "3", "--batch-size", "128", "--lr", "0.05",
                          "--validation-fraction", "0.2", "--master", "local[1]", "--num-workers", "1",
                          "--output", str(tmp_path / "out")],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    # run as plain python, the job trains on --master and says so, truthfully
    assert "train_ctr: Spark master local[1]\n" in out.stderr and "ignored" not in out.stderr, out.stderr[-3000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["master"] == "local[1]" and summary["model_path"] == str(tmp_path / "out" / "model")
    assert 0 < summary["timings"]["train_seconds"] <= summary["timings"]["total_seconds"]
    last = out.stdout.strip().splitlines()[-1]
    found = re.fullmatch(r"test AUC (\d\.\d{4}) logloss (\d+\.\d{4}) \(1000 rows\)", last)
    assert found, out.stdout[-2000:]
    assert float(found.group(1)) > 0.7
    epochs = re.findall(r"epoch \d training logloss \d\.\d{4} validation AUC (\d\.\d{4}) logloss \d\.\d{4} COPC "
                        r"\d+\.\d{3}", out.stdout)
    assert len(epochs) == 3 and float(epochs[-1]) > 0.7, out.stdout[-2000:]
    assert os.path.exists(tmp_path / "out" / "ctr-curve.png")
    assert os.path.isdir(tmp_path / "out" / "model" / "weights")


def test_libffm_job_pools_a_field_that_repeats(tmp_path):
    """libffm rows whose field 2 holds 1-3 tags (their mean weight in the planted logit) beside fields 0 and 1."""
    import numpy as np
    rng = np.random.default_rng(6)
    w0, w1, wt = rng.normal(0, 1, 6), rng.normal(0, 1, 6), rng.normal(0, 1.5, 20)
    paths = [str(tmp_path / name) for name in ("train.ffm", "test.ffm")]
    for path, rows in zip(paths, (3000, 1000)):
        with open(path, "w", encoding="utf-8") as out:
            for _ in range(rows):
                a, b = rng.integers(0, 6, 2)
                tags = rng.choice(20, size=int(rng.integers(1, 4)), replace=False)
                click = int(rng.random() < 1 / (1 + np.exp(-(w0[a] + w1[b] + wt[tags].mean()))))
                out.write(" ".join([str(click), "0:a%d:1" % a, "1:b%d:1" % b] + ["2:t%d:1" % t for t in tags]) + "\n")
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    out = subprocess.run([sys.executable, JOB, "--train", paths[0], "--test", paths[1], "--format", "libffm",
                          "--model", "lr", "--epochs", "3", "--batch-size", "128", "--lr", "0.05",
                          "--output", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    found = re.fullmatch(r"test AUC (\d\.\d{4}) logloss (\d+\.\d{4}) \(1000 rows\)", last)
    assert found and float(found.group(1)) > 0.75, out.stdout[-2000:]
    import glob
    parts = glob.glob(str(tmp_path / "out" / "model" / "metadata" / "part-*"))
    meta = "".join(open(p, encoding="utf-8").read() for p in parts)
    assert '"multiValueCols":["f2"]' in meta.replace(" ", ""), meta

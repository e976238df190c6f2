"""The spark-submit jobs start from a saved model: ``jobs/train_ctr.py --initial-model OUTPUT/model`` and
``jobs/train_classifier.py --initial-model OUTPUT/model`` (each run as spark-submit would, its own Spark, local[2]). A
warm run whose learning rate moves nothing scores as the run it started from; a path that holds no model is named."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from launch_helpers import write_digits
from sparkps.ctr.synthetic import planted_ctr, write_criteo_tsv

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]   # two jobs a test, each a JVM, on a loaded machine
JOBS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "jobs")


def job(name, args):
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    return subprocess.run([sys.executable, os.path.join(JOBS, name)] + args + ["--master", "local[2]"], env=env,
                          capture_output=True, text=True, timeout=900)


def test_train_ctr_starts_from_the_previous_runs_model(tmp_path):
    data = planted_ctr(3000, vocab=20, zipf=1.3, linear_scale=0.5, fm_scale=0.0, deep_scale=0.0, seed=3)
    paths = [str(tmp_path / name) for name in ("train.tsv", "test.tsv")]
    for path, part in zip(paths, (slice(0, 2200), slice(2200, None))):
        write_criteo_tsv(type(data)(*[x[part] if hasattr(x, "shape") else x for x in data]), path)
    common = ["--train", paths[0], "--test", paths[1], "--format", "criteo", "--model", "fm", "--embedding-dim", "4",
              "--batch-size", "128", "--validation-fraction", "0", "--num-workers", "2", "--num-servers", "2"]
    day1 = job("train_ctr.py", common + ["--epochs", "3", "--lr", "0.05", "--output", str(tmp_path / "day1")])
    assert day1.returncode == 0, day1.stderr[-3000:]
    model = str(tmp_path / "day1" / "model")
    day2 = job("train_ctr.py", common[:-2] + ["--num-servers", "1", "--epochs", "1", "--lr", "1e-9",
                                              "--initial-model", model, "--output", str(tmp_path / "day2")])
    assert day2.returncode == 0, day2.stderr[-3000:]
    before, after = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("day1", "day2"))
    assert abs(after["test_auc"] - before["test_auc"]) < 1e-3 and before["test_auc"] > 0.6, (before, after)
    # a flag given another value than the model's (a flag left at its default takes the model's)
    wrong = job("train_ctr.py", common + ["--embedding-dim", "6", "--initial-model", model, "--epochs", "1",
                                          "--output", str(tmp_path / "day3")])
    assert wrong.returncode != 0 and "embeddingDim" in wrong.stderr, wrong.stderr[-3000:]
    assert not os.path.exists(tmp_path / "day3")


def test_train_classifier_starts_from_the_previous_runs_model(tmp_path):
    from sparkps.spark.model.model_folder import read_folder
    train, test = write_digits(tmp_path)
    common = ["--train", str(train), "--validation", str(test), "--layers", "64,32,10", "--batch-size", "32",
              "--num-workers", "2"]
    day1 = job("train_classifier.py", common + ["--epochs", "3", "--output", str(tmp_path / "day1")])
    assert day1.returncode == 0, day1.stderr[-3000:]
    model = str(tmp_path / "day1" / "model")
    day2 = job("train_classifier.py", common + ["--epochs", "1", "--lr", "1e-9", "--momentum", "0",
                                                "--num-servers", "2", "--initial-model", model,
                                                "--output", str(tmp_path / "day2")])
    assert day2.returncode == 0, day2.stderr[-3000:]
    before, after = read_folder(model), read_folder(str(tmp_path / "day2" / "model"))
    for name, value in before.arg_params.items():
        np.testing.assert_allclose(after.arg_params[name], value, atol=1e-6)
    missing = job("train_classifier.py", common + ["--initial-model", str(tmp_path / "nothing"),
                                                   "--output", str(tmp_path / "day3")])
    assert missing.returncode != 0 and "nothing is not a saved SparkModel" in missing.stderr, missing.stderr[-3000:]

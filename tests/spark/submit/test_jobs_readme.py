"""Every command of jobs/README.md's job sections runs as written (in a scratch folder holding the repository's
jobs/ and the venv as .venv), on its small data, with PYSPARK_PYTHON unset, and does what the README says."""
import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def readme_blocks():
    """{job: the bash block after its ``<!-- readme-test: job -->`` marker}."""
    text = open(os.path.join(ROOT, "jobs", "README.md"), encoding="utf-8").read()
    return dict(re.findall(r"<!-- readme-test: (\w+) -->\n```bash\n(.*?)```", text, re.S))


def scratch(tmp_path):
    os.symlink(os.path.join(ROOT, "jobs"), tmp_path / "jobs")
    os.symlink(os.path.dirname(os.path.dirname(sys.executable)), tmp_path / ".venv")
    (tmp_path / "data").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env.update(PYTHONPATH=ROOT, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return env


def run_block(block, tmp_path):
    env = scratch(tmp_path)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout + done.stderr


def test_the_readme_has_a_block_per_job():
    assert sorted(readme_blocks()) == ["train_classifier", "train_ctr"]


@pytest.mark.timeout(900)      # two jobs, each a JVM: minutes on a loaded 2-core machine
def test_train_classifier_commands(tmp_path):
    """Its first command is the spark-submit run on local[2] with libsvm files: every output is checked."""
    output = run_block(readme_blocks()["train_classifier"], tmp_path)
    assert "test accuracy" in output and "every worker finished" not in output
    first = tmp_path / "out" / "libsvm"
    summary = json.load(open(first / "summary.json"))
    assert [h["epoch"] for h in summary["history"]] == [1, 2, 3] and summary["validation_accuracy"] >= 0.85
    assert (first / "model" / "model-0003.params").exists() and (first / "model" / "model-symbol.json").exists()
    assert (first / "training-curve.png").stat().st_size > 1000
    lines = "".join(p.read_text() for p in sorted((first / "predictions").glob("part-*.csv"))).splitlines()
    assert len([line for line in lines if not line.startswith("label")]) == 360
    summary = json.load(open(tmp_path / "out" / "csv" / "summary.json"))
    assert [h["epoch"] for h in summary["history"]] == [1, 2]


@pytest.mark.timeout(900)
def test_train_ctr_commands(tmp_path):
    output = run_block(readme_blocks()["train_ctr"], tmp_path)
    assert output.count("test AUC") == 2
    assert re.search(r"epoch 2/2 step \d+ logloss=", output), output[-3000:]      # live lines while training
    summary = json.load(open(tmp_path / "out" / "ctr-fm" / "summary.json"))
    assert [h["epoch"] for h in summary["history"]] == [1, 2] and summary["test_auc"] > 0.5

"""A job's --output: an existing non-empty folder is refused unless --overwrite, and the output is written into a
temporary sibling that replaces the folder only when the run succeeds (a failed run leaves the old model)."""
import os
import subprocess
import sys

import pytest

from spark_env import spark_env
from sparkps.errors import ConfigError
from sparkps.spark.submit.output import check_output_folder, staged_output

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
JOBS = {name: os.path.join(ROOT, "jobs", name + ".py") for name in ("train_classifier", "train_ctr")}


def old_model(folder):
    folder.mkdir()
    (folder / "model-0020.params").write_text("old weights")
    return folder


def test_check_output_folder_refuses_a_non_empty_folder_without_overwrite(tmp_path):
    check_output_folder(str(tmp_path / "new"), False)
    (tmp_path / "empty").mkdir()
    check_output_folder(str(tmp_path / "empty"), False)
    with pytest.raises(ConfigError, match="exists and is not empty: pass --overwrite"):
        check_output_folder(str(old_model(tmp_path / "out")), False)
    check_output_folder(str(tmp_path / "out"), True)


def test_staged_output_replaces_the_folder_only_on_success(tmp_path):
    out = old_model(tmp_path / "out")
    with pytest.raises(RuntimeError):
        with staged_output(str(out)) as folder:
            open(os.path.join(folder, "model-0001.params"), "w").close()
            raise RuntimeError("training failed")
    assert sorted(os.listdir(out)) == ["model-0020.params"] and os.listdir(tmp_path) == ["out"]
    with staged_output(str(out)) as folder:
        assert not os.path.samefile(folder, out)
        open(os.path.join(folder, "model-0001.params"), "w").close()
    assert sorted(os.listdir(out)) == ["model-0001.params"] and os.listdir(tmp_path) == ["out"]


@pytest.mark.parametrize("job", sorted(JOBS))
def test_jobs_refuse_an_existing_output_before_spark_starts(job, tmp_path):
    out = old_model(tmp_path / "out")
    inputs = ["--train", "x", "--test" if job == "train_ctr" else "--validation", "y"]
    done = subprocess.run([sys.executable, JOBS[job], *inputs, "--output", str(out)],
                          env=spark_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "--output %s exists and is not empty: pass --overwrite" % out in done.stderr
    assert "Traceback" not in done.stderr and os.listdir(out) == ["model-0020.params"]


@pytest.mark.spark
def test_a_failed_run_with_overwrite_leaves_the_previous_model(tmp_path):
    out = old_model(tmp_path / "out")
    missing = tmp_path / "missing.libsvm"
    done = subprocess.run([sys.executable, JOBS["train_classifier"], "--train", str(missing), "--overwrite",
                           "--master", "local[1]", "--workers", "1", "--output", str(out)],
                          env=spark_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, done.stdout
    assert os.listdir(out) == ["model-0020.params"] and os.listdir(tmp_path) == ["out"]

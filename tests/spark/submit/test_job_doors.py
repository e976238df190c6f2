"""What a new user of jobs/train_ctr.py meets first: a Parquet input without --categorical-cols, an --output that
cannot be written, Ctrl-C while the job reads its input. Each is one line on stderr and an exit code (2 for usage,
130 for Ctrl-C), naming what the user gave, with no traceback."""
import os
import signal
import subprocess
import sys

import pytest

from spark_env import spark_env

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TRAIN_CTR = os.path.join(ROOT, "jobs", "train_ctr.py")
SPARK_STARTED = "log4j"      # Spark's first log line: a settings error must come before it


def run_ctr(*flags, cwd):
    done = subprocess.run([sys.executable, TRAIN_CTR, *flags], env=spark_env(), capture_output=True, text=True,
                          timeout=300, cwd=str(cwd))
    return done.returncode, done.stderr.strip()


def clicks_csv(path, rows=400):
    lines = ["click,site,app,hour"] + ["%d,s%d,a%d,%d" % (int(i % 7 == 0), i % 11, i % 13, i % 24)
                                       for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_a_spark_format_without_categorical_cols_is_a_usage_error_before_spark_starts(tmp_path, fmt):
    data = clicks_csv(tmp_path / "clicks.csv")
    if fmt == "parquet":
        import pyarrow.csv
        import pyarrow.parquet
        pyarrow.parquet.write_table(pyarrow.csv.read_csv(str(data)), str(tmp_path / "clicks.parquet"))
        data = tmp_path / "clicks.parquet"
    code, err = run_ctr("--train", str(data), "--test", str(data), "--label-col", "click", "--output",
                        str(tmp_path / "out"), cwd=tmp_path)
    assert SPARK_STARTED not in err and "Traceback" not in err, err
    assert (code, err) == (2, "train_ctr: --categorical-cols is required for %s input %s: name the columns to embed, "
                              "e.g. --categorical-cols site,app (only criteo, libffm, dummy and libsvm inputs bring "
                              "their own)" % (fmt, data))


def test_an_output_folder_that_cannot_be_written_is_named_as_the_user_gave_it(tmp_path):
    data = clicks_csv(tmp_path / "clicks.csv")
    code, err = run_ctr("--train", str(data), "--test", str(data), "--label-col", "click", "--categorical-cols",
                        "site,app", "--output", "/proc/sparkps-ctr-out", cwd=tmp_path)
    assert SPARK_STARTED not in err and ".partial" not in err, err
    assert (code, err) == (2, "train_ctr: --output /proc/sparkps-ctr-out cannot be written: No such file or "
                              "directory (in /proc)")


def test_ctrl_c_while_the_job_reads_its_input_is_one_line_and_exit_130(tmp_path):
    """SIGINT to the job's process group (what a terminal's Ctrl-C sends) once the session is up and the job starts
    reading its input: the interrupted line alone, no pyspark or py4j traceback."""
    data = clicks_csv(tmp_path / "clicks.csv", rows=3000)
    out = tmp_path / "out"
    job = subprocess.Popen([sys.executable, TRAIN_CTR, "--train", str(data), "--test", str(data), "--label-col",
                            "click", "--categorical-cols", "site,app", "--numeric-cols", "hour", "--epochs", "1",
                            "--output", str(out)], env=spark_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, cwd=str(tmp_path), start_new_session=True)
    try:
        for line in job.stderr:
            if line.startswith("train_ctr: Spark master"):       # the session is up; the input is read next
                os.killpg(job.pid, signal.SIGINT)
                break
        after = job.stderr.read()
        code = job.wait(timeout=300)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    assert code == 130, after
    assert "Traceback" not in after and "py4j" not in after, after
    assert after.strip().splitlines()[-1] == "train_ctr: interrupted (Ctrl-C); --output %s left as it was" % out
    assert not out.exists()


def test_a_test_auc_at_or_below_chance_is_warned_about():
    """A fit too short for its data (3,000 rows, 2 epochs) can score below chance: train_ctr says so on stderr."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("train_ctr", TRAIN_CTR)
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    history = [{"epoch": 0, "logloss": 0.69}, {"epoch": 1, "logloss": 0.68}]
    assert job.chance_warning(0.41, history, 2850) == (
        "test AUC 0.4100 is not above chance (0.5): after 2 epoch(s) on 2850 training rows the model has not learned "
        "what the test rows share; train longer (--epochs) or on more rows before reading its scores (docs/ctr.md, "
        "\"A fit too short\")")
    assert job.chance_warning(0.5, history) is not None and job.chance_warning(0.5001, history) is None

"""The jobs check their settings before Spark starts (no JVM is launched for a bad flag, a bad model name, a bad
network or symbol file, a missing input, too many workers for a local master) and exit 2 for bad input or usage,
1 for a failure while training."""
import os
import subprocess
import sys

import pytest

from spark_env import spark_env
from sparkps.errors import ClusterError, ConfigError, DataError
from sparkps.spark.driver.checks import workers_for_slots
from sparkps.spark.submit.job_settings import check_input_paths, exit_code

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
JOBS = {name: os.path.join(ROOT, "jobs", name + ".py") for name in ("train_classifier", "train_ctr")}
SPARK_STARTED = "log4j"      # Spark's first log line: a settings error must come before it


def job(name, *args, tmp):
    done = subprocess.run([sys.executable, JOBS[name], *args, "--output", str(tmp / "out")], env=spark_env(),
                          capture_output=True, text=True, timeout=120, cwd=str(tmp))
    assert SPARK_STARTED not in done.stderr and "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr.strip()


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "t.tsv").write_text("1\t" + "\t" * 38 + "\n")
    (tmp_path / "angel.json").write_text('{"data": {"indexrange": 10}, "layers": []}')
    return tmp_path


CTR_CASES = [
    (["--model", "deepfx"], "--model 'deepfx' is not a zoo model; known: lr, fm"),
    (["--network", "missing.json"], "--network missing.json: no such file"),
    (["--network", "t.tsv"], "t.tsv: an Angel network is a JSON object, got int"),
    (["--network", "angel.json"], "angel.json: 'layers' must be a non-empty list"),
    (["--epochs", "0"], "--epochs must be > 0, got 0"),
    (["--hidden-units", "64,x"], "--hidden-units must be comma-separated integers"),
    (["--validation-fraction", "1.5"], "--validation-fraction must be in [0, 1)"),
    (["--num-servers", "3"], "--num-servers=3 > --num-workers=2"),
    (["--num-workers", "0"], "--num-workers must be > 0, got 0"),
]


@pytest.mark.parametrize("flags,message", CTR_CASES)
def test_train_ctr_settings_fail_before_spark_with_exit_2(inputs, flags, message):
    code, err = job("train_ctr", "--train", "t.tsv", "--test", "t.tsv", "--format", "criteo", *flags, tmp=inputs)
    assert code == 2 and message in err and err.count("\n") == 0, err


def test_train_ctr_names_a_missing_input(inputs):
    code, err = job("train_ctr", "--train", "nope.tsv", "--test", "t.tsv", "--format", "criteo", tmp=inputs)
    assert (code, err) == (2, "train_ctr: --train nope.tsv: no such file or folder")


@pytest.mark.parametrize("flags,message", [
    (["--symbol", "angel.json", "--num-features", "4"],
     "--symbol angel.json: expected a symbol JSON document (an object with 'nodes' and 'heads'"),
    (["--symbol", "missing.json", "--num-features", "4"], "--symbol missing.json: No such file or directory"),
    (["--workers", "0"], "--num-workers must be >= 1, got 0"),
    (["--num-servers", "0"], "--num-servers must be >= 1, got 0"),
    (["--epochs", "0"], "--epochs must be > 0, got 0"),
    (["--batch-size", "-1"], "--batch-size must be > 0, got -1"),
    (["--train", "nope.libsvm"], "--train nope.libsvm: no such file or folder"),
])
def test_train_classifier_settings_fail_before_spark_with_exit_2(inputs, flags, message):
    code, err = job("train_classifier", "--train", "t.tsv", *flags, tmp=inputs)
    assert code == 2 and message in err, err


def test_exit_codes_tell_bad_input_from_a_failed_training():
    assert exit_code(ConfigError("x")) == exit_code(DataError("x")) == 2
    assert exit_code(ClusterError("worker 1 died")) == 1


def test_workers_beyond_a_local_masters_slots_fall_back_with_a_warning(caplog):
    assert workers_for_slots("local[2]", 4, 3) == (2, 2)
    assert "--num-workers 4 but the master local[2] has 2 task slots" in caplog.text
    assert workers_for_slots("yarn", 8, 2) == (8, 2)
    with pytest.raises(ConfigError, match="--num-servers=3 > --num-workers=2"):
        workers_for_slots("local[4]", 2, 3)


def test_input_paths_of_other_file_systems_are_left_to_spark(tmp_path):
    check_input_paths(train="hdfs://nn/data", test=None)
    with pytest.raises(DataError, match="--test file:/nope: no such file or folder"):
        check_input_paths(test="file:/nope")

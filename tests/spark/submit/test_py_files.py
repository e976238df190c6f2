"""sparkps shipped to the executors only as a zip (``spark-submit --py-files sparkps.zip``), as clusters that
install nothing on their nodes do: the job trains on local[2] and on local-cluster executors, the parameter servers
the tasks start running from the same zip. The Python of the driver and the executors has every dependency of
sparkps and not sparkps (a virtualenv whose site-packages names the project's, whose editable install of sparkps is
then never loaded).

The local-cluster run is also the suite's one run of jobs/train_classifier.py under spark-submit on
local-cluster[2,1,1024]: spark-submit's master is the one used, Spark's event log shows the training tasks on both
executor JVMs, and every output is checked (one JVM cluster for both checks)."""
import json
import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest
from test_spark_jobs import JOB, ROOT, check_outputs, spark_submit, training_tasks

from spark_env import spark_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def python_without_sparkps(folder):
    """A virtualenv at ``folder`` that sees this Python's packages (a .pth naming its site-packages: the .pth files
    there, this checkout's editable install among them, are not read) but not sparkps; its python's path."""
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(folder)],
                   check=True, timeout=120, capture_output=True)
    python = str(folder / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    with open(os.path.join(site, "dependencies.pth"), "w") as pth:
        pth.write(sysconfig.get_paths()["purelib"] + "\n")
    return python


def sparkps_zip(path):
    """sparkps/ of this checkout as a zip at ``path`` (what ``--py-files`` ships)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder, dirs, files in os.walk(os.path.join(ROOT, "sparkps")):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                full = os.path.join(folder, name)
                archive.write(full, os.path.relpath(full, ROOT))
    return path


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """(python without sparkps, sparkps.zip, digits folder, environment for spark-submit)."""
    folder = tmp_path_factory.mktemp("shipped")
    python = python_without_sparkps(folder / "venv")
    env = {k: v for k, v in spark_env().items() if k != "PYTHONPATH"}
    env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python)
    missing = subprocess.run([python, "-c", "import numpy, zmq, pyarrow, pyspark, numba; import sparkps"], env=env,
                             capture_output=True, text=True, timeout=120, cwd=str(folder))
    assert missing.returncode == 1 and "No module named 'sparkps'" in missing.stderr, missing.stderr
    subprocess.run([sys.executable, JOB, "--export-digits", str(folder / "digits")], check=True, timeout=120,
                   capture_output=True)
    return python, sparkps_zip(folder / "sparkps.zip"), folder / "digits", env


@pytest.mark.timeout(600)
def test_a_job_on_local_2_trains_with_sparkps_only_in_a_py_files_zip(shipped, tmp_path):
    """The servers the tasks start used to exit with 'No module named sparkps' (their environment does not name the
    zip: only the task's sys.path does): 'server 0 failed before registering'."""
    python, archive, digits, env = shipped
    output = tmp_path / "out"
    run = spark_submit("local[2]", "--train", digits / "train.libsvm", "--num-features", "64", "--layers", "64,32,10",
                       "--epochs", "1", "--num-servers", "2", "--output", output, py_files=archive, env=env,
                       cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((output / "summary.json").read_text())
    assert summary["master"] == "local[2]" and summary["workers"] == 2


@pytest.mark.timeout(600)   # separate JVMs start slowly on a loaded machine
def test_local_cluster_master_from_spark_submit_trains_on_its_executors_with_sparkps_only_in_a_py_files_zip(
        shipped, tmp_path):
    """On local-cluster executors, with sparkps only in the --py-files zip (both servers, one beside each worker,
    start from it), on CSV files: spark-submit's master is the one used (the job used to force local[*], where every
    task runs in the driver), Spark's own event log shows the training tasks on the two executor JVMs, and every
    output (model, curve, 360 predictions, a validation accuracy of 0.9) is written."""
    python, archive, digits, env = shipped
    output, events = tmp_path / "out", tmp_path / "events"
    events.mkdir()
    run = spark_submit("local-cluster[2,1,1024]", "--train", digits / "train.csv", "--validation",
                       digits / "test.csv", "--layers", "64,64,10", "--epochs", 4, "--kvstore", "dist_sync",
                       "--num-servers", "2", "--output", output, py_files=archive, env=env, cwd=tmp_path,
                       conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
                             "spark.eventLog.compress": "false"})
    summary = check_outputs(run, output, 4)
    assert summary["validation_accuracy"] >= 0.9
    assert summary["master"] == "local-cluster[2,1,1024]" and summary["workers"] == 2
    description, executors = training_tasks(str(events))
    assert description == "sparkps: training MLP 64-64-10 for 4 epochs (2 workers, 2 servers)"
    assert executors == {"0", "1"}

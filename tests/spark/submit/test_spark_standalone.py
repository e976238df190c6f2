"""jobs/train_classifier.py submitted to a Spark standalone master and worker started here on 127.0.0.1 with
spark-class: the master records the application and its executor ran the training (then both are stopped)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from test_spark_jobs import JOB, ROOT

from spark_env import spark_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def master_state(ui_port):
    """The standalone master's JSON state (workers, apps), or None while its UI is not up. While the master starts,
    its UI can answer /json/ with the HTML page (seen once under load): that counts as not up yet."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/json/" % ui_port, timeout=2) as reply:
            return json.loads(reply.read().decode())
    except (OSError, ValueError):
        return None


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError("timed out after %d s waiting for %s" % (timeout, what))


@pytest.fixture
def standalone(tmp_path):
    """A master and one 2-core worker on 127.0.0.1 (free ports); yields (master URL, UI port); stops both
    by PID (their process groups) afterwards."""
    env = dict(spark_env(), SPARK_DAEMON_MEMORY="256m", SPARK_NO_DAEMONIZE="1")
    spark_class = os.path.join(env["SPARK_HOME"], "bin", "spark-class")
    port, ui_port, worker_ui = free_port(), free_port(), free_port()
    started = []
    try:
        with open(tmp_path / "master.log", "w") as log:
            started.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                 "--webui-port", str(ui_port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))
        wait_for(lambda: master_state(ui_port), 120, "the master's UI")
        with open(tmp_path / "worker.log", "w") as log:
            started.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "spark://127.0.0.1:%d" % port, "--host",
                 "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port", str(worker_ui), "--work-dir",
                 str(tmp_path / "work")], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        wait_for(lambda: [w for w in (master_state(ui_port) or {}).get("workers", []) if w["state"] == "ALIVE"],
                 120, "the worker to register with the master")
        yield "spark://127.0.0.1:%d" % port, ui_port
    finally:
        for process in reversed(started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


@pytest.mark.timeout(600)   # separate JVMs start slowly on a loaded machine
def test_a_job_submitted_to_a_standalone_master_runs_there(standalone, tmp_path):
    master, ui_port = standalone
    data, output = tmp_path / "digits", tmp_path / "out"
    subprocess.run([sys.executable, JOB, "--export-digits", str(data)], check=True, timeout=120,
                   capture_output=True)
    submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    run = subprocess.run(
        [submit, "--master", master, "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.memory=1g",
         "--conf", "spark.executor.memory=1g", "--conf", "spark.cores.max=2", "--conf", "spark.executor.cores=2",
         JOB, "--train", str(data / "train.libsvm"), "--num-features", "64", "--layers", "64,32,10",
         "--epochs", "2", "--output", str(output)],
        env=spark_env(), capture_output=True, text=True, timeout=400, cwd=ROOT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((output / "summary.json").read_text())
    assert summary["master"] == master and summary["workers"] == 2
    apps = wait_for(lambda: (master_state(ui_port) or {}).get("completedapps"), 60, "the completed application")
    assert [app["name"] for app in apps] == ["sparkps train_classifier"]

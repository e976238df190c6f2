"""Both jobs (jobs/train_classifier.py, jobs/train_ctr.py) submitted to a Spark standalone master and two workers
started here on 127.0.0.1 with spark-class: the master records each application, an executor on each worker ran
it, the job says where its roles ran (then every process started here is stopped by its PID)."""
import json
import os
import re
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


def start(command, env, log_path):
    """Start a spark-class process in a session of its own (so its children stop with it), logging to a file."""
    with open(log_path, "w") as log:
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(processes):
    """SIGTERM to each process group (by the PID of its leader), SIGKILL after 30 s; every one reaped."""
    for process in reversed(processes):
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A master and two 1-core workers on 127.0.0.1 (free ports); yields (master URL, UI port); stops all three
    by PID (their process groups) afterwards."""
    folder = tmp_path_factory.mktemp("standalone")
    env = dict(spark_env(), SPARK_DAEMON_MEMORY="256m", SPARK_NO_DAEMONIZE="1")
    spark_class = os.path.join(env["SPARK_HOME"], "bin", "spark-class")
    port, ui_port = free_port(), free_port()
    started = []
    try:
        started.append(start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                              str(port), "--webui-port", str(ui_port)], env, folder / "master.log"))
        wait_for(lambda: master_state(ui_port), 120, "the master's UI")
        for number in (1, 2):
            started.append(start(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "spark://127.0.0.1:%d" % port, "--host",
                 "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()), "--work-dir",
                 str(folder / ("work%d" % number))], env, folder / ("worker%d.log" % number)))
        wait_for(lambda: len([w for w in (master_state(ui_port) or {}).get("workers", [])
                              if w["state"] == "ALIVE"]) == 2, 120, "both workers to register with the master")
        yield "spark://127.0.0.1:%d" % port, ui_port
    finally:
        stop(started)
    assert all(process.poll() is not None for process in started)


def submit(master, job, *args, conf=None):
    """spark-submit ``job`` to ``master``: one 1-core executor of 600 MB on each worker."""
    settings = {"spark.ui.enabled": "false", "spark.driver.memory": "1g", "spark.executor.memory": "600m",
                "spark.cores.max": "2", "spark.executor.cores": "1"}
    settings.update(conf or {})
    command = [os.path.join(os.path.dirname(sys.executable), "spark-submit"), "--master", master]
    for key, value in settings.items():
        command += ["--conf", "%s=%s" % (key, value)]
    return subprocess.run(command + [job] + [str(a) for a in args], env=spark_env(), capture_output=True, text=True,
                          timeout=540, cwd=ROOT)


def application(ui_port, name):
    """The master's record of the completed application ``name`` (its executors' workers under 'executors')."""
    def found():
        apps = [app for app in (master_state(ui_port) or {}).get("completedapps", []) if app["name"] == name]
        return apps[-1] if apps else None
    return wait_for(found, 60, "the completed application %s" % name)


ROLES = ("roles: scheduler on 127.0.0.1 (the driver); server 0 on 127.0.0.1; worker 0 on 127.0.0.1, worker 1 on "
         "127.0.0.1")


@pytest.mark.timeout(600)   # separate JVMs start slowly on a loaded machine
def test_a_job_submitted_to_a_standalone_master_runs_there(standalone, tmp_path):
    master, ui_port = standalone
    data, output = tmp_path / "digits", tmp_path / "out"
    subprocess.run([sys.executable, JOB, "--export-digits", str(data)], check=True, timeout=120,
                   capture_output=True)
    run = submit(master, JOB, "--train", data / "train.libsvm", "--validation", data / "test.libsvm",
                 "--num-features", "64", "--layers", "64,32,10", "--epochs", "1", "--output", output)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((output / "summary.json").read_text())
    assert summary["master"] == master and summary["workers"] == 2
    assert ROLES in run.stdout.splitlines()
    assert summary["roles"]["servers"] == {"0": "127.0.0.1"} and sorted(summary["roles"]["workers"]) == ["0", "1"]
    assert list((output / "predictions").glob("part-*.csv"))
    app = application(ui_port, "sparkps train_classifier")
    assert app["state"] == "FINISHED"


CTR_JOB = os.path.join(ROOT, "jobs", "train_ctr.py")


@pytest.mark.timeout(600)
def test_the_ctr_job_submitted_to_a_standalone_master_trains_saves_and_scores(standalone, tmp_path):
    """train_ctr on the cluster, its tables staged in spark.sparkps.modelDir (refused before Spark starts without
    it: test_cluster_checks), the saved model under --output."""
    from sparkps.ctr.synthetic import planted_ctr, write_criteo_tsv
    master, ui_port = standalone
    data = planted_ctr(1500, vocab=20, zipf=1.3, seed=3)          # Criteo's 13 numeric and 26 categorical columns
    paths = [tmp_path / "train.tsv", tmp_path / "test.tsv"]
    for path, part in zip(paths, (slice(0, 1000), slice(1000, None))):
        write_criteo_tsv(type(data)(*[x[part] if hasattr(x, "shape") else x for x in data]), str(path))
    models, output = tmp_path / "shared-models", tmp_path / "out"
    models.mkdir()
    run = submit(master, CTR_JOB, "--train", paths[0], "--test", paths[1], "--format", "criteo", "--model", "lr",
                 "--epochs", "1", "--batch-size", "128", "--validation-fraction", "0", "--num-workers", "2",
                 "--num-servers", "1", "--output", output, conf={"spark.sparkps.modelDir": models})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((output / "summary.json").read_text())
    assert summary["master"] == master and summary["roles"]["scheduler"] == "127.0.0.1"
    assert ROLES in run.stdout.splitlines()
    assert re.search(r"^test AUC \d\.\d{4} logloss \d+\.\d{4} \(500 rows\)$", run.stdout, re.M), run.stdout[-2000:]
    assert os.path.isdir(output / "model") and os.listdir(models) == []       # no staging folder left behind
    assert application(ui_port, "sparkps train_ctr")["state"] == "FINISHED"

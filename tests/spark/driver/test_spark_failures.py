"""A failed fit leaves no server process behind and says what failed once: the first cause, with its row."""
import os
import subprocess
import sys

import pytest

from spark_env import spark_env
from sparkps.errors import ClusterError
from sparkps.spark import SparkTrainer, mlp_symbol

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
JOB = os.path.join(ROOT, "jobs", "train_classifier.py")


def processes_naming(text):
    """Pids of live (not zombie) processes whose command line contains ``text``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(pid))
    return found


def test_every_server_process_is_gone_when_a_failed_fit_raises(spark, digits):
    def poison(index, rows):
        for i, row in enumerate(rows):
            if index == 1 and i == 300:
                raise ValueError("row 300 of partition 1 is corrupt")
            yield row

    rdd = spark.sparkContext.parallelize(list(zip(digits[0], digits[1])), 2).mapPartitionsWithIndex(poison)
    trainer = SparkTrainer(mlp_symbol([64, 16, 10]), (64,), batch_size=16, num_epoch=2, num_workers=2,
                           num_servers=2, progress=False, timeout=120, optimizer_params={"learning_rate": 0.1})
    with pytest.raises(ClusterError) as failure:
        trainer.fit(rdd)
    assert processes_naming(trainer.scheduler_uri) == []          # at once: no waiting after fit raised
    assert str(failure.value).count("row 300 of partition 1 is corrupt") == 1, str(failure.value)
    assert str(failure.value) == "worker 1 (node 4) failed: ValueError: row 300 of partition 1 is corrupt"


def test_the_job_reports_a_bad_label_once_with_its_file_line(tmp_path):
    rows = ["label,a,b"] + ["%d,%g,%g" % (i % 2, i / 10, 1 - i / 10) for i in range(6)]
    rows[4] = "2.5,0.3,0.7"                                       # data row 3, file line 5
    data = tmp_path / "train.csv"
    data.write_text("\n".join(rows) + "\n")
    run = subprocess.run([sys.executable, JOB, "--train", str(data), "--layers", "2,4,2", "--epochs", "1",
                          "--master", "local[2]", "--output", str(tmp_path / "out")],
                         env=spark_env(), capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]     # bad input: exit 2
    mentions = [line for line in run.stderr.splitlines() if "2.5" in line]
    assert mentions == ["train_classifier: %s:5: row 3: label 2.5 is not a whole number (1 such labels) (labels "
                        "must be class indices 0..1; index other labels with StringIndexer)" % data], run.stderr
    assert "Traceback" not in run.stderr


def _alive(pid):
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_server_that_cannot_exit_by_itself_is_gone_when_the_failed_fit_raises(spark, digits):
    """Server 0 is frozen (SIGSTOP) once the cluster formed: it misses its heartbeats, the fit fails, and
    neither the scheduler's TERMINATE nor its task's SIGTERM can end it; only the driver's reaping (SIGKILL
    by the pid the server registered with) does.  Every server pid of the fit must be gone when fit raises."""
    import signal
    import threading
    rdd = spark.sparkContext.parallelize(list(zip(digits[0], digits[1])), 2)
    trainer = SparkTrainer(mlp_symbol([64, 16, 10]), (64,), batch_size=16, num_epoch=500, num_workers=2,
                           num_servers=2, progress=False, timeout=120, optimizer_params={"learning_rate": 0.1},
                           timeouts={"heartbeat_interval": 0.3, "heartbeat_timeout": 2.0, "request": 20.0})
    servers, done = {}, threading.Event()

    def freeze_server_0():
        while not done.is_set():
            nodes = (trainer.status() or {}).get("nodes", [])
            for node in nodes:
                if node["role"] == "server" and node.get("pid"):
                    servers[node["rank"]] = int(node["pid"])
            if len(servers) == 2:
                os.kill(servers[0], signal.SIGSTOP)
                return
            done.wait(0.05)

    watcher = threading.Thread(target=freeze_server_0, daemon=True)
    watcher.start()
    try:
        with pytest.raises(ClusterError) as failure:
            trainer.fit(rdd)
        left = [pid for pid in servers.values() if _alive(pid)]
    finally:
        done.set()
        watcher.join(10)
        for pid in servers.values():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert len(servers) == 2, "the servers never registered: %s" % failure.value
    assert left == [], "server processes %s outlived the failed fit (%s)" % (left, failure.value)
    assert "server 0" in str(failure.value), str(failure.value)

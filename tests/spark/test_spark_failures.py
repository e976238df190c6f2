"""A failed fit leaves no server process behind and says what failed once: the first cause, with its row."""
import os
import subprocess
import sys

import pytest

from conftest import spark_env
from sparkps.errors import ClusterError
from sparkps.spark import SparkTrainer, mlp_symbol

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    mentions = [line for line in run.stderr.splitlines() if "2.5" in line]
    assert mentions == ["train_classifier: %s:5: row 3: label 2.5 is not a whole number (1 such labels) (labels "
                        "must be class indices 0..1; index other labels with StringIndexer)" % data], run.stderr
    assert "Traceback" not in run.stderr

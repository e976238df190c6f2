"""What the spark-submit tests of jobs/train_classifier.py share (the run, its outputs, the training tasks in Spark's
event log), and Spark's GPU assignment on local-cluster. The job on local-cluster[2,1,1024] (two executor JVMs, so
workers and servers live in separate executor processes) runs once, with sparkps shipped as a --py-files zip:
test_py_files.py; spark-submit on local[2] with libsvm files is jobs/README.md's first command (test_jobs_readme)."""
import json
import os
import subprocess
import sys

import pytest

from spark_env import spark_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
JOB = os.path.join(ROOT, "jobs", "train_classifier.py")


def spark_submit(master, *args, timeout=540, conf=None, py_files=None, env=None, cwd=ROOT):
    """Run the job under spark-submit; ``conf`` adds --conf settings, ``py_files`` ships a zip with --py-files,
    ``env`` replaces spark_env()."""
    submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    command = [submit, "--master", master, "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.memory=1g"]
    for key, value in (conf or {}).items():
        command += ["--conf", "%s=%s" % (key, value)]
    if py_files:
        command += ["--py-files", str(py_files)]
    command += [JOB] + [str(a) for a in args]
    return subprocess.run(command, env=env or spark_env(), capture_output=True, text=True, timeout=timeout,
                          cwd=str(cwd))


def training_tasks(event_dir):
    """(job description, executor ids of its tasks) of the sparkps training job, from Spark's event log."""
    logs = sorted(os.path.join(folder, name) for folder, _, names in os.walk(event_dir) for name in names
                  if name.startswith(("events_", "app-", "local-")))      # rolling (Spark 4) or single file
    assert logs, os.listdir(event_dir)
    stages, description, executors, events = set(), None, set(), []
    for path in logs:
        with open(path) as handle:
            events += [json.loads(line) for line in handle if line.strip()]
    for event in events:
        props = event.get("Properties") or {}
        if event["Event"] == "SparkListenerJobStart" and \
                str(props.get("spark.job.description", "")).startswith("sparkps: training"):
            description = props["spark.job.description"]
            stages.update(event["Stage IDs"])
    for event in events:
        if event["Event"] == "SparkListenerTaskEnd" and event["Stage ID"] in stages:
            executors.add(event["Task Info"]["Executor ID"])
    return description, executors


def check_outputs(run, output, epochs):
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((output / "summary.json").read_text())
    assert "test accuracy:" in run.stdout
    assert run.stdout.endswith("training-curve.png\n"), run.stdout[-500:]        # the last line whole
    assert [h["epoch"] for h in summary["history"]] == list(range(1, epochs + 1))     # as the screen counts
    assert "every worker finished" not in run.stdout + run.stderr
    assert (output / "model" / ("model-%04d.params" % epochs)).exists()
    assert (output / "model" / "model-symbol.json").exists()
    assert (output / "training-curve.png").stat().st_size > 1000
    lines = "".join(p.read_text() for p in sorted((output / "predictions").glob("part-*.csv"))).splitlines()
    assert len([line for line in lines if not line.startswith("label")]) == 360
    return summary


GPU_PROBE = r'''
import json
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local-cluster[1,2,1024]").config("spark.ui.enabled", "false")
         .config("spark.worker.resource.gpu.amount", "2")
         .config("spark.worker.resource.gpu.discoveryScript", sys.argv[1])
         .config("spark.executor.resource.gpu.amount", "2").config("spark.task.resource.gpu.amount", "1")
         .getOrCreate())

def probe(rows):
    from pyspark import BarrierTaskContext
    from sparkps.spark.task.barrier_task import task_device
    context = BarrierTaskContext.get()
    yield [task_device("gpu", context), task_device("cpu", context)]

print("DEVICES " + json.dumps(sorted(spark.sparkContext.parallelize(range(2), 2).barrier()
                                     .mapPartitions(probe).collect())))
spark.stop()
'''


def test_gpu_workers_take_the_gpu_spark_assigned_to_their_task(tmp_path):
    """Spark's resource scheduling with a discovery script announcing GPUs 0 and 1 (no GPU needed: only
    the assignment is checked): the two tasks of one executor get gpu(0) and gpu(1)."""
    script = tmp_path / "gpus.sh"
    script.write_text('#!/bin/sh\necho \'{"name": "gpu", "addresses": ["0", "1"]}\'\n')
    script.chmod(0o755)
    probe = tmp_path / "probe.py"
    probe.write_text(GPU_PROBE)
    run = subprocess.run([sys.executable, str(probe), str(script)], env=spark_env(), capture_output=True,
                         text=True, timeout=240, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith("DEVICES ")]
    assert lines, run.stdout
    assert json.loads(lines[0][len("DEVICES "):]) == [["gpu(0)", "cpu"], ["gpu(1)", "cpu"]]

"""A SparkContext that Spark stops by itself between stages (the cluster manager removed the application): the
job's one line names the cause the scheduler backend logged, not 'Cannot call methods on a stopped SparkContext'.
A program of its own (it stops its SparkContext): its scheduler backend's logger writes what
StandaloneSchedulerBackend.dead writes before it stops the SparkContext."""
import os
import subprocess
import sys

import pytest

from spark_env import ROOT, spark_env

pytestmark = pytest.mark.spark

PROGRAM = '''
import sys
from sparkps.spark.submit.failures import run_job
from sparkps.spark.submit.session import job_session
from sparkps.spark.submit.stop_causes import BACKENDS
spark = job_session("stop-causes", master="local[1]", settings={"spark.ui.enabled": "false"})
spark.sparkContext._jsc.sc().stop()           # the JVM's SparkContext, as the backend stops it: Python's is kept
codes = [run_job("train_ctr", lambda: spark.range(3).count())]     # nothing recorded: Spark's own line
logger = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getLogger(BACKENDS[0])
logger.error("Application has been killed. Reason: Master removed our application: FAILED")
codes.append(run_job("train_ctr", lambda: spark.range(3).count()))
print("CODES", codes)
'''


def test_a_context_stopped_by_the_cluster_manager_is_named_by_its_cause(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROGRAM], cwd=str(tmp_path), env=dict(spark_env(), PYTHONPATH=ROOT),
                          capture_output=True, text=True, timeout=600)
    assert "CODES [1, 1]" in done.stdout, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("train_ctr: ")]
    assert len(lines) == 2 and "Cannot call methods on a stopped SparkContext" in lines[0], done.stderr[-3000:]
    assert lines[1] == ("train_ctr: the cluster manager ended the application (Application has been killed. Reason: "
                        "Master removed our application: FAILED): see the master's log for why, and its executors' "
                        "stderr")
    assert "StandaloneSchedulerBackend" not in done.stderr          # the backend's line: in the job's line only
    assert os.listdir(tmp_path) == []


def test_a_recorded_cause_that_is_not_a_removal_is_named_as_it_is(monkeypatch):
    from sparkps.spark.submit import failures
    monkeypatch.setattr(failures, "stop_cause", lambda: "YARN application has exited unexpectedly with state "
                                                        "FAILED! Check the YARN application logs for more details.")
    assert failures.failure_line(RuntimeError("Cannot call methods on a stopped SparkContext.\n\tat x")) == \
        ("Spark stopped the SparkContext before the job ended: YARN application has exited unexpectedly with state "
         "FAILED! Check the YARN application logs for more details.", 1)
    assert failures.failure_line(RuntimeError("another failure"))[0] == "RuntimeError: another failure"

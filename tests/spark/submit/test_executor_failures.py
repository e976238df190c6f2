"""A failure on an executor as the job's one line: the error the Python worker raised (not pyspark's header line
'An exception was thrown from the Python worker'), with what to change when a module is missing there; the
servers' own last line when their process exits; a fit that fails before training leaves no staging folder."""
import os

import pytest

from sparkps.spark.submit.failures import failure_line

pytestmark = pytest.mark.spark


def raised_on_an_executor(spark, module):
    """The exception a Spark action raises when its Python function cannot import ``module`` on the executor (as a
    Python without numpy, or without sparkps, does)."""
    def task(batches):
        __import__(module)
        yield from batches
    with pytest.raises(Exception) as caught:
        spark.range(4, numPartitions=2).mapInArrow(task, "id long").collect()
    return caught.value


def test_a_module_missing_on_the_executors_is_named_with_what_to_change(spark):
    line, code = failure_line(raised_on_an_executor(spark, "numpy_not_installed"))
    assert line.startswith("a Python worker on an executor failed: ModuleNotFoundError: No module named "
                           "'numpy_not_installed'; the executors' Python (spark.pyspark.python / PYSPARK_PYTHON) "
                           "cannot import numpy_not_installed: point it at a Python that has sparkps's dependencies"), \
        line
    assert "\n" not in line and code == 2
    line, code = failure_line(raised_on_an_executor(spark, "sparkps.not_shipped"))
    assert "No module named 'sparkps.not_shipped'; the executors cannot import sparkps: ship it with spark-submit " \
           "--py-files sparkps.zip (or spark.submit.pyFiles), or install it" in line, line


def test_any_python_worker_error_is_its_own_line_not_pysparks_header(spark):
    def task(batches):
        raise ValueError("cell 3 of batch 0 is bad")
        yield
    with pytest.raises(Exception) as caught:
        spark.range(4, numPartitions=2).mapInArrow(task, "id long").collect()
    assert failure_line(caught.value) == \
        ("a Python worker on an executor failed: ValueError: cell 3 of batch 0 is bad", 1)


def test_a_server_that_cannot_import_a_module_says_so():
    from sparkps.errors import NodeDied
    died = NodeDied("server 0 failed before registering: its process (started by worker 0) exited with code 1: "
                    "/venv/bin/python: Error while finding module specification for 'sparkps.server' "
                    "(ModuleNotFoundError: No module named 'sparkps')")
    line, _ = failure_line(died)
    assert line.startswith(str(died) + "; the executors cannot import sparkps: ship it with spark-submit --py-files")


def test_a_fit_failing_before_training_leaves_no_staging_folder(spark, tmp_path, monkeypatch):
    """The placement probe (a Spark job of its own, on cluster masters) failing, as it does when the executors'
    Python lacks numpy: the staging folder made in spark.sparkps.modelDir for the servers' tables is removed."""
    import sparkps.spark.driver.trainer as trainer
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier

    def probe_fails(*args):
        raise RuntimeError("An exception was thrown from the Python worker")
    monkeypatch.setattr(trainer, "needs_probe", lambda *args: True)
    monkeypatch.setattr(trainer, "tasks_reach", probe_fails)
    rows = [(float(i % 2), "s%d" % (i % 5)) for i in range(64)]
    frame = spark.createDataFrame(rows, ["click", "site"])
    spark.conf.set("spark.sparkps.modelDir", str(tmp_path))
    try:
        with pytest.raises(RuntimeError, match="thrown from the Python worker"):
            SparkpsCTRClassifier(labelCol="click", categoricalCols=["site"], model="lr", numEpochs=1, numWorkers=2,
                                 numServers=1, validationFraction=0.0, inlineTablesMB=0.0).fit(frame)
    finally:
        spark.conf.unset("spark.sparkps.modelDir")
    assert os.listdir(tmp_path) == []

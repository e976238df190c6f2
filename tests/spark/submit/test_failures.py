"""A job's failure as one line and an exit code (sparkps.spark.submit.failures), an unreachable master named within
seconds (session.check_reachable) and an --output that cannot be written (output.check_output_folder): no Spark."""

import pytest

from sparkps.errors import ConfigError, DataError
from sparkps.spark.submit.failures import failure_line, first_line, interrupted
from sparkps.spark.submit.output import check_output_folder
from sparkps.spark.submit.session import check_reachable

JAVA = ("An error occurred while calling o42.load.\n: org.apache.spark.SparkException: [FAILED_READ_FILE."
        "CANNOT_READ_FILE_FOOTER] Encountered error while reading file file:/d/x.parquet.\n"
        "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFooter(QueryExecutionErrors.scala:1)\n")


def test_a_java_failure_is_its_first_line_without_frames():
    assert first_line(RuntimeError(JAVA)) == ("[FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] Encountered error while "
                                              "reading file file:/d/x.parquet.")
    assert failure_line(RuntimeError(JAVA))[1] == 2                  # the input is at fault
    assert failure_line(RuntimeError("Cannot call methods on a stopped SparkContext\n\tat x")) == \
        ("RuntimeError: Cannot call methods on a stopped SparkContext", 1)
    assert failure_line(DataError("t.csv:3: bad")) == ("t.csv:3: bad", 2)
    assert failure_line(PermissionError(13, "Permission denied", "/out")) == \
        ("PermissionError /out: Permission denied", 2)
    assert interrupted("out") == ("interrupted (Ctrl-C); --output out left as it was", 130)


def test_an_unreachable_master_is_one_line_within_seconds(monkeypatch):
    import socket
    probes, connect = [], socket.create_connection
    monkeypatch.setattr(socket, "create_connection",
                        lambda address, timeout, **kw: probes.append((address, timeout)) or connect(address, timeout))
    with pytest.raises(ConfigError, match=r"the Spark master spark://nohost.invalid:7077 cannot be reached"):
        check_reachable("spark://nohost.invalid:7077", timeout=2)
    with pytest.raises(ConfigError, match=r"the Spark Connect server sc://127.0.0.1:1 cannot be reached"):
        check_reachable("sc://127.0.0.1:1", timeout=2)
    # one probe per address, each bounded by the timeout given (not Spark's retries for minutes)
    assert probes == [(("nohost.invalid", 7077), 2), (("127.0.0.1", 1), 2)]
    check_reachable("local[2]")        # not probed
    assert len(probes) == 2


def test_an_output_under_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match=r"--output .*f/out/deeper: .*/f is a file, not a folder"):
        check_output_folder(str(tmp_path / "f" / "out" / "deeper"), False)


def test_a_python_workers_error_inside_a_java_one_is_the_line():
    from sparkps.spark.submit.failures import worker_error
    text = ("An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
            ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 1.0 failed 4 times\n"
            "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
            '  File "/x/pyspark.zip/pyspark/worker.py", line 1, in main\n'
            "    import numpy\n"
            "ModuleNotFoundError: No module named 'numpy'\n"
            "\n\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(x.scala:1)\n"
            "Driver stacktrace:\n"
            "org.apache.spark.SparkException: Job aborted due to stage failure\n")
    assert worker_error(text) == "ModuleNotFoundError: No module named 'numpy'"
    line, code = failure_line(RuntimeError(text))
    assert line.startswith("a Python worker on an executor failed: ModuleNotFoundError: No module named 'numpy'; the "
                           "executors' Python (spark.pyspark.python / PYSPARK_PYTHON) cannot import numpy")
    assert code == 2
    assert worker_error("no traceback here") is None

"""The job's last line arrives whole under spark-submit, whose JVM copies the job's merged stdout and stderr
with a daemon thread and exits the moment the Python process does."""
import os
import subprocess
import sys
import threading
import time
import types

import pytest

from spark_env import spark_env
from sparkps.spark.submit.output import drain_output, unread_bytes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
JOB = os.path.join(ROOT, "jobs", "train_classifier.py")


def run_as_spark_submit_does(args, piece=16, pause=0.2, timeout=120):
    """What spark-submit's PythonRunner does with a Python job: stdout and stderr merged into one pipe, copied
    by a thread piece by piece (the JVM's pieces are 1 KiB; here smaller ones, ``pause`` s apart: a slow
    console), the copy ending when the job's process has exited (the JVM exits then).  Returns (exit code,
    the text copied by that moment)."""
    job = subprocess.Popen([sys.executable, JOB] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env=spark_env(), cwd=ROOT)
    copied, lock, pipe = bytearray(), threading.Lock(), job.stdout.fileno()

    def copy():
        while True:
            chunk = os.read(pipe, piece)
            if not chunk:
                return
            with lock:
                copied.extend(chunk)
            time.sleep(pause)

    copier = threading.Thread(target=copy, daemon=True)
    copier.start()
    code = job.wait(timeout)
    with lock:
        text = bytes(copied).decode()
    copier.join(timeout)            # only to close the pipe after it: what it copies now comes too late
    job.stdout.close()
    return code, text


def test_a_failing_jobs_message_is_the_whole_last_line():
    code, text = run_as_spark_submit_does([])
    assert code == 2                                  # usage: exit 2
    assert text.endswith("train_classifier: give --train PATH or --input-table TABLE (and --validation / "
                         "--validation-table), or --demo\n"), repr(text[-300:])


def test_drain_output_waits_for_the_reader_and_gives_up_on_a_stopped_one():
    read_end, write_end = os.pipe()
    writer = os.fdopen(write_end, "w")
    try:
        writer.write("x" * 5000)
        reader = threading.Timer(0.3, lambda: os.read(read_end, 10000))
        reader.start()
        assert drain_output([writer], timeout=30) == 0 and unread_bytes(read_end) == 0
        reader.join()
        writer.write("the last line\n")
        assert drain_output([writer], timeout=0.2) == len("the last line\n")     # nobody reads: bounded
    finally:
        writer.close()
        os.close(read_end)


@pytest.mark.parametrize("stream", [None, sys.stderr])
def test_drain_output_returns_at_once_for_what_is_not_a_pipe(stream, tmp_path, monkeypatch):
    from sparkps.spark.submit import output
    waits = []
    monkeypatch.setattr(output, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=waits.append))
    monkeypatch.setattr(output, "unread_bytes", lambda fd: pytest.fail("a file's unread bytes were measured"))
    with open(tmp_path / "file.txt", "w") as handle:
        handle.write("text\n")
        assert drain_output([handle]) == 0
    assert waits == []             # returned without waiting

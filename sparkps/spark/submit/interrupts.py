"""Ctrl-C in a spark-submit job: one line and exit 130 (``failures.run_job``), nothing else on the console.

Two things printed tracebacks before that line when Ctrl-C came while the driver waited on the JVM (reading the
input, before training starts):

- pyspark's own SIGINT handler asks the JVM to cancel every job over the py4j connection the interrupted call is
  still using (a "reentrant call" error, then a second traceback when it raises KeyboardInterrupt inside it);
- py4j logs the interrupted call with its traceback on the root logger (``logging.exception``), and a connection
  it could not shut down on its own (``py4j.clientserver``).

So a job, once its session is up, answers SIGINT with a plain KeyboardInterrupt (the session's ``stop`` in the job's
``finally`` cancels what Spark still runs) and drops py4j's records from the console: the job reports the failure
once itself.

    quiet_py4j_records()                  # at start, with the job's logging settings
    spark = job_session(...)
    plain_interrupts()                    # after pyspark installed its handler
"""
import logging
import os
import signal
import threading

PY4J_FOLDER = os.sep + "py4j" + os.sep


class Py4JRecords(logging.Filter):
    """Drops the log records py4j writes on the root logger (its own traceback of an interrupted or broken call)."""

    def filter(self, record):
        return PY4J_FOLDER not in (record.pathname or "")


def quiet_py4j_records(logger=None):
    """Add :class:`Py4JRecords` to the handlers of ``logger`` (default: the root logger, whose handlers print both
    the records py4j writes on the root logger and those of its own loggers, ``py4j.clientserver``), once each.
    Call it after the job's ``logging.basicConfig``."""
    logger = logger or logging.getLogger()
    for handler in logger.handlers:
        if not any(isinstance(f, Py4JRecords) for f in handler.filters):
            handler.addFilter(Py4JRecords())


def interrupted(signum, frame):
    """The SIGINT handler of a job: KeyboardInterrupt where the main thread is, nothing sent to the JVM."""
    raise KeyboardInterrupt()


def plain_interrupts():
    """Answer SIGINT with :func:`interrupted` instead of pyspark's handler (which calls the JVM from inside the
    interrupted call). Only the main thread can set a handler; elsewhere nothing changes. Returns the handler that
    was in place."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, interrupted)

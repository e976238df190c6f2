"""Ctrl-C in a spark-submit job: one line and exit 130 (``failures.run_job``), nothing else on the console.

Two things printed tracebacks before that line when Ctrl-C came while the driver waited on the JVM (reading the
input, before training starts):

- pyspark's own SIGINT handler asks the JVM to cancel every job over the py4j connection the interrupted call is
  still using (a "reentrant call" error, then a second traceback when it raises KeyboardInterrupt inside it);
- py4j logs the interrupted call with its traceback on the root logger (``logging.exception``), and a connection
  it could not shut down on its own (``py4j.clientserver``).

A third lost the interrupt altogether: when SIGINT arrives while Python runs a finalizer (py4j's weak-reference
callback that detaches a Java object), the KeyboardInterrupt raised there is "ignored" by the interpreter, printed as
an unraisable exception, and the job runs on to the end. So the unraisable hook, on a KeyboardInterrupt, prints
nothing and has SIGINT sent again a moment later from another thread, once the hook has returned: the handler runs
once more where the job's own code can receive it.

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
import sys
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


class RedeliveredInterrupts:
    """An unraisable hook (``sys.unraisablehook``) that does not lose Ctrl-C: a KeyboardInterrupt raised where the
    interpreter cannot let it through (a finalizer, a weak-reference callback) sends SIGINT again, so the handler
    raises it in the job's code once the hook has returned; any other unraisable exception goes to the hook that was
    in place. Never blocks: the signal is sent by a timer thread ``delay`` seconds later (SIGINT's handler would
    raise inside the hook itself if it were sent from here)."""

    def __init__(self, previous, delay=0.05):
        self.previous = previous
        self.delay = delay

    def __call__(self, unraisable):
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            self.previous(unraisable)
            return
        while True:
            try:
                timer = threading.Timer(self.delay, os.kill, (os.getpid(), signal.SIGINT))
                timer.daemon = True
                timer.start()
                return
            except KeyboardInterrupt:     # one more Ctrl-C while the timer starts: it is sent again all the same
                continue


def plain_interrupts():
    """Answer SIGINT with :func:`interrupted` instead of pyspark's handler (which calls the JVM from inside the
    interrupted call), and keep an interrupt raised inside a finalizer (:class:`RedeliveredInterrupts`). Only the main
    thread can set a handler; elsewhere nothing changes. Returns the handler that was in place."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if not isinstance(sys.unraisablehook, RedeliveredInterrupts):
        sys.unraisablehook = RedeliveredInterrupts(sys.unraisablehook)
    return signal.signal(signal.SIGINT, interrupted)

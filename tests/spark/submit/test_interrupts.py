"""Ctrl-C in a job's driver is never lost: a KeyboardInterrupt raised where the interpreter cannot let it through."""
import signal
import sys
import time
import weakref

import pytest

from sparkps.spark.submit.interrupts import RedeliveredInterrupts, plain_interrupts


@pytest.fixture
def job_handlers():
    handler, hook = signal.getsignal(signal.SIGINT), sys.unraisablehook
    yield
    signal.signal(signal.SIGINT, handler)
    sys.unraisablehook = hook


class Detached:
    """Stands for a py4j JavaObject whose weak-reference callback runs when the driver drops it."""


def test_an_interrupt_that_lands_in_a_finalizer_reaches_the_job(job_handlers):
    plain_interrupts()
    thing = Detached()
    ref = weakref.ref(thing, lambda _ref: signal.raise_signal(signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        del thing                 # the callback runs here; SIGINT's handler raises inside it, where it is unraisable
        time.sleep(30)            # the job waits on the JVM; the interrupt must reach it here
    assert ref() is None


def test_other_unraisable_exceptions_go_to_the_hook_in_place(job_handlers):
    seen = []
    sys.unraisablehook = seen.append
    plain_interrupts()
    plain_interrupts()            # twice: one hook, not a chain
    assert isinstance(sys.unraisablehook, RedeliveredInterrupts)
    assert sys.unraisablehook.previous == seen.append
    thing = Detached()
    weakref.finalize(thing, lambda: 1 / 0)
    del thing
    assert [type(u.exc_value) for u in seen] == [ZeroDivisionError]


def test_a_failing_job_silences_every_logger_of_its_jvm(spark):
    """Jetty's loggers keep a level of their own (Spark's log4j settings), which setLogLevel leaves alone: a job
    ending on Ctrl-C printed a Jetty warning with its Java stack after its one line. Once failing, none logs."""
    from sparkps.spark.submit.session import silence_jvm_logs
    jvm = spark.sparkContext._jvm
    manager = jvm.org.apache.logging.log4j.LogManager
    configurator = jvm.org.apache.logging.log4j.core.config.Configurator
    root, jetty = manager.getRootLogger(), manager.getLogger("org.sparkproject.jetty.ee10.servlet.ResourceServlet")
    level = root.getLevel()
    try:
        spark.sparkContext.setLogLevel("FATAL")
        assert jetty.isWarnEnabled()               # what the job's FATAL did not reach
        silence_jvm_logs(spark)
        assert not jetty.isFatalEnabled() and not root.isFatalEnabled()
    finally:
        configurator.reconfigure()
        configurator.setRootLevel(level)

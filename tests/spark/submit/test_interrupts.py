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

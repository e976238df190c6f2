"""Spark's console progress bar paused while sparkps shows its own progress, and restored after.

    with spark_progress_paused(sc):
        ...      # the barrier stage: sparkps prints its bar or lines; Spark's "[Stage 3:>  (0 + 2) / 2]" is off

Spark draws its bar (``spark.ui.showConsoleProgress``, on in the pyspark shell) from a timer owned by the
SparkContext; there is no switch to pause it.  So the bar is stopped and, afterwards, a fresh one is put in its
place (the context reads the field each time it uses the bar).  Where the JVM refuses (a different Spark
build), nothing changes and training goes on.  Never blocks.
"""
import contextlib
import logging

LOG = logging.getLogger("sparkps.spark")


@contextlib.contextmanager
def spark_progress_paused(sc):
    """Stop Spark's console progress bar for the duration of the block, then start a new one."""
    field, jsc = _bar_field(sc)
    bar = field.get(jsc) if field is not None else None
    if bar is None or bar.isEmpty():
        yield
        return
    try:
        bar.get().stop()
        field.set(jsc, sc._jvm.scala.Option.empty())
    except Exception as exc:   # py4j errors: leave Spark's bar as it is
        LOG.debug("cannot pause Spark's console progress bar: %s", exc)
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            field.set(jsc, sc._jvm.scala.Some(sc._jvm.org.apache.spark.ui.ConsoleProgressBar(jsc)))


def spark_progress_shown(sc):
    """True while Spark's console progress bar is running for ``sc``."""
    field, jsc = _bar_field(sc)
    return field is not None and not field.get(jsc).isEmpty()


def _bar_field(sc):
    """(the SparkContext's ``_progressBar`` field made accessible, the JVM SparkContext), or (None, None)."""
    try:
        jsc = sc._jsc.sc()
        field = jsc.getClass().getDeclaredField("_progressBar")
        field.setAccessible(True)
        return field, jsc
    except Exception as exc:
        LOG.debug("Spark's console progress bar is out of reach: %s", exc)
        return None, None

"""Why Spark stopped a job's SparkContext by itself, for the job's one line.

When the cluster manager ends the application (a standalone master removes it, a YARN application exits), Spark's
scheduler backend logs the reason at ERROR and stops the SparkContext in a thread of its own. A stage running then
fails with that reason in its message (``failures.failure_line`` names it); a job that calls Spark between stages
meets only ``Cannot call methods on a stopped SparkContext``, the reason being a log line above it, hidden by the
jobs' log level. So a job's session sends the backends' ERROR lines to a file of their own too
(``record_stop_causes``, a log4j appender found again by its name), and ``stop_cause`` reads the last of them when
a job fails on a stopped SparkContext. The console shows the backends' lines at the driver's log level, as before
(none at the jobs' FATAL): the job prints the cause in its own line.

    record_stop_causes(spark)        # after the session's log level is set
    ...
    stop_cause()                     # 'Application has been killed. Reason: Master removed our application: FAILED'
"""
import atexit
import os
import tempfile

APPENDER = "sparkps-stop-causes"
# the scheduler backends that log why the cluster manager ended the application before stopping the SparkContext
BACKENDS = ("org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend",
            "org.apache.spark.scheduler.cluster.YarnClientSchedulerBackend")


def record_stop_causes(spark):
    """Route the ERROR lines of ``BACKENDS`` on ``spark``'s driver to a temporary file (removed when this program
    ends), found by ``stop_cause``. Nothing on a Spark Connect session (its driver is the server's) or when the
    driver's logging is not log4j 2. Blocks for a few JVM calls."""
    from sparkps.spark.common.session import is_connect
    if is_connect(spark):
        return
    jvm = spark.sparkContext._jvm
    try:
        context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
        config = context.getConfiguration()
        if config.getAppender(APPENDER) is not None:
            return
        handle, path = tempfile.mkstemp(prefix=APPENDER + "-", suffix=".log")
        os.close(handle)
        atexit.register(_remove, path)
        core = jvm.org.apache.logging.log4j.core
        layout = core.layout.PatternLayout.newBuilder().withPattern("%m%n").build()
        appender = core.appender.FileAppender.newBuilder().setName(APPENDER).withFileName(path) \
            .setLayout(layout).setConfiguration(config).build()
        appender.start()
        config.addAppender(appender)
        error, root = jvm.org.apache.logging.log4j.Level.ERROR, config.getRootLogger()
        shown = root.getLevel()          # what the console shows stays as it was: the root's appenders at its level
        for name in BACKENDS:
            logger = core.config.LoggerConfig(name, shown if shown.isLessSpecificThan(error) else error, False)
            logger.addAppender(appender, error, None)
            for console in root.getAppenders().values():
                logger.addAppender(console, shown, None)
            config.addLogger(name, logger)
        context.updateLoggers()
    except Exception:      # py4j's error: a driver logging through something else keeps Spark's own lines
        return


def stop_cause():
    """The last line ``record_stop_causes`` recorded in this program's JVM, or None (none recorded, no JVM, no
    recorder). Blocks for a JVM call and a small file read."""
    from pyspark import SparkContext
    jvm = SparkContext._jvm
    if jvm is None:
        return None
    try:
        appender = jvm.org.apache.logging.log4j.LogManager.getContext(False).getConfiguration().getAppender(APPENDER)
        path = str(appender.getFileName()) if appender is not None else None
    except Exception:      # py4j's error: the JVM has gone
        return None
    if not path:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip() and not line.strip().startswith(("at ", "..."))]
    except OSError:
        return None
    return lines[-1] if lines else None


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass

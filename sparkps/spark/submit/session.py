"""The Spark session of a spark-submit job (jobs/train_classifier.py, jobs/train_ctr.py), classic or Spark Connect:

    spark = job_session("sparkps train_ctr", master=args.master, remote=args.remote)
    choose_worker_python(spark)        # sparkps.spark.driver.checks, either kind: the job calls it next

A job gets a Spark Connect session three ways: ``spark-submit --conf spark.api.mode=connect`` (pyspark starts a
local Connect server in spark-submit's JVM and ``SparkSession.builder.getOrCreate()`` returns its client), the
job's ``--remote sc://HOST:PORT`` flag, or SPARK_REMOTE in the environment (the two last: a server already running;
no JVM is started on this machine). Nothing here touches a SparkContext on a Connect session.
"""
import logging
import os
import sys
import warnings

LOG = logging.getLogger("sparkps.spark.submit")


def remote_of(flag):
    """The Spark Connect URL the job connects to: ``--remote`` else SPARK_REMOTE, else None (a classic session, or
    the Connect session spark.api.mode=connect gives)."""
    return flag or os.environ.get("SPARK_REMOTE") or None


def run_by_spark_submit():
    """True when spark-submit started this driver (its gateway, or its Connect client's settings, in the
    environment); False for plain ``python job.py``."""
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT") or os.environ.get("PYSPARK_REMOTE_INIT_CONF_LEN"))


def submitted_conf():
    """The settings spark-submit (or spark-defaults.conf) gave this driver: a dict, empty when the job runs as
    plain python without defaults. Under spark.api.mode=connect they are read from the environment spark-submit
    set for its Connect client (PYSPARK_REMOTE_INIT_CONF_*), else from the JVM gateway before any session
    exists. Blocks for a JVM start when none runs yet (plain python). Run as plain python, the master the
    started JVM reports (spark-submit's own default, local[*]) is no setting of the user's: it is left out."""
    import json
    submitted = run_by_spark_submit()
    found = {}
    for i in range(int(os.environ.get("PYSPARK_REMOTE_INIT_CONF_LEN", "0") or 0)):
        found.update(json.loads(os.environ["PYSPARK_REMOTE_INIT_CONF_%d" % i]))
    if str(found.get("spark.api.mode", "")).lower() == "connect":
        return found
    from pyspark import SparkConf, SparkContext
    SparkContext._ensure_initialized()
    found = dict(SparkConf().getAll())
    if not submitted:
        found.pop("spark.master", None)
    return found


def check_reachable(url, timeout=5.0):
    """ConfigError naming ``url`` when a standalone master (``spark://HOST:PORT[,HOST:PORT]``) or a Spark Connect
    server (``sc://HOST[:PORT]``) accepts no connection: one line within ``timeout`` s per address, instead of
    Spark's retries for minutes. Other masters (local, yarn, k8s, mesos) are not probed. Blocks at most
    ``timeout`` s per address."""
    import socket
    from urllib.parse import urlparse

    from sparkps.errors import ConfigError
    if url.startswith("spark://"):
        addresses = [a.rsplit(":", 1) for a in url[len("spark://"):].split(",")]
        addresses = [(a[0], int(a[1]) if len(a) > 1 and a[1].isdigit() else 7077) for a in addresses]
    elif url.startswith("sc://"):
        parsed = urlparse("http://" + url[len("sc://"):].split(";", 1)[0])
        addresses = [(parsed.hostname or "localhost", parsed.port or 15002)]
    else:
        return
    reasons = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            reasons.append("%s:%d: %s" % (host, port, exc.strerror or exc))
    raise ConfigError("the Spark %s %s cannot be reached (%s)"
                      % ("Connect server" if url.startswith("sc://") else "master", url, "; ".join(reasons)))


def session_master(spark, remote=None):
    """The master ``spark`` runs on, as the session says it (a Connect session: its server's, or ``remote``)."""
    from sparkps.spark.common.session import conf, is_connect
    if is_connect(spark):
        found = conf(spark, "spark.master")
        return "%s (Spark Connect%s)" % (found, " server " + remote if remote else "") if found else remote
    return spark.sparkContext.master


def connect_mode(conf):
    """True when spark-submit ran the job with ``spark.api.mode=connect``."""
    return str(conf.get("spark.api.mode", "")).lower() == "connect"


def own_gateway():
    """Forget spark-submit's JVM gateway, so that the local Connect server starts in a JVM of the job's own:
    under spark.api.mode=connect spark-submit's JVM is a Connect client's, without the server's classes (the
    Connect plugin, classic SQL). That JVM ends with this process, as the server's does."""
    for key in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        os.environ.pop(key, None)


def job_session(app_name, master=None, remote=None, default_master="local[2]", settings=None, log_level="FATAL"):
    """The job's SparkSession: with ``remote`` a Spark Connect client of that server (``--master`` ignored, with a
    warning); otherwise the session spark-submit configured (its master, its settings, a Connect one under
    spark.api.mode=connect) or, run as plain python, one on ``master`` (default ``default_master``) with this
    interpreter as the executors' Python (the job then calls
    ``driver.checks.choose_worker_python``). ``settings`` are set where spark-submit did not set them. A classic
    session records why Spark may stop its SparkContext by itself (``stop_causes.record_stop_causes``). Blocks until
    the session is up (a JVM start, or a connection to the server)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    settings = dict(settings or {})
    if remote:
        if master:
            LOG.warning("--master %s ignored: the job runs on the Spark Connect server %s", master, remote)
        check_reachable(remote)
        builder = SparkSession.builder.remote(remote).appName(app_name)
        spark = builder.getOrCreate()
        for key, value in settings.items():
            try:
                spark.conf.set(key, value)
            except Exception:      # a static setting the server fixed at its start: the server's value holds
                pass
    else:
        conf = submitted_conf()
        builder = SparkSession.builder.appName(app_name)
        if "spark.master" not in conf:
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            builder = builder.master(master or default_master)
        elif master and master != conf["spark.master"]:
            LOG.warning("--master %s ignored: spark-submit set the master to %s", master, conf["spark.master"])
        if connect_mode(conf):
            # pyspark reads the API mode from the builder, not from spark-submit's settings: say it, and the
            # master its local Connect server runs on
            own_gateway()
            builder = builder.config("spark.api.mode", "connect").master(conf.get("spark.master", "local[*]"))
        check_reachable(conf.get("spark.master") or master or default_master)
        for key, value in settings.items():
            if key not in conf:
                builder = builder.config(key, value)
        with warnings.catch_warnings():      # a Connect client sets them again, at run time: static ones refuse
            warnings.filterwarnings("ignore", message=".*CANNOT_MODIFY_CONFIG.*")
            spark = builder.getOrCreate()
    set_log_level(spark, log_level)
    from sparkps.spark.submit.stop_causes import record_stop_causes
    record_stop_causes(spark)          # why Spark stops the SparkContext by itself, for the job's one line
    return spark


def set_log_level(spark, level):
    """The driver's log level on a classic session; a Spark Connect session's logs are its server's (nothing
    changes)."""
    from sparkps.spark.common.session import is_connect
    if not is_connect(spark):
        spark.sparkContext.setLogLevel(level)


def silence_jvm_logs(spark):
    """Turn every logger of the driver's JVM off, those with a level of their own too (Spark's log4j settings give
    Jetty's and Hadoop's their own, which ``setLogLevel`` leaves alone). A job calls it once it is failing: the
    JVM threads the failure left running (a read the Ctrl-C interrupted, the UI it was mounting) log their own
    errors while the session stops, after the job's one line. Nothing on a Spark Connect session (its logs are its
    server's) or a JVM already gone. Blocks for one call to the JVM."""
    from sparkps.spark.common.session import is_connect
    if is_connect(spark):
        return
    try:
        jvm = spark.sparkContext._jvm
        jvm.org.apache.logging.log4j.core.config.Configurator.setAllLevels(
            "", jvm.org.apache.logging.log4j.Level.OFF)
    except Exception:        # the JVM has gone: nothing is left to log
        pass


def stop_session(spark, failing=False):
    """Stop the job's session; with ``failing`` (the job is ending on an error or Ctrl-C) the JVM's logs are
    silenced first (:func:`silence_jvm_logs`). A session already stopped (Ctrl-C reaches the JVM too, a Connect
    server gone) is no second failure. Blocks until Spark has stopped."""
    if failing:
        silence_jvm_logs(spark)
    try:
        spark.stop()
    except Exception:        # the JVM or the Connect server has gone: nothing is left to stop
        pass

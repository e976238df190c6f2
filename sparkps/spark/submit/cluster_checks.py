"""What a job needs from a cluster whose executors may run on other machines, checked as early as it can be:

- ``check_model_dir`` (before Spark starts): train_ctr's servers stage the trained tables in
  ``spark.sparkps.modelDir``, which must then be set (a folder of a shared file system);
- ``check_shared_output`` (once the executors are known): a job's ``--output`` is written by the executors too
  (train_classifier's ``predictions/``, a saved model's Spark metadata), so on a master whose executors run on other
  hosts than the driver a plain path on the driver's disk is refused, unless it lies under
  ``spark.sparkps.modelDir`` (declared shared by the user). A URI (``hdfs://``, ``s3a://`` ...) is storage Spark
  reaches from every executor and is left to Spark.

    check_model_dir(master, conf, "train_ctr")                 # ConfigError naming the setting to pass
    check_shared_output(spark, args.output, "train_classifier")    # ConfigError naming the hosts
"""
import os

from sparkps.errors import ConfigError
from sparkps.spark.common.worker_python import on_this_machine

MODEL_DIR = "spark.sparkps.modelDir"     # sparkps.spark.model.spark_model.MODEL_DIR_CONF


def check_model_dir(master, conf, job):
    """ConfigError when ``master`` runs executors on other machines (not local, not local-cluster, not a Spark
    Connect URL whose server decides) and ``conf`` (the settings spark-submit was given) lacks
    ``spark.sparkps.modelDir``. Blocks never."""
    if not master or master.startswith("sc://") or on_this_machine(master) or conf.get(MODEL_DIR):
        return
    raise ConfigError("master %s runs executors on other machines, and %s's servers write the trained tables where "
                      "the driver and every executor read them: pass --conf %s=DIR, a folder of a file system every "
                      "node mounts at the same path" % (master, job, MODEL_DIR))


def cluster_conf(master):
    """The settings spark-submit (or spark-defaults.conf) gives the job, read only when ``master`` runs executors
    on other machines ({} otherwise, and for a Spark Connect URL). Blocks for a JVM gateway's start when the job
    runs as plain python (no SparkContext is made)."""
    if not master or master.startswith("sc://") or on_this_machine(master):
        return {}
    from sparkps.spark.submit.session import submitted_conf
    return submitted_conf()


def is_plain_path(path):
    """True for a path on a local disk (no scheme, or ``file:``), False for a URI Spark resolves (hdfs://...)."""
    path = str(path)
    return "://" not in path or path.startswith("file:")


def under(path, folder):
    """True when ``path`` lies inside ``folder`` (both plain paths, compared as absolute real paths)."""
    if not folder:
        return False
    path, folder = (os.path.realpath(str(p)[len("file:"):] if str(p).startswith("file:") else str(p))
                    for p in (path, folder))
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def same_host(host, driver_host):
    """True when ``host`` names the driver's machine: the same address once resolved, or both loopback ones."""
    import ipaddress
    import socket

    def address(name):
        try:
            return ipaddress.ip_address(socket.gethostbyname(str(name).strip("[]")))
        except (OSError, ValueError):
            return None
    if host == driver_host:
        return True
    a, b = address(host), address(driver_host)
    return a is not None and b is not None and (a == b or a.is_loopback and b.is_loopback)


def output_refusal(output, master, driver_host, executor_hosts, model_dir, job):
    """The one line refusing ``output`` (see the module docstring), or None when it is fine: a URI, a master whose
    executors all run on this machine, executors all on ``driver_host``, or a folder under ``model_dir``."""
    if not is_plain_path(output) or on_this_machine(master) or under(output, model_dir):
        return None
    others = sorted({host for host in executor_hosts if host and not same_host(host, driver_host)})
    if not others:
        return None
    return ("%s: --output %s is a folder on this machine (%s), but executors on %s write into it (the predictions, "
            "the model's Spark metadata): give a folder every node mounts at the same path, under %s, or a URI of "
            "shared storage (hdfs://, s3a://...)" % (job, output, driver_host, ", ".join(others), MODEL_DIR))


def executor_hosts(spark):
    """The hosts of the executors registered now (the driver's own entry left out) on a classic session; () on
    Spark Connect (the server's cluster is not seen from here). Blocks for one call to the JVM."""
    from sparkps.spark.common.session import is_connect
    if is_connect(spark):
        return ()
    sc = spark.sparkContext
    driver = "%s:%s" % (sc.getConf().get("spark.driver.host", ""), sc.getConf().get("spark.driver.port", ""))
    infos = sc._jsc.sc().statusTracker().getExecutorInfos()
    return tuple(info.host() for info in infos if "%s:%s" % (info.host(), info.port()) != driver)


def check_shared_output(spark, output, job):
    """ConfigError (see ``output_refusal``) for ``output`` on ``spark``'s cluster, from the executors registered
    now. Blocks for one call to the JVM."""
    from sparkps.spark.common.session import conf, is_connect
    if is_connect(spark):
        return
    sc = spark.sparkContext
    refusal = output_refusal(output, sc.master, sc.getConf().get("spark.driver.host", ""), executor_hosts(spark),
                             conf(spark, MODEL_DIR), job)
    if refusal:
        raise ConfigError(refusal)

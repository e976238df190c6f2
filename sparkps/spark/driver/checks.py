"""Checks made on the driver before the barrier stage starts, so a bad setup fails at once with advice.

The slot arithmetic is a pure function of the master string and a few config values, tested without Spark.
The same checks run on classic and Spark Connect sessions: ``check_session`` reads the settings through the
session (``spark.common.session.conf``), with no SparkContext. ``stage_profile`` turns the ``resourceProfile``
param (stage-level scheduling: ``task.cpus=2,task.gpu=1``) into the ResourceProfile the barrier stage is given.
"""
import logging
import os

from sparkps.errors import ConfigError
from sparkps.spark.common.worker_python import LOCAL as _LOCAL
from sparkps.spark.common.worker_python import LOCAL_CLUSTER as _LOCAL_CLUSTER
from sparkps.spark.common.worker_python import check_worker_python, settle_worker_python  # noqa: F401 (re-exported)

LOG = logging.getLogger("sparkps.jobs")



def count_task_slots(master, conf, default_parallelism, cpu_count=None):
    """How many tasks of one stage can run at once.

    ``conf`` maps Spark config keys to strings (missing keys absent).  Local masters are counted from their
    brackets; clusters from ``spark.executor.instances`` x (``spark.executor.cores`` // ``spark.task.cpus``),
    falling back to ``default_parallelism`` (the cores Spark has registered) // ``spark.task.cpus``.
    """
    task_cpus = max(1, int(conf.get("spark.task.cpus", "1")))
    match = _LOCAL.match(master)
    if match:
        threads = match.group(1)
        if threads is None:
            return 1
        cores = (cpu_count or os.cpu_count() or 1) if threads == "*" else int(threads)
        return max(cores // task_cpus, 0)
    match = _LOCAL_CLUSTER.match(master)
    if match:
        return int(match.group(1)) * (int(match.group(2)) // task_cpus)
    instances, cores = conf.get("spark.executor.instances"), conf.get("spark.executor.cores")
    if instances and cores:
        return int(instances) * (int(cores) // task_cpus)
    return max(int(default_parallelism) // task_cpus, 0)


def check_roles(num_workers, num_servers, names=("num_workers", "num_servers")):
    """Raise ConfigError unless 1 <= num_servers <= num_workers (servers start beside the first workers); ``names``:
    what the user set them as (SparkTrainer's arguments, an estimator's params, a job's flags), named in the error."""
    workers, servers = names
    for name, value in ((workers, num_workers), (servers, num_servers)):
        if int(value) < 1:
            raise ConfigError("%s must be >= 1, got %r" % (name, value))
    if int(num_servers) > int(num_workers):
        raise ConfigError("%s=%d > %s=%d: each server starts beside one worker task, so use %s <= %s"
                          % (servers, num_servers, workers, num_workers, servers, workers))


def check_cluster(master, conf, default_parallelism, num_workers, cpu_count=None):
    """Raise ConfigError when the barrier stage of ``num_workers`` tasks cannot be scheduled."""
    if str(conf.get("spark.dynamicAllocation.enabled", "false")).lower() == "true":
        raise ConfigError("SparkTrainer runs a barrier stage, which Spark refuses under dynamic allocation: "
                          "set spark.dynamicAllocation.enabled=false")
    slots = count_task_slots(master, conf, default_parallelism, cpu_count)
    if slots < num_workers:
        raise ConfigError(
            "SparkTrainer needs %d task slots for %d workers but %s has %d: use num_workers <= %d or more "
            "executor cores (spark.executor.cores / spark.executor.instances, or a larger local[N])"
            % (num_workers, num_workers, master, slots, max(slots, 1)))
    return slots


def workers_for_slots(master, workers, servers, flag="--num-workers"):
    """``(workers, servers)`` that fit a local master's task slots: fewer workers, with a warning, when it has
    fewer slots than asked (other masters are checked by SparkTrainer once Spark runs). A bad count is a ConfigError
    naming ``flag`` (or ``--num-servers``)."""
    check_roles(workers, servers, (flag, "--num-servers"))
    if not is_local(master):
        return workers, servers
    slots = count_task_slots(master, {}, 0)
    if slots < 1:
        raise ConfigError("the Spark master %s has no task slots for training workers" % master)
    if slots >= workers:
        return workers, servers
    LOG.warning("%s %d but the master %s has %d task slots: training with %d workers", flag, workers, master,
                slots, slots)
    return slots, min(servers, slots)


def choose_worker_python(sc):
    """The worker Python settled for a classic SparkContext or a session of either kind
    (sparkps.spark.common.worker_python.settle_worker_python, which every Spark entry point calls)."""
    return settle_worker_python(sc)


def is_local(master):
    """True for local[...] masters: every role runs on this machine and binds 127.0.0.1."""
    return bool(_LOCAL.match(master))


def scheduler_host(master, conf):
    """Where the driver's scheduler binds: 127.0.0.1 for local masters, else the address executors already
    use to reach the driver (``spark.driver.host``), resolved to an IP."""
    if is_local(master):
        return "127.0.0.1"
    host = conf.get("spark.driver.host") or "127.0.0.1"
    import socket
    try:
        return socket.gethostbyname(host)
    except OSError:
        raise ConfigError("cannot resolve the driver address %r (spark.driver.host); set it to an IP the "
                          "executors can reach" % host) from None


def spark_conf_dict(sc):
    """The SparkContext's config as a plain dict of strings (for the checks above)."""
    return dict(sc.getConf().getAll())


SESSION_KEYS = ("spark.master", "spark.task.cpus", "spark.executor.instances", "spark.executor.cores",
                "spark.dynamicAllocation.enabled", "spark.driver.host", "spark.pyspark.python",
                "spark.default.parallelism")


def session_conf_dict(session):
    """The settings the checks read, as a dict of strings (unset keys absent), from a SparkSession of either kind
    (one round trip per key on Spark Connect; a classic session reads its SparkContext's config)."""
    from sparkps.spark.common.session import conf, is_connect
    if not is_connect(session):
        return spark_conf_dict(session.sparkContext)
    values = {key: conf(session, key) for key in SESSION_KEYS}
    return {key: value for key, value in values.items() if value is not None}


def default_parallelism(session, settings=None):
    """The session's default parallelism (the cores Spark has registered): the SparkContext's on a classic session;
    on Spark Connect ``spark.default.parallelism`` when set, else the partitions of ``spark.range`` over 2**16 rows
    (one small job, which blocks until it ran)."""
    from sparkps.spark.common.session import is_connect
    if not is_connect(session):
        return session.sparkContext.defaultParallelism
    settings = session_conf_dict(session) if settings is None else settings
    if settings.get("spark.default.parallelism"):
        return int(settings["spark.default.parallelism"])
    from pyspark.sql import functions as F
    partitions = session.range(0, 1 << 16).select(F.spark_partition_id().alias("partition"))
    last = partitions.agg(F.max("partition")).first()[0]
    return int(last or 0) + 1


def check_session(session, num_workers):
    """``check_cluster`` for a SparkSession of either kind (dynamic allocation, fewer task slots than workers: one
    ConfigError saying what to change, before the stage could hang). Returns the task slots. Blocks for the reads
    of ``session_conf_dict`` and ``default_parallelism``."""
    settings = session_conf_dict(session)
    master = settings.get("spark.master", "")
    if str(settings.get("spark.dynamicAllocation.enabled", "false")).lower() == "true":
        return check_cluster(master, settings, 0, num_workers)     # refused before anything is counted
    return check_cluster(master, settings, default_parallelism(session, settings), num_workers)


def parse_resource_profile(text, param="resourceProfile"):
    """``{"cpus": int, resource: amount}`` of a ``resourceProfile`` param: comma-separated ``task.NAME=AMOUNT``
    (``task.cpus=2,task.gpu=1``: what each worker task needs; {} for ''). ConfigError naming ``param`` for a
    malformed entry, or an ``executor.*`` request: executor resources need dynamic allocation, which a barrier
    stage refuses."""
    requests = {}
    for entry in [e.strip() for e in str(text or "").split(",") if e.strip()]:
        name, sep, value = entry.partition("=")
        name, value = name.strip(), value.strip()
        if name.startswith("executor."):
            raise ConfigError("param %s: %r asks for executor resources, which Spark grants a stage only under "
                              "dynamic allocation, and a barrier stage refuses dynamic allocation: request task "
                              "resources (task.cpus=N, task.gpu=N) and size the executors in the cluster's own "
                              "settings (spark.executor.cores, spark.executor.resource.gpu.amount)" % (param, entry))
        if not sep or not name.startswith("task.") or len(name) <= len("task."):
            raise ConfigError("param %s: %r is not task.NAME=AMOUNT (e.g. task.cpus=2,task.gpu=1)" % (param, entry))
        resource = name[len("task."):]
        try:
            amount = int(value) if resource == "cpus" else float(value)
        except ValueError:
            amount = None
        if amount is None or amount <= 0:
            raise ConfigError("param %s: %r needs a positive %s" % (param, entry, "whole number of cpus"
                                                                    if resource == "cpus" else "amount"))
        requests[resource] = amount
    return requests


def stage_profile(text, master=None, param="resourceProfile"):
    """The ``pyspark.resource.ResourceProfile`` of a ``resourceProfile`` param (see ``parse_resource_profile``) for
    the barrier stage, or None when it is empty, or when ``master`` is local (local masters schedule no stage
    resources: the request is logged and ignored there). Works on either session kind (on Spark Connect the profile
    is made on the server when the stage is planned). Pass it to ``DataFrame.mapInArrow(..., barrier=True,
    profile=...)`` or ``rdd.withResources(...)``. ConfigError naming ``param`` for a bad request."""
    requests = parse_resource_profile(text, param)
    if not requests:
        return None
    if master is not None and (_LOCAL.match(master) or _LOCAL_CLUSTER.match(master)):
        LOG.warning("param %s=%r is ignored on the local master %s, which schedules no stage resources", param,
                    text, master)
        return None
    from pyspark.resource import ResourceProfileBuilder, TaskResourceRequests
    tasks = TaskResourceRequests()
    for resource, amount in requests.items():
        tasks = tasks.cpus(amount) if resource == "cpus" else tasks.resource(resource, amount)
    return ResourceProfileBuilder().require(tasks).build


def task_cpus(text, conf):
    """CPUs one worker task takes: ``task.cpus`` of a ``resourceProfile`` param, else ``spark.task.cpus`` of
    ``conf`` (for counting slots with ``count_task_slots``)."""
    cpus = parse_resource_profile(text).get("cpus")
    return int(cpus) if cpus else max(1, int(conf.get("spark.task.cpus", "1")))

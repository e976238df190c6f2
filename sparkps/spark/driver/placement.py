"""Where a fit's scheduler runs, and what a fit knows of its session's cluster, on classic and Spark Connect
sessions alike.

    placement = choose_placement('auto', connect=True, master='local[2]', client_host='localhost')   # 'driver'
    master, conf, parallelism = cluster_facts(session)

The scheduler runs where every task can reach it: on the driver when tasks can connect back to it (a classic
session, whose executors already talk to the driver; a Spark Connect client on the machine of a local master),
otherwise inside the stage (rank 0's task hosts it, see ``sparkps.spark.task.barrier_task.stage_scheduler``).
The decision is a pure function; only ``cluster_facts`` and ``connect_host`` ask the session (a Connect session:
one round trip a setting).
"""
from sparkps.errors import ConfigError

PLACEMENTS = ("auto", "driver", "stage")
LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0")
CONNECT_KEYS = ("spark.master", "spark.task.cpus", "spark.executor.instances", "spark.executor.cores",
                "spark.dynamicAllocation.enabled", "spark.driver.host", "spark.authenticate",
                "spark.network.crypto.enabled", "spark.default.parallelism")


def check_placement(setting):
    """The scheduler placement setting ('auto', 'driver' or 'stage'); ConfigError naming a bad one."""
    value = str(setting).strip().lower()
    if value not in PLACEMENTS:
        raise ConfigError("scheduler must be one of %s, got %r" % (", ".join(PLACEMENTS), setting))
    return value


def choose_placement(setting, connect, master, client_host=None):
    """'driver' or 'stage' for ``setting``: 'auto' is the driver on a classic session, and on a Spark Connect
    one when its tasks run on this machine (a local master behind a Connect server on a loopback address),
    else the stage."""
    setting = check_placement(setting)
    if setting != "auto":
        return setting
    if not connect:
        return "driver"
    from sparkps.spark.driver.stage import same_machine
    local_server = client_host is not None and str(client_host).strip("[]") in [h.strip("[]") for h in LOOPBACK]
    return "driver" if local_server and same_machine(master) else "stage"


def connect_host(session):
    """The host of a Spark Connect session's server (None when it cannot be told)."""
    try:
        return session.client.host
    except Exception:      # an older client without the property: decide as for a remote server
        return None


def cluster_facts(session):
    """``(master, conf, default_parallelism)`` of ``session``: conf maps setting names to strings (absent when
    unset). A Connect session's parallelism is unknown unless set (then the worker count is taken as its
    slots: Spark's own barrier check still refuses a stage that does not fit)."""
    from sparkps.spark.common.session import conf, is_connect
    if not is_connect(session):
        from sparkps.spark.driver.checks import spark_conf_dict
        sc = session.sparkContext
        return sc.master, spark_conf_dict(sc), sc.defaultParallelism
    found = {key: conf(session, key) for key in CONNECT_KEYS}
    found = {k: v for k, v in found.items() if v is not None}
    return found.get("spark.master", "local[*]"), found, int(found.get("spark.default.parallelism", 0) or 0)


def rdd_refused(kind="RDD"):
    """The ConfigError for an RDD given to a fit on a Spark Connect session, saying how to pass a DataFrame."""
    return ConfigError(
        "a Spark Connect session has no RDDs, so fit cannot read this %s: pass a DataFrame instead, with a features "
        "column (a Vector or array<float>; array<bigint> for 64-bit ids) and a label column, e.g. "
        "spark.createDataFrame([(features_list, label), ...], ['features', 'label']); named inputs are one column "
        "each (SparkTrainer(inputs=...))" % kind)

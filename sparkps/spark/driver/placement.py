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
REACH_PROBE_SECONDS = 3.0
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


def choose_placement(setting, connect, master, client_host=None, reached=None):
    """'driver' or 'stage' for ``setting``: 'auto' is the driver when the tasks reached the driver's address
    (``reached``: the answer of ``tasks_reach``, None when not probed), else the stage; unprobed, the driver on a
    classic session, and on a Spark Connect one when its tasks run on this machine (a local master behind a
    Connect server on a loopback address), else the stage."""
    setting = check_placement(setting)
    if setting != "auto":
        return setting
    if reached is not None:
        return "driver" if reached else "stage"
    if not connect:
        return "driver"
    from sparkps.spark.driver.stage import same_machine
    local_server = client_host is not None and str(client_host).strip("[]") in [h.strip("[]") for h in LOOPBACK]
    return "driver" if local_server and same_machine(master) else "stage"


def needs_probe(setting, connect, master):
    """True when 'auto' must ask the tasks whether they reach the driver: a classic session whose executors may
    run on other machines (a cluster master). A local master's tasks share the driver's machine; a Connect
    session's driver is its server, decided by ``choose_placement`` without a probe."""
    from sparkps.spark.driver.stage import same_machine
    return check_placement(setting) == "auto" and not connect and not same_machine(master)


def driver_listener(host):
    """A TCP socket listening on ``(host, any free port)`` of the driver, for the tasks' probe to connect to."""
    import socket
    listener = socket.create_server((str(host).strip("[]"), 0))
    listener.settimeout(0)
    return listener


def tasks_reach(session, host, timeout=REACH_PROBE_SECONDS):
    """True when a task of ``session``'s cluster opens a TCP connection to ``host`` (the address the driver's
    scheduler would bind) on a port the driver listens on. Blocks for one single-task job (at most ``timeout``
    seconds of connecting)."""
    from sparkps.spark.task.reach import probe_batches
    listener = driver_listener(host)
    try:
        port = listener.getsockname()[1]
        rows = session.range(0, 1, 1, 1).mapInArrow(probe_batches(host, port, timeout), "reached boolean").collect()
        return bool(rows) and all(r.reached for r in rows)
    finally:
        listener.close()


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

"""What protects a Spark fit's traffic: CURVE for the parameter-server roles, Spark's own settings for the task
closure (which carries the job secret to the executors over Spark's RPC).

A fit's roles use CURVE when asked (``SparkTrainer(curve=True)``, the estimators' ``curve`` Param, the jobs'
``--curve``) and, by default, whenever the scheduler binds an address other than loopback
(:func:`sparkps.comm.message.curve_for`); the keys derive from the job's secret, new for every fit. On a
master other than ``local[...]`` the task closure crosses the network through Spark's RPC: unless Spark
authenticates and encrypts it (``spark.authenticate``, ``spark.network.crypto.enabled``) a peer on that network
could read the secret, so the driver warns once.
"""
import logging

from sparkps.comm.message import curve_for

log = logging.getLogger(__name__)
_WARNED = set()
RPC_SETTINGS = ("spark.authenticate", "spark.network.crypto.enabled")


def fit_curve(requested, scheduler_host):
    """Whether this fit's roles use CURVE (``requested``: True, False or None for "decide from the host")."""
    return curve_for(scheduler_host, requested)


def unprotected_rpc_settings(master, conf):
    """The Spark settings of ``RPC_SETTINGS`` that are off on a master whose tasks leave this machine (empty
    for local masters)."""
    from sparkps.spark.driver.checks import is_local
    if is_local(master):
        return []
    return [name for name in RPC_SETTINGS if str(conf.get(name, "false")).strip().lower() != "true"]


def warn_unprotected_rpc(master, conf):
    """Log one warning per driver process (and master) when :func:`unprotected_rpc_settings` finds any;
    returns the settings found off."""
    off = unprotected_rpc_settings(master, conf)
    if off and master not in _WARNED:
        _WARNED.add(master)
        log.warning("sparkps: %s %s off on master %s: the job secret travels to the executors in the task closure "
                    "over Spark's RPC unauthenticated and unencrypted; set %s=true to protect it",
                    " and ".join(off), "is" if len(off) == 1 else "are", master, "=true and ".join(off))
    return off

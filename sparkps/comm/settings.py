"""Node settings from the ps-lite-style environment, parsed in one place for the CLI, the server runner and
the worker's kvstore.

Variables: ``SPARKPS_SCHEDULER_URI`` (a URI, or a bare host completed with ``SPARKPS_SCHEDULER_PORT``),
``SPARKPS_SCHEDULER_PORT`` (alone: ``tcp://127.0.0.1:PORT``), ``SPARKPS_SECRET``, ``SPARKPS_RANK``. A value
given explicitly wins over the environment. Nothing here blocks.

>>> NodeSettings.resolve(env={"SPARKPS_SCHEDULER_URI": "10.0.0.2", "SPARKPS_SCHEDULER_PORT": "9000",
...                           "SPARKPS_SECRET": "s"})
NodeSettings(scheduler_uri='tcp://10.0.0.2:9000', secret='s', rank=None)
"""
import os
from typing import NamedTuple

from sparkps.errors import ConfigError


def resolve_scheduler_uri(uri=None, env=None):
    """The scheduler URI: ``uri`` or ``SPARKPS_SCHEDULER_URI``, a bare host completed with
    ``SPARKPS_SCHEDULER_PORT``; raises ConfigError when there is none."""
    env = os.environ if env is None else env
    uri = uri or env.get("SPARKPS_SCHEDULER_URI")
    port = env.get("SPARKPS_SCHEDULER_PORT")
    if uri and "://" not in uri:
        if not port:
            raise ConfigError("scheduler address %r has no scheme or port (set SPARKPS_SCHEDULER_PORT)" % uri)
        uri = "tcp://%s:%s" % (uri, port)
    if not uri and port:
        uri = "tcp://127.0.0.1:%s" % port
    if not uri:
        raise ConfigError("no scheduler address: give --scheduler (scheduler_uri) or set SPARKPS_SCHEDULER_URI")
    return uri


def resolve_secret(value=None, env=None):
    """The job secret: ``value`` or ``SPARKPS_SECRET``; raises ConfigError when there is none."""
    env = os.environ if env is None else env
    value = value if value is not None else env.get("SPARKPS_SECRET")
    if not value:
        raise ConfigError("no job secret: give --secret (secret) or set SPARKPS_SECRET")
    return value


def resolve_rank(value=None, env=None):
    """The requested rank: ``value`` or ``SPARKPS_RANK`` (None: any free rank)."""
    env = os.environ if env is None else env
    if value is None and env.get("SPARKPS_RANK") not in (None, ""):
        try:
            return int(env["SPARKPS_RANK"])
        except ValueError:
            raise ConfigError("SPARKPS_RANK must be an integer, got %r" % env["SPARKPS_RANK"]) from None
    return value


class NodeSettings(NamedTuple):
    """Where a node finds its scheduler, the job secret and the rank it asks for."""
    scheduler_uri: str
    secret: str
    rank: int | None = None

    @classmethod
    def resolve(cls, scheduler_uri=None, secret=None, rank=None, env=None):
        """Fill the values not given from the environment; ConfigError naming the missing variable."""
        return cls(resolve_scheduler_uri(scheduler_uri, env), resolve_secret(secret, env), resolve_rank(rank, env))

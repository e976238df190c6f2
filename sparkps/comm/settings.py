"""Node settings from the ps-lite-style environment, parsed in one place for the CLI, the server runner and
the worker's kvstore.

Variables: ``SPARKPS_SCHEDULER_URI`` (a URI, or a bare host completed with ``SPARKPS_SCHEDULER_PORT``),
``SPARKPS_SCHEDULER_PORT`` (alone: ``tcp://127.0.0.1:PORT``), ``SPARKPS_SECRET``, ``SPARKPS_RANK``, and
``SPARKPS_MAX_MESSAGE_BYTES`` (the per-frame limit of every socket, see docs/security.md), ``SPARKPS_CURVE`` and
``SPARKPS_TABLES_ROOT`` (the folder below which a server writes tables, see docs/tables.md) and
``SPARKPS_START_TABLES`` (the tables folder of the model a fit starts from, docs/warm_start.md).
One precedence everywhere (a Spark fit, ``sparkps launch``, a hand-started role): a value given explicitly wins
over the environment, which wins over the default; docs/cli.md has the table. Nothing here blocks.

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


_TRUE = ("1", "true", "t", "yes", "y", "on")
_FALSE = ("0", "false", "f", "no", "n", "off")


def resolve_curve(value=None, env=None):
    """Whether CURVE was asked for: ``value`` when given (True / False), else ``SPARKPS_CURVE`` (``1``/``true``/
    ``yes``/``on``: True, ``0``/``false``/``no``/``off``: False), else None (the caller's default applies);
    ConfigError naming the variable for any other text."""
    if value is not None:
        return bool(value)
    env = os.environ if env is None else env
    raw = str(env.get("SPARKPS_CURVE", "")).strip().lower()
    if raw == "":
        return None
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigError("SPARKPS_CURVE must be 1/true/yes/on or 0/false/no/off, got %r" % env["SPARKPS_CURVE"])


class NodeSettings(NamedTuple):
    """Where a node finds its scheduler, the job secret and the rank it asks for."""
    scheduler_uri: str
    secret: str
    rank: int | None = None

    @classmethod
    def resolve(cls, scheduler_uri=None, secret=None, rank=None, env=None):
        """Fill the values not given from the environment; ConfigError naming the missing variable."""
        return cls(resolve_scheduler_uri(scheduler_uri, env), resolve_secret(secret, env), resolve_rank(rank, env))


def resolve_tables_root(value=None, env=None):
    """The folder below which a server writes the tables a request asks for (COMMAND write_tables): ``value`` or
    ``SPARKPS_TABLES_ROOT``, as an absolute path with symbolic links resolved; None when neither is set (the
    server then writes no table). Fixed when the server starts; nothing a request says moves it."""
    env = os.environ if env is None else env
    raw = value if value is not None else env.get("SPARKPS_TABLES_ROOT")
    if raw in (None, ""):
        return None
    return os.path.realpath(os.path.abspath(str(raw)))


def resolve_start_tables(value=None, env=None):
    """The tables folder (a manifest and its shard files, :mod:`sparkps.rows.shards`) whose rows a server loads on
    COMMAND load_tables (a fit that starts from a saved model): ``value`` or ``SPARKPS_START_TABLES``, as an absolute
    path; None when neither is set (the server then loads no table). Fixed when the server starts; no request names
    another folder."""
    env = os.environ if env is None else env
    raw = value if value is not None else env.get("SPARKPS_START_TABLES")
    if raw in (None, ""):
        return None
    return os.path.realpath(os.path.abspath(str(raw)))


# -- the size limit on every socket, enforced by libzmq before a frame is allocated or authenticated ------------
HEADER_LIMIT_BYTES = 4 * 1024 * 1024 + 64 * 1024  # the largest header frame (MAC + 4 MiB msgpack) with margin
# arrays travel in frames of at most 4 MiB (comm.message.FRAME_BYTES): the header's limit covers every frame of
# every model, and a stranger's frame costs a node at most that much before its MAC is checked
DEFAULT_MAX_MESSAGE_BYTES = HEADER_LIMIT_BYTES
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def message_size_limit(dense_elements=0, num_servers=1, sparse_rows=0, row_dim=0, itemsize=4, margin=1.25):
    """The largest legitimate frame, with ``margin``, for a model of ``dense_elements`` dense values cut into
    ``num_servers`` ranges (``comm.layout``) and sparse batches of at most ``sparse_rows`` rows of ``row_dim``
    values; never below the header limit.

    >>> message_size_limit(dense_elements=10_000_000, num_servers=2) // (1 << 20)
    23
    """
    dense = -(-int(dense_elements) // max(1, int(num_servers))) * itemsize
    sparse = int(sparse_rows) * max(int(row_dim) * itemsize, 8)
    return max(HEADER_LIMIT_BYTES, int(max(dense, sparse) * margin))


def resolve_max_message_bytes(value=None, env=None):
    """The per-frame size limit of every socket: ``value`` or ``SPARKPS_MAX_MESSAGE_BYTES`` (bytes, or with a
    K/M/G suffix), default the header limit (every array travels in frames below it); ConfigError naming the variable
    when it is not a size above the header limit."""
    env = os.environ if env is None else env
    raw = value if value is not None else env.get("SPARKPS_MAX_MESSAGE_BYTES")
    if raw in (None, ""):
        return DEFAULT_MAX_MESSAGE_BYTES
    text = str(raw).strip().upper().rstrip("B").rstrip("I")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    try:
        size = int(text[:len(text) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise ConfigError("SPARKPS_MAX_MESSAGE_BYTES must be a size in bytes (e.g. 268435456 or 256M), got %r"
                          % (raw,)) from None
    if size < HEADER_LIMIT_BYTES:
        raise ConfigError("SPARKPS_MAX_MESSAGE_BYTES=%r is below the %d bytes a message header may take"
                          % (raw, HEADER_LIMIT_BYTES))
    return size

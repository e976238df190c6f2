"""The distributed strategies by their MXNet-style kvstore names: the one table of the options each takes, whether
its rounds wait for the workers and whether it trains on the workers.

Everything else is derived from :data:`STRATEGY_TABLE` and read by the kvstore itself (``worker/dist_kvstore.py``:
the sync flag of each type, the local-training classes of ``worker/averaging.py``), SparkTrainer, the pyspark.ml
estimators, the spark-submit jobs and the CLI, so a strategy setting is checked once, the same way, before
anything starts:

>>> check_strategy('dist_sync_replicas', {'replicas_to_aggregate': 1})
{'replicas_to_aggregate': 1}
>>> parse_options(['interval_steps=4', 'moving_rate=0.1'])
{'interval_steps': 4, 'moving_rate': 0.1}
>>> STRATEGIES
('dist_sync', 'dist_async', 'dist_sync_replicas', 'dist_model_average', 'dist_easgd')
"""
from typing import NamedTuple

from sparkps.errors import ConfigError


class Strategy(NamedTuple):
    """One row of the table."""
    options: tuple      # the options it takes (NAME=VALUE on the command line, kvstoreParams in pyspark.ml)
    sync: bool          # a worker's rounds wait for the others (False: applied on arrival, or met every few steps)
    on_workers: bool    # the optimizer runs on the workers' own weights; they meet the servers every few steps


STRATEGY_TABLE = {
    "dist_sync": Strategy((), sync=True, on_workers=False),
    "dist_async": Strategy(("max_staleness",), sync=False, on_workers=False),
    "dist_sync_replicas": Strategy(("replicas_to_aggregate", "total_num_replicas"), sync=True, on_workers=False),
    "dist_model_average": Strategy(("interval_steps",), sync=False, on_workers=True),
    "dist_easgd": Strategy(("communication_period", "moving_rate"), sync=False, on_workers=True),
}
STRATEGIES = tuple(STRATEGY_TABLE)
# MXNet's device-side names of the first two strategies (gradients summed on the device first: one device here)
DEVICE_NAMES = {"dist_sync_device": "dist_sync", "dist_async_device": "dist_async", "dist_device_sync": "dist_sync"}
DIST_TYPES = STRATEGIES + tuple(DEVICE_NAMES)      # every kvstore type the parameter server serves
STRATEGY_OPTIONS = {name: strategy.options for name, strategy in STRATEGY_TABLE.items()}
# strategies whose optimizer runs on the workers, on their local copy of every weight: a sparse table's rows live
# only on the servers (a batch pulls the rows it reads), so these strategies cannot train one
LOCAL_STRATEGIES = tuple(name for name, strategy in STRATEGY_TABLE.items() if strategy.on_workers)
# the strategies a model with sparse tables (the CTR models' embeddings) can train with: those whose optimizer runs
# on the workers' own copy of every weight cannot train a table whose rows live only on the servers
SPARSE_STRATEGIES = tuple(name for name in STRATEGIES if name not in LOCAL_STRATEGIES)
# every option of every strategy, in the table's order (for help texts)
OPTION_NAMES = tuple(name for strategy in STRATEGY_TABLE.values() for name in strategy.options)
_POSITIVE_INTS = ("replicas_to_aggregate", "total_num_replicas", "interval_steps", "communication_period")


def check_strategy(kvtype, options=None, compression=None, strategies=STRATEGIES):
    """``options`` (a dict) if the strategy ``kvtype`` takes them; ConfigError naming an unknown type (and listing
    ``strategies``, those the caller can train with: :data:`SPARSE_STRATEGIES` for a model with sparse tables) or
    an unknown option.

    ``dist_model_average`` pushes weights, not gradients: 2-bit compression (which sends only -t, 0, +t) is a
    ConfigError with it.
    """
    kind = compression.get("type") if isinstance(compression, dict) else compression
    if kvtype == "dist_model_average" and kind == "2bit":
        raise ConfigError("kvstore 'dist_model_average' pushes weights, not gradients: 2bit compression does not "
                          "apply (use fp16 or none)")
    if kvtype not in STRATEGY_OPTIONS:
        refused = [name for name in STRATEGIES if name not in strategies]
        note = " (%s train on the workers' own weights and cannot train sparse tables)" % " and ".join(refused) \
            if refused else ""
        raise ConfigError("kvstore must be one of %s, got %r%s" % (", ".join(strategies), kvtype, note))
    options = dict(options or {})
    unknown = sorted(set(options) - set(STRATEGY_OPTIONS[kvtype]))
    if unknown:
        raise ConfigError("kvstore %r has no option(s) %s (known: %s)"
                          % (kvtype, ", ".join(unknown), ", ".join(STRATEGY_OPTIONS[kvtype]) or "none"))
    for name, value in options.items():
        _check_value(kvtype, name, value)
    return options


def _check_value(kvtype, name, value):
    """ConfigError naming an option whose value is of the wrong kind (ranges that depend on the cluster's size,
    such as replicas_to_aggregate <= workers, are checked where the size is known: on the servers)."""
    if value is None and name in ("max_staleness", "moving_rate", "total_num_replicas", "replicas_to_aggregate"):
        return                                  # the strategy's default
    whole = isinstance(value, int) and not isinstance(value, bool)
    if name == "max_staleness" and not (whole and value >= 0):
        raise ConfigError("kvstore %r: max_staleness must be a non-negative int, got %r" % (kvtype, value))
    if name == "moving_rate" and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                      and 0 < value <= 1):
        raise ConfigError("kvstore %r: moving_rate must be a number in (0, 1], got %r" % (kvtype, value))
    if name in _POSITIVE_INTS and not (whole and value >= 1):
        raise ConfigError("kvstore %r: %s must be a positive int, got %r" % (kvtype, name, value))


def check_tables(kvtype, tables):
    """ConfigError naming the sparse tables ``tables`` (names) when strategy ``kvtype`` trains on the workers."""
    if kvtype in LOCAL_STRATEGIES and tables:
        raise ConfigError("kvstore %r trains on the workers' own copy of every weight, but sparse table(s) %s live "
                          "on the servers (a batch pulls only its rows): use dist_sync, dist_async or "
                          "dist_sync_replicas with sparse tables" % (kvtype, ", ".join(sorted(tables))))


def parse_options(pairs):
    """``['name=value', ...]`` as a dict with int / float values where they parse; ConfigError naming a bad pair."""
    options = {}
    for pair in pairs or ():
        name, sep, text = str(pair).partition("=")
        if not sep or not name.strip():
            raise ConfigError("strategy option %r is not name=value" % (pair,))
        options[name.strip()] = _number(text.strip())
    return options


def _number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text

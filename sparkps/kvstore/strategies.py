"""The distributed strategies by their MXNet-style kvstore names, and the options each one takes.

One table read by the kvstore itself, SparkTrainer, the pyspark.ml estimators and the CLI, so a strategy
setting is checked once, the same way, before anything starts:

>>> check_strategy('dist_sync_replicas', {'replicas_to_aggregate': 1})
{'replicas_to_aggregate': 1}
>>> parse_options(['interval_steps=4', 'moving_rate=0.1'])
{'interval_steps': 4, 'moving_rate': 0.1}
"""
from sparkps.errors import ConfigError

STRATEGY_OPTIONS = {
    "dist_sync": (),
    "dist_async": ("max_staleness",),
    "dist_sync_replicas": ("replicas_to_aggregate", "total_num_replicas"),
    "dist_model_average": ("interval_steps",),
    "dist_easgd": ("communication_period", "moving_rate"),
}
STRATEGIES = tuple(STRATEGY_OPTIONS)
# strategies whose optimizer runs on the workers, on their local copy of every weight: a sparse table's rows live
# only on the servers (a batch pulls the rows it reads), so these strategies cannot train one
LOCAL_STRATEGIES = ("dist_model_average", "dist_easgd")


def check_strategy(kvtype, options=None, compression=None):
    """``options`` (a dict) if the strategy ``kvtype`` takes them; ConfigError naming an unknown type or option.

    ``dist_model_average`` pushes weights, not gradients: 2-bit compression (which sends only -t, 0, +t) is a
    ConfigError with it.
    """
    kind = compression.get("type") if isinstance(compression, dict) else compression
    if kvtype == "dist_model_average" and kind == "2bit":
        raise ConfigError("kvstore 'dist_model_average' pushes weights, not gradients: 2bit compression does not "
                          "apply (use fp16 or none)")
    if kvtype not in STRATEGY_OPTIONS:
        raise ConfigError("kvstore must be one of %s, got %r" % (", ".join(STRATEGIES), kvtype))
    options = dict(options or {})
    unknown = sorted(set(options) - set(STRATEGY_OPTIONS[kvtype]))
    if unknown:
        raise ConfigError("kvstore %r has no option(s) %s (known: %s)"
                          % (kvtype, ", ".join(unknown), ", ".join(STRATEGY_OPTIONS[kvtype]) or "none"))
    return options


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

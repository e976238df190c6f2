"""The options a user gives a sparse table, checked on the worker before the table's INIT is sent.

A table is declared where its weight is: the weight Variable of ``Embedding(sparse_grad=True)``,
``contrib.SparseEmbedding`` or ``contrib.HashEmbedding`` carries the MXNet-style attribute ``__table_options__``
(a JSON map; :func:`table_attr` writes it), or a program calls ``DistKVStore.init_table(key, value, options)``.
The server tables take them as described in docs/sparse_tables.md:

===============  ==========================================================================================
``min_count``    admit an id as a row after it was named this often (until then it reads as zeros)
``ttl``          evict rows not pulled for more than ``ttl`` steps
``decay``        occurrence counts decay by this factor per step, in (0, 1] ...
``min_decayed``  ... and rows whose decayed count falls under it are evicted
``sweep_every``  how often (steps) ttl and decay are checked
``capacity``     rows one server may hold ...
``on_full``      ... then ``'lru'`` (evict the least recently pulled rows) or ``'fail'``
``init_scale``   new rows uniform in [-init_scale, init_scale) (or ``init``: a row initializer config)
``optimizer``    the table's own optimizer (an Optimizer, its name or its config) instead of the job's
===============  ==========================================================================================

>>> table_options('user', {'min_count': 2, 'on_full': 'lru', 'init_scale': 0.1})
{'min_count': 2, 'on_full': 'evict', 'init': {'kind': 'uniform', 'scale': 0.1}}
"""
import json

from sparkps.errors import ConfigError

ATTR = "__table_options__"
KNOWN = ("min_count", "ttl", "decay", "min_decayed", "sweep_every", "capacity", "on_full", "init_scale", "init",
         "optimizer")
_COUNTS = ("min_count", "ttl", "sweep_every", "capacity")
_ON_FULL = {"lru": "evict", "evict": "evict", "fail": "fail"}


def table_attr(**options):
    """The Variable attributes declaring a table's options: ``sym.Variable('user', attr=table_attr(ttl=100))``.
    An Optimizer given as ``optimizer`` is stored as its config."""
    if hasattr(options.get("optimizer"), "to_config"):
        options["optimizer"] = options["optimizer"].to_config()
    return {ATTR: json.dumps(options, sort_keys=True)}


def table_options(table, options):
    """``options`` (a map, its JSON text, or None) of table ``table`` in the form the server tables take.

    ConfigError naming the table and the unknown keys, or the option whose value is wrong.
    """
    if options is None:
        return {}
    if isinstance(options, str):
        try:
            options = json.loads(options)
        except ValueError as exc:
            raise ConfigError(f"table {table!r}: {ATTR} must be a JSON map of table options ({exc})") from None
    if not isinstance(options, dict):
        raise ConfigError(f"table {table!r}: table options are a map, got {type(options).__name__}")
    unknown = sorted(set(options) - set(KNOWN))
    if unknown:
        raise ConfigError(f"table {table!r}: unknown table option(s) {unknown}; known: {list(KNOWN)}")
    checked = {}
    for name, value in options.items():
        if value is None:
            continue
        if name in _COUNTS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"table {table!r}: option {name!r} must be a positive integer, got {value!r}")
            checked[name] = value
        elif name == "decay":
            checked[name] = _number(table, name, value, lambda v: 0.0 < v <= 1.0, "in (0, 1]")
        elif name == "min_decayed":
            checked[name] = _number(table, name, value, lambda v: v >= 0.0, ">= 0")
        elif name == "on_full":
            if value not in _ON_FULL:
                raise ConfigError(f"table {table!r}: option 'on_full' must be 'lru' or 'fail', got {value!r}")
            checked[name] = _ON_FULL[value]
        elif name == "init_scale":
            if "init" in options:
                raise ConfigError(f"table {table!r}: give 'init_scale' or 'init', not both")
            scale = _number(table, name, value, lambda v: v > 0.0, "> 0")
            checked["init"] = {"kind": "uniform", "scale": scale}
        elif name == "init":
            checked[name] = _initializer(table, value)
        else:
            checked[name] = _optimizer(table, value)
    return checked


def _number(table, name, value, ok, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not ok(float(value)):
        raise ConfigError(f"table {table!r}: option {name!r} must be a number {what}, got {value!r}")
    return float(value)


def _initializer(table, config):
    from sparkps.rows.init import RowInitializer
    try:
        return RowInitializer.from_config(config).config()
    except (ConfigError, TypeError, ValueError) as exc:
        raise ConfigError(f"table {table!r}: option 'init': {exc}") from None


def _optimizer(table, optimizer):
    from sparkps.optimizer.rowwise import RowOptimizer
    try:
        return RowOptimizer(optimizer).config()
    except (ConfigError, TypeError, ValueError) as exc:
        raise ConfigError(f"table {table!r}: option 'optimizer': {exc}") from None

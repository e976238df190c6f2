"""A sparse table's configuration: one type, :class:`TableConfig`, from the model definition to the servers.

A table is declared where its weight is: the weight Variable of ``Embedding(sparse_grad=True)``,
``contrib.SparseEmbedding`` or ``contrib.HashEmbedding`` carries the MXNet-style attribute ``__table_options__``
(a JSON map; :func:`table_attr` writes it), or a program calls ``kvstore.init_table(key, value, options)``.
``sparkps.symbol.ops.embedding.sparse_tables`` reads a symbol's tables as TableConfigs (name, dim, input_dim, the
id inputs that read it and the declared options); the local kvstore and the servers' tables take the same
TableConfig; on the wire (an INIT's ``options``) and in checkpoint manifests it is the plain map of
:meth:`TableConfig.to_dict`, read back by :meth:`TableConfig.from_dict` (an unknown key is a ConfigError naming it).
Like torchrec's ``EmbeddingBagConfig``, one object says what a table is wherever it is held.

The options a user declares (docs/sparse_tables.md), checked on the worker before anything is sent:

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
``max_new_ids``  at most this many ids the table does not hold yet in one pull (default 1,048,576): a request
                 naming more is refused with an error naming the table and the cap, before any row is made
===============  ==========================================================================================

>>> TableConfig.from_options('user', {'min_count': 2, 'on_full': 'lru', 'init_scale': 0.1}, dim=8).options
{'init': {'kind': 'uniform', 'scale': 0.1}, 'min_count': 2}
"""
import dataclasses
import json
import numbers

from sparkps.errors import ConfigError

ATTR = "__table_options__"
KNOWN = ("min_count", "ttl", "decay", "min_decayed", "sweep_every", "capacity", "on_full", "init_scale", "init",
         "optimizer", "max_new_ids")
_COUNTS = ("min_count", "ttl", "sweep_every", "capacity", "max_new_ids")
# ids a table does not hold yet that one pull may name: a batch's ids, with room; a request naming more would grow
# the table by what no batch needs, without bound
MAX_NEW_IDS = 1 << 20
_ON_FULL = {"lru": "evict", "evict": "evict", "fail": "fail"}


def table_attr(**options):
    """The Variable attributes declaring a table's options: ``sym.Variable('user', attr=table_attr(ttl=100))``.
    An Optimizer given as ``optimizer`` is stored as its config."""
    from sparkps.optimizer.base import Optimizer
    if isinstance(options.get("optimizer"), Optimizer):
        options["optimizer"] = options["optimizer"].to_config()
    return {ATTR: json.dumps(options, sort_keys=True)}


@dataclasses.dataclass(frozen=True)
class TableConfig:
    """What a sparse table is: its weight's ``name``, row width ``dim``, ``input_dim`` (None: hashed, unbounded),
    the row initializer config ``init`` (None: uniform, scale 0.01), its own ``optimizer`` config (None: the job's),
    admission and eviction (``min_count``, ``ttl``, ``decay``, ``min_decayed``, ``sweep_every``, ``capacity``,
    ``on_full``: 'evict' or 'fail'), the most new ids one pull may name (``max_new_ids``), and on the model's side
    the data variables holding its ids (``fields``) and the id meaning 'absent' (``padding_id``). Every value is
    checked when the config is made (ConfigError naming the table and the option)."""
    name: str
    dim: int = None
    input_dim: int = None
    init: dict = None
    optimizer: dict = None
    min_count: int = 1
    ttl: int = None
    decay: float = None
    min_decayed: float = None
    sweep_every: int = None
    capacity: int = None
    on_full: str = "evict"
    max_new_ids: int = MAX_NEW_IDS
    fields: tuple = ()
    padding_id: int = None

    def __post_init__(self):
        name = str(self.name)
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "dim", _count(name, "dim", self.dim))
        set_(self, "input_dim", _count(name, "input_dim", self.input_dim))
        for option in _COUNTS:
            set_(self, option, _count(name, option, getattr(self, option)))
        if self.min_count is None:
            set_(self, "min_count", 1)
        if self.max_new_ids is None:
            set_(self, "max_new_ids", MAX_NEW_IDS)
        if self.decay is not None:
            set_(self, "decay", _number(name, "decay", self.decay, lambda v: 0.0 < v <= 1.0, "in (0, 1]"))
        if self.min_decayed is not None:
            set_(self, "min_decayed", _number(name, "min_decayed", self.min_decayed, lambda v: v >= 0.0, ">= 0"))
        if self.on_full not in ("evict", "fail"):
            raise ConfigError(f"table {name!r}: option 'on_full' must be 'evict' or 'fail', got {self.on_full!r}")
        if self.init is not None:
            set_(self, "init", _initializer(name, self.init))
        if self.optimizer is not None:
            from sparkps.optimizer.rowwise import RowOptimizer
            set_(self, "optimizer", RowOptimizer(self.optimizer, table=name).config())
        set_(self, "fields", tuple(self.fields))

    # ---- the forms it travels in -----------------------------------------------------------------------
    @classmethod
    def from_options(cls, name, options, **known):
        """The config of table ``name`` from the options a user declares (a map, its JSON text, or None; the names
        of the table above: ``on_full='lru'``, ``init_scale``, an Optimizer object) and ``known`` fields (``dim``,
        ``input_dim``, ``fields``, ``padding_id``). ConfigError naming the table and the unknown options, or the
        option whose value is wrong."""
        return cls(name, **known, **_declared(name, options))

    @property
    def options(self):
        """The options this table declares (those that differ from the defaults), as a plain map in the form
        :meth:`from_options` and the servers take: ``{}`` for a plain table."""
        return {k: v for k, v in self._table_fields().items() if v != _DEFAULTS[k]}

    def to_dict(self):
        """Every field as plain JSON (an INIT's ``options``, a manifest's table ``options``)."""
        out = dataclasses.asdict(self)
        out["fields"] = list(self.fields)
        return out

    @classmethod
    def from_dict(cls, data):
        """Rebuild from :meth:`to_dict` output (keys it lacks take their defaults); ConfigError naming unknown
        keys."""
        if not isinstance(data, dict):
            raise ConfigError(f"a table config is a map, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_FIELDS))
        if unknown:
            raise ConfigError(f"table {data.get('name')!r}: unknown option(s) {unknown}")
        return cls(**data)

    def replace(self, **changes):
        """A copy with ``changes`` (checked as a new config)."""
        return dataclasses.replace(self, **changes)

    def _table_fields(self):
        return {k: getattr(self, k) for k in _DEFAULTS}


_FIELDS = tuple(f.name for f in dataclasses.fields(TableConfig))
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TableConfig)
             if f.name not in ("name", "dim", "input_dim", "fields", "padding_id")}


def table_config(name, options=None, **known):
    """``options`` as the TableConfig of table ``name``: a TableConfig is taken as it is (``known`` fields it lacks
    filled in), anything else is read by :meth:`TableConfig.from_options`."""
    if isinstance(options, TableConfig):
        missing = {k: v for k, v in known.items() if getattr(options, k) in (None, ()) and v is not None}
        return options.replace(**missing) if missing else options
    return TableConfig.from_options(name, options, **known)


def _declared(table, options):
    """The user's ``options`` map checked and renamed into TableConfig fields."""
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
    for name, value in options.items():     # counts, decay and min_decayed are checked by TableConfig itself
        if value is None:
            continue
        if name == "on_full":
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
        elif name == "optimizer":
            checked[name] = _optimizer(table, value)
        else:
            checked[name] = value
    return checked


def _count(table, name, value):
    if value is None:
        return None
    if isinstance(value, (bool, float)) or not hasattr(value, "__index__") or int(value) < 1:
        raise ConfigError(f"table {table!r}: option {name!r} must be a positive integer, got {value!r}")
    return int(value)


def _number(table, name, value, ok, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not ok(float(value)):
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

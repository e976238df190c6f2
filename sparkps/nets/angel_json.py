"""Angel's JSON networks (docs/basic/json_conf.md of Angel), loaded unchanged.

    net = load('jobs/networks/deepfm.json')
    net.symbol              # ends in LogisticRegressionOutput 'ctr' (label 'ctr_label')
    net.input_shapes(256)   # {'ids': (256, numfield)}
    net.fit_args()          # num_epoch, optimizer, learning_rate, lr_scheduler, wd/lr multipliers

Sections: ``data`` (``indexrange`` required: rows of the input tables; ``numfield``: features per row,
required by embeddings; ``format``), ``model`` (read and ignored: storage types are Angel's), ``train``
(``epoch``, ``lr``, ``batchsize``, ``numupdateperepoch`` (read, unused: sparkps batches by ``batchsize``),
the decay: ``decayclass``/``decayalpha``/``decaybeta``, see ``angel_decay``),
``default_optimizer`` and ``layers`` (see ``angel_layers``). Every row of input is ``numfield`` feature
indices in [0, indexrange) (Angel's dummy format; hashed CTR ids reduced to buckets give the same).

The whole file is checked before anything is allocated: malformed JSON (with its line and column), an
unknown section or layer type, a duplicate name, a missing input layer, a cycle, a width that does not
match, a per-layer optimizer of another type than the default: each fails with one ConfigError naming the
layer.
"""
import json

from sparkps.ctr.features import IDS
from sparkps.errors import ConfigError
from sparkps.nets.angel_decay import TrainDecay
from sparkps.nets.angel_layers import LAYER_TYPES, LayerError

SECTIONS = {"data", "model", "train", "default_optimizer", "default_transfunc", "default_lossfunc", "layers"}
# Angel optimizer -> (sparkps optimizer, {angel key: sparkps key}, fixed arguments)
OPTIMIZERS = {"momentum": ("sgd", {"momentum": "momentum"}, {"momentum": 0.9}),
              "sgd": ("sgd", {}, {}),
              "adam": ("adam", {"beta": "beta1", "gamma": "beta2"}, {}),
              "adagrad": ("adagrad", {}, {}),
              "ftrl": ("ftrl", {"beta": "beta", "reg1": "lamda1"}, {})}


def _parse(text, source):
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError("%s: not valid JSON at line %d column %d: %s" % (source, exc.lineno, exc.colno, exc.msg)) \
            from None
    if not isinstance(config, dict):
        raise ConfigError("%s: an Angel network is a JSON object, got %s" % (source, type(config).__name__))
    unknown = sorted(set(config) - SECTIONS)
    if unknown:
        raise ConfigError("%s: unknown section(s) %s; known: %s" % (source, unknown, sorted(SECTIONS)))
    return config


def _optimizer(value, where):
    """(sparkps name, arguments, reg2) of an Angel optimizer given as a name or {"type": ..., ...}."""
    entry = {"type": value} if isinstance(value, str) else value
    if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
        raise ConfigError("%s: optimizer must be a name or {\"type\": name, ...}, got %r" % (where, value))
    kind = entry["type"].lower()
    if kind not in OPTIMIZERS:
        raise ConfigError("%s: unknown optimizer %r; known: %s" % (where, entry["type"], sorted(OPTIMIZERS)))
    name, keys, args = OPTIMIZERS[kind]
    args = dict(args)
    for key, target in keys.items():
        if key in entry:
            args[target] = float(entry[key])
    if kind != "ftrl" and float(entry.get("reg1", 0.0)) != 0.0:
        raise ConfigError("%s: reg1 (L1) is only supported with ftrl, got reg1=%r for %s"
                          % (where, entry["reg1"], kind))
    return name, args, float(entry.get("reg2", 0.0))


class AngelNetwork:
    """A validated Angel JSON network and its Symbol (see the module docstring)."""

    def __init__(self, config, source="<json>"):
        self.source, self.config = source, config
        data = config.get("data", {})
        self.index_range = data.get("indexrange")
        if isinstance(self.index_range, bool) or not isinstance(self.index_range, int) or self.index_range < 1:
            raise ConfigError("%s: data.indexrange (rows of the input tables) must be a positive integer, got %r"
                              % (source, self.index_range))
        self.num_fields = data.get("numfield")
        self.format = str(data.get("format", "dummy")).lower()
        self.train = dict(config.get("train", {}))
        self.decay = TrainDecay.parse(self.train, source)
        self.default_optimizer = _optimizer(config.get("default_optimizer", "momentum"),
                                            "%s: default_optimizer" % source)
        self.layers = self._layers(config.get("layers"))
        self.order = self._topological_order()
        self._check_widths()
        self.ids = None
        self.symbol = self._build()

    # ---- validation (nothing allocated) --------------------------------------------------------
    def _layers(self, entries):
        if not isinstance(entries, list) or not entries:
            raise ConfigError("%s: 'layers' must be a non-empty list" % self.source)
        layers = {}
        for position, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) \
                    or not isinstance(entry.get("type"), str):
                raise ConfigError("%s: layer #%d needs a string 'name' and 'type', got %r"
                                  % (self.source, position, entry))
            kind = LAYER_TYPES.get(entry["type"].lower())
            if kind is None:
                raise ConfigError("%s: layer %r has unknown type %r; known: %s"
                                  % (self.source, entry["name"], entry["type"], sorted(LAYER_TYPES)))
            if entry["name"] in layers:
                raise ConfigError("%s: layer name %r is used twice" % (self.source, entry["name"]))
            layers[entry["name"]] = kind(entry, self)
        for layer in layers.values():
            for name in layer.input_names:
                if name not in layers:
                    raise ConfigError("%s: layer %r reads input layer %r, which is not defined"
                                      % (self.source, layer.name, name))
        losses = [n for n, layer in layers.items() if layer.type.lower() == "simplelosslayer"]
        if len(losses) != 1:
            raise ConfigError("%s: a network needs exactly one simplelosslayer, got %s" % (self.source, losses))
        return layers

    def _topological_order(self):
        order, state = [], {}

        def visit(name, path):
            if state.get(name) == "done":
                return
            if state.get(name) == "open":
                cycle = path[path.index(name):] + [name]
                raise ConfigError("%s: layer %r is part of a cycle: %s" % (self.source, name, " -> ".join(cycle)))
            state[name] = "open"
            for source in self.layers[name].input_names:
                visit(source, path + [name])
            state[name] = "done"
            order.append(name)

        for name in self.layers:
            visit(name, [])
        return order

    def _check_widths(self):
        for name in self.order:
            layer = self.layers[name]
            inputs = [self.layers[n] for n in layer.input_names]
            try:
                layer.width = layer.check(inputs)
            except LayerError as exc:
                raise ConfigError("%s: %s" % (self.source, exc)) from None
            if "optimizer" in layer.entry:
                if not layer.trainable:
                    raise ConfigError("%s: layer %r (%s) has no parameters to optimize"
                                      % (self.source, name, layer.type))
                where = "%s: layer %r optimizer" % (self.source, name)
                layer.optimizer = _optimizer(layer.entry["optimizer"], where)
                own, default = layer.optimizer[1], self.default_optimizer[1]
                same = layer.optimizer[0] == self.default_optimizer[0] and all(default.get(k) == v
                                                                                for k, v in own.items())
                if same and not (layer.table and layer.optimizer[2]):
                    continue
                if not layer.table:
                    raise ConfigError("%s %s differs from default_optimizer %s in more than lr/reg2; only the "
                                      "layers over sparse tables (embedding, simpleinputlayer) may have their own "
                                      "optimizer type" % (where, layer.optimizer[:2], self.default_optimizer[:2]))
                layer.table_optimizer = self._table_optimizer(layer.optimizer, where)

    def _table_optimizer(self, optimizer, where):
        """The config of a table's own optimizer (the train section's lr, the layer's arguments)."""
        from sparkps.optimizer import create
        name, args, reg2 = optimizer
        try:
            return create(name, learning_rate=float(self.train.get("lr", 0.01)), wd=reg2, **args).to_config()
        except (ConfigError, TypeError, ValueError) as exc:
            raise ConfigError("%s: %s" % (where, exc)) from None

    # ---- the Symbol ----------------------------------------------------------------------------
    def _build(self):
        import sparkps.symbol as sym
        self.ids = sym.Variable(IDS)
        values = {}
        for name in self.order:
            layer = self.layers[name]
            values[name] = layer.build([values[n] for n in layer.input_names],
                                       [self.layers[n] for n in layer.input_names])
        return values[next(n for n in self.order if self.layers[n].type.lower() == "simplelosslayer")]

    def input_shapes(self, batch_size):
        """{input name: shape} for ``simple_bind``: the feature indices of each row."""
        return {IDS: (batch_size, self.num_fields)}

    def _owner(self, param):
        """The layer that owns parameter ``param`` (named after it)."""
        best = None
        for name in self.layers:
            if param == name or param.startswith(name + "_"):
                best = name if best is None or len(name) > len(best) else best
        return best

    def fit_args(self, num_rows=None, batch_size=None, require_rows=False):
        """FeedForward arguments from the train section and the optimizers: ``num_epoch``, ``optimizer``,
        ``learning_rate``, ``wd`` 1 with per-parameter ``wd_mult`` = the owning layer's reg2 (biases 0; a sparse
        table's too, so a table layer with reg2 0 beside a dense layer with reg2 > 0 does not decay),
        ``batch_size``, and the train section's decay as ``lr_scheduler`` (``angel_decay``): a per-epoch decay
        needs ``num_rows``; without it ConfigError when ``require_rows``, else a constant rate, logged once."""
        batch = int(batch_size or self.train.get("batchsize", 256))
        name, args, default_reg2 = self.default_optimizer
        out = {"num_epoch": int(self.train.get("epoch", 10)), "optimizer": name,
               "learning_rate": float(self.train.get("lr", 0.01)), "batch_size": batch, **args}
        params = [p for p in self.symbol.list_arguments() if p not in (IDS, "ctr_label")]
        wd_mult = {}
        for param in params:      # by name, the sparse tables too (a table on the job's optimizer takes its reg2)
            layer = self.layers.get(self._owner(param))
            if layer is not None and layer.table_optimizer is not None:
                continue          # a table with its own optimizer: its reg2 is that optimizer's wd
            reg2 = layer.optimizer[2] if layer is not None and layer.optimizer is not None else default_reg2
            wd_mult[param] = 0.0 if param.endswith("_bias") else reg2
        if any(wd_mult.values()):
            out.update(wd=1.0, wd_mult=wd_mult)
        schedule = self.decay.scheduler(num_rows, batch, require_rows)
        if schedule is not None:
            out["lr_scheduler"] = schedule
        return out


def loads(text, source="<json>"):
    """An AngelNetwork from JSON text (``source`` names it in errors)."""
    return AngelNetwork(_parse(text, source), source)


def load(path):
    """An AngelNetwork from a JSON file."""
    with open(path, encoding="utf-8") as handle:
        return loads(handle.read(), str(path))

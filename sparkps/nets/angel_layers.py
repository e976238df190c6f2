"""Angel's layer types: what each reads from its JSON entry, how wide its output is, and the Symbol it
becomes. ``angel_json`` validates a whole file with ``check`` before it calls any ``build``.

A layer's output is either flat (batch, width) or, for ``embedding``, per field (batch, fields, factors);
Angel counts the embedding's width as fields * factors (its ``outputdim``), and so do we.
"""
import sparkps.symbol as sym
from sparkps.errors import ConfigError

TRANSFUNCS = {"identity": None, "relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "softrelu": "softrelu"}


class LayerError(ConfigError):
    """A layer of an Angel JSON network is wrong; the message names it."""


def fail(layer, message):
    raise LayerError("layer %r (%s): %s" % (layer.name, layer.type, message))


def _int(layer, key, minimum=1):
    value = layer.entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        fail(layer, "%r must be an integer >= %d, got %r" % (key, minimum, value))
    return value


def transfunc(layer, value):
    """The activation of Angel transfunc ``value`` (a name or {"type": name, ...}); None for identity."""
    kind = value.get("type") if isinstance(value, dict) else value
    if not isinstance(kind, str) or kind.lower() not in TRANSFUNCS:
        fail(layer, "unknown transfunc %r; known: %s" % (value, sorted(TRANSFUNCS)))
    return TRANSFUNCS[kind.lower()]


def activate(data, act, name):
    return data if act is None else sym.Activation(data, act_type=act, name=name)


def flat(layer, value):
    """A layer output as (batch, width) rows."""
    return sym.Flatten(value, name=layer.name + "_flat") if layer.per_field else value


class Layer:
    """One JSON entry. ``kind`` subclasses set ``inputs_key`` ('inputlayer', 'inputlayers' or None)."""
    inputs_key = "inputlayer"
    per_field = False
    trainable = False
    table = False           # reads a sparse table (may then have its own optimizer type)
    optimizer = None        # the entry's own optimizer (type, params, reg2), when it names one
    table_optimizer = None  # the table's own optimizer config, when the entry's optimizer type differs from the job's

    def __init__(self, entry, network):
        self.entry, self.network = entry, network
        self.name, self.type = entry["name"], entry["type"]

    @property
    def input_names(self):
        if self.inputs_key is None:
            return []
        value = self.entry.get(self.inputs_key)
        if self.inputs_key == "inputlayer":
            if not isinstance(value, str):
                fail(self, "needs 'inputlayer' (the name of one layer), got %r" % (value,))
            return [value]
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            fail(self, "needs 'inputlayers' (a list of layer names), got %r" % (value,))
        return list(value)

    def declared(self, width):
        """Check the entry's outputdim (when given) against the computed ``width``."""
        given = self.entry.get("outputdim")
        if given is not None and given != width:
            fail(self, "outputdim %r does not match its inputs, which give width %d" % (given, width))
        return width

    def check(self, inputs):
        """Output width from the input layers (already checked); LayerError on a mismatch."""
        raise NotImplementedError

    def build(self, values, inputs):
        raise NotImplementedError


def table_rows(layer, width):
    """(batch, fields, width) rows of the layer's sparse table ``<name>_weight`` (``indexrange`` rows, pulled per
    batch; its own optimizer, when the layer names one, served by the parameter server's table)."""
    from sparkps.rows.config import table_attr
    own = layer.table_optimizer
    weight = sym.Variable(layer.name + "_weight", attr=table_attr(optimizer=own) if own else None)
    return sym.Embedding(layer.network.ids, weight=weight, input_dim=layer.network.index_range, output_dim=width,
                         sparse_grad=True, name=layer.name)


class SimpleInputLayer(Layer):
    """Angel's wide part: sum of one weight row per active feature, plus a bias, then transfunc."""
    inputs_key, trainable, table = None, True, True

    def check(self, inputs):
        self.width = _int(self, "outputdim")
        self.act = transfunc(self, self.entry.get("transfunc", "identity"))
        return self.width

    def build(self, values, inputs):
        rows = table_rows(self, self.width)
        total = sym.sum(rows, axis=1, name=self.name + "_sum")
        bias = sym.Variable(self.name + "_bias", shape=(1, self.width))
        return activate(sym.broadcast_add(total, bias, name=self.name + "_plus_bias"), self.act, self.name + "_act")


class EmbeddingLayer(Layer):
    """One vector of ``numfactors`` per field; outputdim must equal numfield * numfactors."""
    inputs_key, trainable, per_field, table = None, True, True, True

    def check(self, inputs):
        self.factors = _int(self, "numfactors")
        fields = self.network.num_fields
        if fields is None:
            fail(self, "an embedding needs data.numfield (features per row)")
        return self.declared(fields * self.factors)

    def build(self, values, inputs):
        return table_rows(self, self.factors)


class FCLayer(Layer):
    """Angel's folded fully connected stack: ``outputdims`` and ``transfuncs`` of equal length."""
    trainable = True

    def check(self, inputs):
        dims = self.entry.get("outputdims", [self.entry.get("outputdim")])
        funcs = self.entry.get("transfuncs", [self.entry.get("transfunc", "identity")])
        if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims):
            fail(self, "outputdims must be a list of positive integers, got %r" % (dims,))
        if not isinstance(funcs, list) or len(funcs) != len(dims):
            fail(self, "%d outputdims but transfuncs %r" % (len(dims), funcs))
        self.dims, self.acts = dims, [transfunc(self, f) for f in funcs]
        return dims[-1]

    def build(self, values, inputs):
        data = flat(inputs[0], values[0])
        for i, (dim, act) in enumerate(zip(self.dims, self.acts)):
            suffix = "" if len(self.dims) == 1 else "_%d" % i
            data = sym.FullyConnected(data, num_hidden=dim, name=self.name + suffix)
            data = activate(data, act, self.name + suffix + "_act")
        return data


class _FieldCross(Layer):
    op = None

    def check(self, inputs):
        source = inputs[0]
        if not source.per_field:
            fail(self, "input %r must be an embedding layer (one vector per field)" % source.name)
        self.fields, self.factors = self.network.num_fields, source.factors
        return self.declared(self.out_width())

    def build(self, values, inputs):
        return getattr(sym, self.op)(values[0], name=self.name)


class BiInnerSumCross(_FieldCross):
    op = "BiInnerSumCross"

    def out_width(self):
        return 1


class BiInnerCross(_FieldCross):
    op = "BiInnerCross"

    def out_width(self):
        return self.fields * (self.fields - 1) // 2


class BiInteractionCross(_FieldCross):
    op = "BiInteractionCross"

    def out_width(self):
        return self.factors


class SumPooling(Layer):
    """Element-wise sum of inputs of one width."""
    inputs_key = "inputlayers"

    def check(self, inputs):
        widths = {i.name: i.width for i in inputs}
        if len(set(widths.values())) != 1:
            fail(self, "inputs must have one width, got %s" % widths)
        return self.declared(inputs[0].width)

    def build(self, values, inputs):
        rows = [flat(layer, v) for layer, v in zip(inputs, values)]
        return rows[0] if len(rows) == 1 else sym.add_n(*rows, name=self.name)


class ConcatLayer(Layer):
    """Inputs side by side (embeddings flattened)."""
    inputs_key = "inputlayers"

    def check(self, inputs):
        return self.declared(sum(i.width for i in inputs))

    def build(self, values, inputs):
        rows = [flat(layer, v) for layer, v in zip(inputs, values)]
        return rows[0] if len(rows) == 1 else sym.Concat(*rows, dim=1, name=self.name)


class CrossLayer(Layer):
    """DCN's cross layer (a sparkps addition to Angel's types): ``inputlayers`` [x0, previous]; for the
    first cross layer both name the stacked input."""
    inputs_key, trainable = "inputlayers", True

    def check(self, inputs):
        if len(inputs) != 2:
            fail(self, "inputlayers must name [x0, previous layer], got %d names" % len(inputs))
        if inputs[0].width != inputs[1].width:
            fail(self, "x0 %r has width %d but %r has %d" % (inputs[0].name, inputs[0].width, inputs[1].name,
                                                             inputs[1].width))
        return self.declared(inputs[0].width)

    def build(self, values, inputs):
        x0, previous = flat(inputs[0], values[0]), flat(inputs[1], values[1])
        return sym.CrossLayer(data=previous, x0=x0, name=self.name)


class SimpleLossLayer(Layer):
    """The loss: ``lossfunc`` logloss over a width-1 input (a click probability out)."""

    def check(self, inputs):
        loss = str(self.entry.get("lossfunc", "logloss")).lower()
        if loss != "logloss":
            fail(self, "lossfunc %r is not supported (logloss is)" % (loss,))
        if inputs[0].width != 1:
            fail(self, "logloss needs an input of width 1; %r has width %d" % (inputs[0].name, inputs[0].width))
        return 1

    def build(self, values, inputs):
        return sym.LogisticRegressionOutput(flat(inputs[0], values[0]), name="ctr")


LAYER_TYPES = {"simpleinputlayer": SimpleInputLayer, "sparseinputlayer": SimpleInputLayer,
               "embedding": EmbeddingLayer, "fclayer": FCLayer, "biinnersumcross": BiInnerSumCross,
               "biinnercross": BiInnerCross, "biinteractioncross": BiInteractionCross, "sumpooling": SumPooling,
               "concatlayer": ConcatLayer, "crosslayer": CrossLayer, "simplelosslayer": SimpleLossLayer}

"""The pieces CTR networks share: the field embedding and the first-order (wide) term over sparse tables, an MLP
tower and the click head. Each returns a Symbol; names are fixed so that saved parameters load by name.

The tables are ``contrib.HashEmbedding`` reads of 64-bit ids (see ``features``): in training each step pulls the
rows of its batch's unique ids from the kvstore and pushes their gradients back, never the whole table.

A network's ``Regularisation`` (``inputs.regularisation``) puts weight-decay multipliers on the weights of each
part and dropout after each hidden layer of the deep part; by default it adds nothing to the graph.

With ``inputs.fused`` (the default) the table reads are ``contrib.FusedEmbedding`` (one compiled kernel each way)
and the first-order term reads each id input's weights summed in that one node; without it, the same network of
the plain ops (``HashEmbedding``, ``Reshape``, ``sum``): equal values, equal gradients, the same parameters
(``sparkps/symbol/ops/fused.py``)."""
import sparkps.symbol as sym
from sparkps.ctr.features import DENSE, PADDING_ID
from sparkps.nets.regularisation import Regularisation
from sparkps.rows.config import table_attr


class Inputs:
    """The input variables of one network (each name is one graph node, however often it is used) and its table
    weight variables (one per table, shared by every read of it), the network's ``regularisation`` and whether it is
    built of the ``fused`` ops."""

    def __init__(self, spec, regularisation=None, fused=True):
        self.spec = spec
        self.regularisation = regularisation or Regularisation()
        self.fused = bool(fused)
        self.ids = {item.name: sym.Variable(item.name) for item in spec.id_inputs()}
        self.dense = sym.Variable(DENSE) if spec.numeric else None
        self._tables = {}

    def table(self, config, part="embedding"):
        """The weight Variable of the table ``config`` (a TableConfig) names, declaring its options and the weight
        decay multiplier of ``part`` ('embedding' or 'linear')."""
        if config.name not in self._tables:
            options = config.options
            self._tables[config.name] = sym.Variable(config.name, attr=table_attr(**options) if options else None,
                                                     wd_mult=self.regularisation.wd_mult(part))
        return self._tables[config.name]

    def weight(self, name, part):
        """``{"weight": Variable}`` for the dense layer ``name`` of ``part`` when that part has a weight-decay
        multiplier, else ``{}`` (the layer makes its own ``<name>_weight``)."""
        mult = self.regularisation.wd_mult(part)
        return {} if mult is None else {"weight": sym.Variable(name + "_weight", wd_mult=mult)}


def _read(inputs, item, kind, dim, pooling, name):
    """One read of id input ``item`` from its ``kind`` table ('embedding' or 'linear')."""
    table = inputs.table(item.table if kind == "embedding" else item.linear_table, kind)
    read = sym.contrib.FusedEmbedding if inputs.fused else sym.contrib.HashEmbedding
    return read(inputs.ids[item.name], weight=table, output_dim=dim, pooling=pooling, padding_id=PADDING_ID,
                name="%s_%s" % (name, item.name))


def _reads(inputs, dim, kind, name):
    """(batch, fields, dim) rows of every field, read from the ``kind`` tables ('embedding' or 'linear')."""
    parts = []
    for item in inputs.spec.id_inputs():
        rows = _read(inputs, item, kind, dim, item.pooling, name)
        if item.pooling != "none":    # one pooled row of the field: (batch, dim) -> (batch, 1, dim)
            rows = sym.Reshape(rows, shape=(0, 1, dim))
        parts.append(rows)
    return parts[0] if len(parts) == 1 else sym.Concat(*parts, dim=1, name=name + "_fields")


def field_embedding(inputs, name="embedding"):
    """(batch, fields, embedding_dim): one row per field (a multi-valued field's rows pooled)."""
    return _reads(inputs, inputs.spec.embedding_dim, "embedding", name)


def flat_features(inputs, embedded, *extra):
    """Concatenated (batch, width) rows: the flattened field embeddings, any extra blocks, the numeric
    columns."""
    parts = [sym.Flatten(embedded)] + [sym.Flatten(e) for e in extra]
    if inputs.dense is not None:
        parts.append(inputs.dense)
    return parts[0] if len(parts) == 1 else sym.Concat(*parts, dim=1)


def linear_term(inputs, name="linear"):
    """First-order term (batch, 1): a weight per field value (a one-wide table) plus a linear function of the
    numeric columns and a bias."""
    if inputs.fused:     # each id input's weights summed over its fields by its read: (batch, 1)
        sums = [_read(inputs, item, "linear", 1, "fields" if item.pooling == "none" else item.pooling,
                      name + "_embedding") for item in inputs.spec.id_inputs()]
        total = sums[0] if len(sums) == 1 else sym.add_n(*sums, name=name + "_embedding_fields")
    else:
        weights = _reads(inputs, 1, "linear", name + "_embedding")
        total = sym.sum(sym.Reshape(weights, shape=(0, -1)), axis=1, keepdims=True)
    if inputs.dense is not None:
        total = sym.Concat(total, inputs.dense, dim=1)
    return sym.FullyConnected(total, num_hidden=1, name=name, **inputs.weight(name, "linear"))


def mlp(data, hidden_units, name, out_units=1, act_type="relu", inputs=None):
    """Fully connected layers ``hidden_units`` with ``act_type``, then a linear layer of ``out_units``
    (none when out_units is None). With ``inputs``, its regularisation's deep part: the weights' decay
    multiplier and ``Dropout`` (``<name>_dropout<i>``) after each hidden layer."""
    regularisation = inputs.regularisation if inputs is not None else Regularisation()

    def weight(layer):
        return inputs.weight(layer, "deep") if inputs is not None else {}

    for i, units in enumerate(hidden_units):
        layer = "%s_fc%d" % (name, i + 1)
        data = sym.Activation(sym.FullyConnected(data, num_hidden=units, name=layer, **weight(layer)),
                              act_type=act_type, name="%s_%s%d" % (name, act_type, i + 1))
        if regularisation.dropout > 0:
            data = sym.Dropout(data, p=regularisation.dropout, name="%s_dropout%d" % (name, i + 1))
    if out_units is None:
        return data
    return sym.FullyConnected(data, num_hidden=out_units, name=name + "_out", **weight(name + "_out"))


def click_head(logits, name="ctr"):
    """sigmoid(sum of the (batch, 1) logits) trained with log loss against ``ctr_label``."""
    total = logits[0] if len(logits) == 1 else sym.add_n(*logits, name=name + "_logit")
    return sym.LogisticRegressionOutput(total, name=name)


def ctr_initializer(embedding_sigma=0.2):
    """Embedding rows and cross-layer vectors from N(0, embedding_sigma^2), every other weight by Xavier (biases
    zero): small tables at the start, MLP layers that pass a signal."""
    from sparkps import initializer as init
    small = init.Normal(embedding_sigma)
    return init.Mixed([".*embedding.*", r".*cross\d+_weight$", ".*"], [small, small, init.Xavier()])

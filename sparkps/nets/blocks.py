"""The pieces CTR networks share: the field embedding, the first-order (wide) term, an MLP tower and
the click head. Each returns a Symbol; names are fixed so that saved parameters load by name."""
import sparkps.symbol as sym
from sparkps.nets.features import DENSE, IDS, PACKED


class Inputs:
    """The input variables of one network (each name is one graph node, however often it is used)."""

    def __init__(self, spec):
        self.spec = spec
        if not spec.packed:
            self.ids = sym.Variable(IDS)
            self.dense = sym.Variable(DENSE) if spec.numeric else None
        elif not spec.numeric:
            self.ids, self.dense = sym.Variable(PACKED), None
        else:
            data, fields = sym.Variable(PACKED), spec.num_fields
            self.ids = sym.slice_axis(data, axis=1, begin=0, end=fields, name="ids")
            self.dense = sym.slice_axis(data, axis=1, begin=fields, end=spec.width, name="dense")


def field_embedding(inputs, name="embedding"):
    """(batch, fields, embedding_dim): one row of the shared table per field."""
    spec = inputs.spec
    return sym.Embedding(inputs.ids, input_dim=spec.num_buckets, output_dim=spec.embedding_dim, name=name)


def flat_features(inputs, embedded, *extra):
    """Concatenated (batch, width) rows: the flattened field embeddings, any extra blocks, the numeric
    columns."""
    parts = [sym.Flatten(embedded)] + [sym.Flatten(e) for e in extra]
    if inputs.dense is not None:
        parts.append(inputs.dense)
    return parts[0] if len(parts) == 1 else sym.Concat(*parts, dim=1)


def linear_term(inputs, name="linear"):
    """First-order term (batch, 1): a weight per field value (a one-wide embedding) plus a linear function
    of the numeric columns and a bias."""
    spec = inputs.spec
    weights = sym.Embedding(inputs.ids, input_dim=spec.num_buckets, output_dim=1, name=name + "_embedding")
    per_field = sym.Reshape(weights, shape=(0, spec.num_fields))
    total = sym.sum(per_field, axis=1, keepdims=True)
    if inputs.dense is None:
        return sym.FullyConnected(total, num_hidden=1, name=name)
    return sym.FullyConnected(sym.Concat(total, inputs.dense, dim=1), num_hidden=1, name=name)


def mlp(data, hidden_units, name, out_units=1, act_type="relu"):
    """Fully connected layers ``hidden_units`` with ``act_type``, then a linear layer of ``out_units``
    (none when out_units is None)."""
    for i, units in enumerate(hidden_units):
        data = sym.Activation(sym.FullyConnected(data, num_hidden=units, name="%s_fc%d" % (name, i + 1)),
                              act_type=act_type, name="%s_%s%d" % (name, act_type, i + 1))
    if out_units is None:
        return data
    return sym.FullyConnected(data, num_hidden=out_units, name=name + "_out")


def click_head(logits, name="ctr"):
    """sigmoid(sum of the (batch, 1) logits) trained with log loss against ``ctr_label``."""
    total = logits[0] if len(logits) == 1 else sym.add_n(*logits, name=name + "_logit")
    return sym.LogisticRegressionOutput(total, name=name)


def ctr_initializer(embedding_sigma=0.2):
    """Embedding rows and cross-layer vectors from N(0, embedding_sigma^2), every other weight by Xavier (biases
    zero): small tables at the start, MLP layers that pass a signal."""
    from sparkps.train import initializer as init
    small = init.Normal(embedding_sigma)
    return init.Mixed([".*embedding.*", r".*cross\d+_weight$", ".*"], [small, small, init.Xavier()])

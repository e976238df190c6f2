"""Row weights (pyspark.ml's ``weightCol``) as a weighted loss: each row's gradient is scaled by its weight.

MLlib minimises ``sum_i w_i L_i / sum_i w_i``.  The driver divides every weight by the mean weight of the
rows trained on (sparkps.spark.driver.input_rows), so a mini-batch gradient is ``sum_b (w_b / mean w) g_b / B``: a
full batch gives exactly the gradient of MLlib's weighted mean loss, and scaling every weight by a constant
changes nothing.  Rows of weight 0 are dropped before training.

In a training task the weight travels as one extra feature column (so the partition's local copy, padding
and shuffling carry it unchanged) and enters the network as an input ``ROW_WEIGHT`` of shape (batch, 1)
in front of the loss head:

    scaled = z * w + BlockGrad(z * (1 - w))       # forward: z;  gradient into z: w * (softmax - one-hot)

The trained parameters are those of the network as given: the model keeps the original symbol.
"""
import json

from sparkps.errors import ConfigError

ROW_WEIGHT = "__sparkps_row_weight"
WEIGHTED_HEADS = ("SoftmaxOutput", "Softmax")


def weighted_symbol(symbol_json):
    """The network of ``symbol_json`` with its SoftmaxOutput head's gradient scaled row by row by the input
    ``ROW_WEIGHT`` (shape (batch, 1)); ConfigError for other heads."""
    from sparkps import symbol as sym
    head = json.loads(symbol_json)["nodes"][-1]
    if head.get("op") not in WEIGHTED_HEADS:
        raise ConfigError("weightCol needs a network whose output is a SoftmaxOutput, not %s '%s'"
                          % (head.get("op"), head.get("name")))
    net = sym.load_json(symbol_json)
    children = net.get_children()
    z, label = children[0], children[1]
    w = sym.Variable(ROW_WEIGHT)
    scaled = sym.broadcast_mul(z, w) + sym.BlockGrad(sym.broadcast_mul(z, 1.0 - w))
    return sym.SoftmaxOutput(data=scaled, label=label, name=net.name, **net.list_attr())


class OriginalNetwork:
    """The weighted training model seen through the network as given: same parameters, ``predict``
    without the weight input (what early stopping scores).  Binds an inference executor per call."""

    def __init__(self, model, symbol_json):
        self.model, self.symbol_json = model, symbol_json

    @property
    def arg_params(self):
        return self.model.arg_params

    @property
    def aux_params(self):
        return self.model.aux_params

    def predict(self, X):
        """Class probabilities of ``X`` under the current parameters; blocks on the computation only."""
        from sparkps import symbol as sym
        from sparkps.train.feedforward import FeedForward
        original = FeedForward(sym.load_json(self.symbol_json), arg_params=self.model.arg_params,
                               aux_params=self.model.aux_params, numpy_batch_size=max(len(X), 1))
        return original.predict(X)


def with_weight(row):
    """``(features + [weight], label)`` of a ``(features, label, weight)`` row (densified features)."""
    import numpy as np
    features, label, weight = row[0], row[1], row[2]
    if hasattr(features, "toArray"):
        features = features.toArray()
    values = np.asarray(features, dtype=np.float32).reshape(-1)
    return np.append(values, np.float32(weight)), label

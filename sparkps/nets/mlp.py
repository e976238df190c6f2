"""The multilayer perceptron built from layer sizes: what ``sparkps symbol mlp``, the Spark job, the estimator
and the benchmarks train.

>>> mlp_symbol(parse_layers("784,128,10")).list_arguments()[:3]
['data', 'fc1_weight', 'fc1_bias']
"""
from sparkps.errors import ConfigError

ACTIVATIONS = ("relu", "sigmoid", "tanh", "softrelu")


def mlp_symbol(layers, activation="relu", dropout=0.0):
    """An MLP classifier as MLlib spells it: ``layers = [inputs, hidden..., classes]``.

    Returns the Symbol ``data -> (fc -> act [-> dropout])* -> fc -> SoftmaxOutput`` with MXNet's names
    (``fc1_weight``, ..., ``softmax_label``).
    """
    layers = [int(n) for n in layers]
    if len(layers) < 2 or min(layers) < 1:
        raise ConfigError("layers must list the input size, any hidden sizes and the class count, "
                          "all >= 1, e.g. [784, 128, 64, 10]; got %s" % layers)
    if activation not in ACTIVATIONS:
        raise ConfigError("activation must be one of %s, got %r" % (", ".join(ACTIVATIONS), activation))
    from sparkps import symbol as sym
    net = sym.Variable("data")
    for i, hidden in enumerate(layers[1:-1], start=1):
        net = sym.FullyConnected(data=net, num_hidden=hidden, name="fc%d" % i)
        net = sym.Activation(data=net, act_type=activation, name="%s%d" % (activation, i))
        if dropout:
            net = sym.Dropout(data=net, p=float(dropout), name="dropout%d" % i)
    net = sym.FullyConnected(data=net, num_hidden=layers[-1], name="fc%d" % (len(layers) - 1))
    return sym.SoftmaxOutput(data=net, name="softmax")


def parse_layers(text):
    """'784,128,64,10' -> [784, 128, 64, 10] (ConfigError naming the bad item)."""
    try:
        return [int(part) for part in str(text).replace(" ", "").split(",") if part]
    except ValueError:
        raise ConfigError("--layers must be comma-separated integers such as 784,128,64,10, got %r"
                          % (text,)) from None

"""The public op functions (``FullyConnected(data, num_hidden=10, name='fc1')``), made from the
registered op classes: positional and keyword Symbols are inputs, everything else a parameter."""
from ..op import OPS
from ..symbol import Symbol, create

PUBLIC = {
    "FullyConnected": "FullyConnected", "Activation": "Activation", "LeakyReLU": "LeakyReLU",
    "Dropout": "Dropout", "BatchNorm": "BatchNorm", "Concat": "Concat", "Flatten": "Flatten",
    "Reshape": "Reshape", "sum": "sum", "mean": "mean", "Embedding": "Embedding",
    "SoftmaxOutput": "SoftmaxOutput", "Softmax": "SoftmaxOutput",
    "LinearRegressionOutput": "LinearRegressionOutput",
    "LogisticRegressionOutput": "LogisticRegressionOutput", "MakeLoss": "MakeLoss",
    "ElementWiseSum": "add_n", "add_n": "add_n", "Convolution": "Convolution", "Pooling": "Pooling",
    "BiInnerSumCross": "BiInnerSumCross", "BiInteractionCross": "BiInteractionCross",
    "BiInnerCross": "BiInnerCross", "CrossLayer": "CrossLayer",
}


def constructor(cls, public_name):
    """A function applying op class ``cls`` to Symbols, with MXNet's calling convention."""
    def construct(*args, name=None, attr=None, **kwargs):
        inputs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
        params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}
        return create(cls, list(args), params, name, attr, inputs)
    construct.__name__ = construct.__qualname__ = public_name
    construct.__doc__ = cls.__doc__
    return construct


def public_constructors():
    """{public name: function} for every registered public op."""
    return {name: constructor(OPS[op], name) for name, op in PUBLIC.items() if op in OPS}

"""The public op functions (``FullyConnected(data, num_hidden=10, name='fc1')``), one named
definition per public op, made from the registered op classes: positional and keyword Symbols are
inputs, everything else a parameter. ``sparkps.symbol`` re-exports each of them by name."""
from ..op import op_class
from ..symbol import Symbol, create


def constructor(op_name, public_name=None):
    """A function applying the op registered as ``op_name`` to Symbols, with MXNet's calling
    convention: ``f(*inputs, name=None, attr=None, **inputs_or_params)``. Blocks on nothing."""
    cls = op_class(op_name)

    def construct(*args, name=None, attr=None, **kwargs):
        inputs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
        params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}
        return create(cls, list(args), params, name, attr, inputs)
    construct.__name__ = construct.__qualname__ = public_name or op_name
    construct.__doc__ = cls.__doc__
    return construct


# ---- layers ---------------------------------------------------------------------------------------
FullyConnected = constructor("FullyConnected")
Convolution = constructor("Convolution")
Pooling = constructor("Pooling")
Activation = constructor("Activation")
LeakyReLU = constructor("LeakyReLU")
Dropout = constructor("Dropout")
BatchNorm = constructor("BatchNorm")
Embedding = constructor("Embedding")

# ---- shape ----------------------------------------------------------------------------------------
Concat = constructor("Concat")
Flatten = constructor("Flatten")
Reshape = constructor("Reshape")

# ---- reductions and sums --------------------------------------------------------------------------
sum = constructor("sum")  # noqa: A001 - MXNet's name
mean = constructor("mean")
add_n = constructor("add_n")
ElementWiseSum = constructor("add_n", "ElementWiseSum")

# ---- loss heads -----------------------------------------------------------------------------------
SoftmaxOutput = constructor("SoftmaxOutput")
Softmax = constructor("SoftmaxOutput", "Softmax")
LinearRegressionOutput = constructor("LinearRegressionOutput")
LogisticRegressionOutput = constructor("LogisticRegressionOutput")
MakeLoss = constructor("MakeLoss")


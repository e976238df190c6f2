"""The public op functions (``FullyConnected(data, num_hidden=10, name='fc1')``), one named
definition per public op, made from the registered op classes: positional and keyword Symbols are
inputs, everything else a parameter. ``sparkps.symbol`` re-exports each of them by name."""
from ...errors import ConfigError
from ..op import op_class
from ..symbol import Symbol, apply_op, create


def constructor(op_name, public_name=None):
    """A function applying the op registered as ``op_name`` to Symbols, with MXNet's calling
    convention: ``f(*inputs, name=None, attr=None, **inputs_or_params)``. Blocks on nothing."""
    cls = op_class(op_name)

    def construct(*args, **kwargs):
        return apply_op(cls, args, kwargs)
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
BatchNorm_v1 = constructor("BatchNorm_v1")
SpatialTransformer = constructor("SpatialTransformer")
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


# ---- matrix products and axes ---------------------------------------------------------------------
dot = constructor("dot")
batch_dot = constructor("batch_dot")
transpose = constructor("transpose")

# ---- element-wise with broadcasting ---------------------------------------------------------------
broadcast_add = constructor("broadcast_add")
broadcast_plus = constructor("broadcast_add", "broadcast_plus")
broadcast_sub = constructor("broadcast_sub")
broadcast_minus = constructor("broadcast_sub", "broadcast_minus")
broadcast_mul = constructor("broadcast_mul")
broadcast_div = constructor("broadcast_div")
broadcast_mod = constructor("broadcast_mod")
broadcast_power = constructor("broadcast_power")
broadcast_maximum = constructor("broadcast_maximum")
broadcast_minimum = constructor("broadcast_minimum")
broadcast_hypot = constructor("broadcast_hypot")
broadcast_equal = constructor("broadcast_equal")
broadcast_not_equal = constructor("broadcast_not_equal")
broadcast_greater = constructor("broadcast_greater")
broadcast_greater_equal = constructor("broadcast_greater_equal")
broadcast_lesser = constructor("broadcast_lesser")
broadcast_lesser_equal = constructor("broadcast_lesser_equal")
broadcast_logical_and = constructor("broadcast_logical_and")
broadcast_logical_or = constructor("broadcast_logical_or")
broadcast_logical_xor = constructor("broadcast_logical_xor")
broadcast_to = constructor("broadcast_to")
broadcast_axis = constructor("broadcast_axis")
broadcast_axes = constructor("broadcast_axis", "broadcast_axes")
broadcast_like = constructor("broadcast_like")

# ---- element-wise, same shape ---------------------------------------------------------------------
elemwise_add = constructor("_Plus", "elemwise_add")
elemwise_sub = constructor("_Minus", "elemwise_sub")
elemwise_mul = constructor("_Mul", "elemwise_mul")
elemwise_div = constructor("_Div", "elemwise_div")


def _symbol_or_scalar(name, attr, left, right, both, left_scalar, right_scalar):
    """Apply ``both`` to two Symbols, ``left_scalar`` to (Symbol, number) and ``right_scalar`` to
    (number, Symbol), as MXNet's ``maximum``/``minimum``/``power``."""
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return create(op_class(both), [left, right], {}, name, attr)
    if isinstance(left, Symbol):
        return create(op_class(left_scalar), [left], {"scalar": float(right)}, name, attr)
    if isinstance(right, Symbol):
        return create(op_class(right_scalar), [right], {"scalar": float(left)}, name, attr)
    raise ConfigError("%s needs at least one Symbol, got %r and %r" % (both, left, right))


def maximum(left, right, name=None, attr=None):
    """Element-wise maximum of two same-shaped Symbols, or of a Symbol and a number."""
    return _symbol_or_scalar(name, attr, left, right, "_Maximum", "_MaximumScalar", "_MaximumScalar")


def minimum(left, right, name=None, attr=None):
    """Element-wise minimum of two same-shaped Symbols, or of a Symbol and a number."""
    return _symbol_or_scalar(name, attr, left, right, "_Minimum", "_MinimumScalar", "_MinimumScalar")


def power(base, exp, name=None, attr=None):
    """``base ** exp`` element-wise; either may be a number."""
    return _symbol_or_scalar(name, attr, base, exp, "_Power", "_PowerScalar", "_RPowerScalar")


pow = power  # noqa: A001 - MXNet's name


def hypot(left, right, name=None, attr=None):
    """sqrt(left**2 + right**2) element-wise; either may be a number."""
    return _symbol_or_scalar(name, attr, left, right, "_Hypot", "_HypotScalar", "_HypotScalar")


# ---- element-wise, one input ----------------------------------------------------------------------
abs = constructor("abs")  # noqa: A001 - MXNet's name
negative = constructor("negative")
reciprocal = constructor("reciprocal")
square = constructor("square")
sqrt = constructor("sqrt")
rsqrt = constructor("rsqrt")
cbrt = constructor("cbrt")
exp = constructor("exp")
expm1 = constructor("expm1")
log = constructor("log")
log1p = constructor("log1p")
log2 = constructor("log2")
log10 = constructor("log10")
sin = constructor("sin")
cos = constructor("cos")
tanh = constructor("tanh")
sign = constructor("sign")
round = constructor("round")  # noqa: A001 - MXNet's name
rint = constructor("rint")
floor = constructor("floor")
ceil = constructor("ceil")
trunc = constructor("trunc")
fix = constructor("fix")
relu = constructor("relu")
sigmoid = constructor("sigmoid")
softsign = constructor("softsign")
hard_sigmoid = constructor("hard_sigmoid")
clip = constructor("clip")
BlockGrad = constructor("BlockGrad")
stop_gradient = constructor("BlockGrad", "stop_gradient")

# ---- reductions -----------------------------------------------------------------------------------
max = constructor("max")  # noqa: A001 - MXNet's name
min = constructor("min")  # noqa: A001 - MXNet's name
prod = constructor("prod")
nansum = constructor("nansum")
nanprod = constructor("nanprod")
norm = constructor("norm")
sum_axis = constructor("sum", "sum_axis")
argmax = constructor("argmax")
argmin = constructor("argmin")
batch_take = constructor("batch_take")

# ---- cutting, picking, re-arranging axes ----------------------------------------------------------
SliceChannel = constructor("SliceChannel")
split = constructor("SliceChannel", "split")
slice_axis = constructor("slice_axis")
pick = constructor("pick")
where = constructor("where")
reverse = constructor("reverse")
flip = constructor("reverse", "flip")
expand_dims = constructor("expand_dims")
squeeze = constructor("squeeze")
SwapAxis = constructor("SwapAxis")
swapaxes = constructor("SwapAxis", "swapaxes")
reshape = constructor("Reshape", "reshape")
reshape_like = constructor("reshape_like")
flatten = constructor("Flatten", "flatten")
concat = constructor("Concat", "concat")
zeros_like = constructor("zeros_like")
ones_like = constructor("ones_like")

# ---- softmax layers, normalisation, more loss heads -----------------------------------------------
softmax = constructor("softmax")
log_softmax = constructor("log_softmax")
SoftmaxActivation = constructor("SoftmaxActivation")
LRN = constructor("LRN")
MAERegressionOutput = constructor("MAERegressionOutput")
Cast = constructor("Cast")
cast = constructor("Cast", "cast")


def zeros(shape, dtype=None, name=None, attr=None, **kwargs):
    """An array of ``shape`` filled with 0 (no inputs)."""
    return apply_op(op_class("_zeros"), [], dict(kwargs, shape=shape, dtype=dtype, name=name, attr=attr))


def ones(shape, dtype=None, name=None, attr=None, **kwargs):
    """An array of ``shape`` filled with 1 (no inputs)."""
    return apply_op(op_class("_ones"), [], dict(kwargs, shape=shape, dtype=dtype, name=name, attr=attr))


def full(shape, val, dtype=None, name=None, attr=None, **kwargs):
    """An array of ``shape`` filled with ``val`` (no inputs)."""
    return apply_op(op_class("_full"), [], dict(kwargs, shape=shape, value=val, dtype=dtype, name=name, attr=attr))


# ---- feature crosses (CTR models; Angel's names) --------------------------------------------------
BiInnerSumCross = constructor("BiInnerSumCross")
BiInteractionCross = constructor("BiInteractionCross")
BiInnerCross = constructor("BiInnerCross")
CrossLayer = constructor("CrossLayer")

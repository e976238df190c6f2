"""MXNet-style symbolic networks with an explicit backward graph, run by a planned executor.

    import sparkps.symbol as sym
    net = sym.FullyConnected(sym.Variable('data'), num_hidden=10, name='fc1')
    net = sym.SoftmaxOutput(net, name='softmax')
    exe = net.simple_bind('cpu', data=(32, 784))

Every public op function is defined by name in ``ops/constructors.py``.
"""
from . import contrib  # noqa: F401 (sym.contrib.SparseEmbedding, HashEmbedding)
from .attribute import AttrScope
from .op import OPS, Op, op_class, register
from .ops.constructors import (Activation, BatchNorm, BlockGrad, Cast, Concat, Convolution, Dropout, ElementWiseSum,
                               Embedding, Flatten, FullyConnected, LRN, LeakyReLU, LinearRegressionOutput,
                               LogisticRegressionOutput, MAERegressionOutput, MakeLoss, Pooling, Reshape,
                               SliceChannel, Softmax, SoftmaxActivation, SoftmaxOutput, SwapAxis, abs, add_n,
                               batch_dot, broadcast_add, broadcast_axes, broadcast_axis, broadcast_div,
                               broadcast_equal, broadcast_greater, broadcast_greater_equal, broadcast_hypot,
                               broadcast_lesser, broadcast_lesser_equal, broadcast_like, broadcast_logical_and,
                               broadcast_logical_or, broadcast_logical_xor, broadcast_maximum, broadcast_minimum,
                               broadcast_minus, broadcast_mod, broadcast_mul, broadcast_not_equal, broadcast_plus,
                               broadcast_power, broadcast_sub, broadcast_to, cast, cbrt, ceil, clip, concat, cos, dot,
                               elemwise_add, elemwise_div, elemwise_mul, elemwise_sub, exp, expand_dims, expm1, fix,
                               flatten, flip, floor, full, hard_sigmoid, hypot, log, log10, log1p, log2, log_softmax,
                               max, maximum, mean, min, minimum, nanprod, nansum, negative, norm, ones, ones_like,
                               pick, pow, power, prod, reciprocal, relu, reshape, reshape_like, reverse, rint, round,
                               rsqrt, sigmoid, sign, sin, slice_axis, softmax, softsign, split, sqrt, square, squeeze,
                               stop_gradient, sum, sum_axis, swapaxes, tanh, transpose, trunc, where, zeros,
                               zeros_like)
from .symbol import Group, Symbol, Variable, load, load_json, var

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "AttrScope", "Op", "OPS", "op_class",
           "register", "FullyConnected", "Convolution", "Pooling", "Activation", "LeakyReLU", "Dropout", "BatchNorm",
           "Embedding", "Concat", "Flatten", "Reshape", "sum", "mean", "add_n", "ElementWiseSum", "SoftmaxOutput",
           "Softmax", "LinearRegressionOutput", "LogisticRegressionOutput", "MakeLoss", "dot", "batch_dot",
           "transpose", "broadcast_add", "broadcast_plus", "broadcast_sub", "broadcast_minus", "broadcast_mul",
           "broadcast_div", "broadcast_mod", "broadcast_power", "broadcast_maximum", "broadcast_minimum",
           "broadcast_hypot", "broadcast_equal", "broadcast_not_equal", "broadcast_greater",
           "broadcast_greater_equal", "broadcast_lesser", "broadcast_lesser_equal", "broadcast_logical_and",
           "broadcast_logical_or", "broadcast_logical_xor", "broadcast_to", "broadcast_axis", "broadcast_axes",
           "broadcast_like", "elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "maximum", "minimum",
           "power", "pow", "hypot", "abs", "negative", "reciprocal", "square", "sqrt", "rsqrt", "cbrt", "exp",
           "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tanh", "sign", "round", "rint", "floor", "ceil",
           "trunc", "fix", "relu", "sigmoid", "softsign", "hard_sigmoid", "clip", "BlockGrad", "stop_gradient", "max",
           "min", "prod", "nansum", "nanprod", "norm", "sum_axis", "SliceChannel", "split", "slice_axis", "pick",
           "where", "reverse", "flip", "expand_dims", "squeeze", "SwapAxis", "swapaxes", "reshape", "reshape_like",
           "flatten", "concat", "zeros_like", "ones_like", "softmax", "log_softmax", "SoftmaxActivation", "LRN",
           "MAERegressionOutput", "Cast", "cast", "zeros", "ones", "full"]

from .ops.constructors import BiInnerCross, BiInnerSumCross, BiInteractionCross, CrossLayer  # noqa: E402

__all__ += ["BiInnerSumCross", "BiInteractionCross", "BiInnerCross", "CrossLayer"]

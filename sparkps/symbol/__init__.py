"""MXNet-style symbolic networks with an explicit backward graph, run by a planned executor.

    import sparkps.symbol as sym
    net = sym.FullyConnected(sym.Variable('data'), num_hidden=10, name='fc1')
    net = sym.SoftmaxOutput(net, name='softmax')
    exe = net.simple_bind('cpu', data=(32, 784))

Every public op function is defined by name in ``ops/constructors.py``.
"""
from .op import OPS, Op, op_class, register
from .ops.constructors import (Activation, BatchNorm, Concat, Convolution, Dropout, ElementWiseSum, Embedding,
                               Flatten, FullyConnected, LeakyReLU, LinearRegressionOutput, LogisticRegressionOutput,
                               MakeLoss, Pooling, Reshape, Softmax, SoftmaxOutput, add_n, mean, sum)
from .symbol import Group, Symbol, Variable, load, load_json, var

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "Op", "OPS", "op_class",
           "register", "FullyConnected", "Convolution", "Pooling", "Activation", "LeakyReLU", "Dropout", "BatchNorm",
           "Embedding", "Concat", "Flatten", "Reshape", "sum", "mean", "add_n", "ElementWiseSum", "SoftmaxOutput",
           "Softmax", "LinearRegressionOutput", "LogisticRegressionOutput", "MakeLoss"]

"""MXNet-style symbolic networks with an explicit backward graph, run by a planned executor.

    import sparkps.symbol as sym
    net = sym.FullyConnected(sym.Variable('data'), num_hidden=10, name='fc1')
    net = sym.SoftmaxOutput(net, name='softmax')
    exe = net.simple_bind('cpu', data=(32, 784))
"""
from . import contrib  # noqa: F401 (sym.contrib.SparseEmbedding, HashEmbedding)
from .op import OPS, Op, op_class, register
from .ops import constructors as _constructors
from .serialize import load, load_json
from .symbol import Group, Symbol, Variable, var

globals().update(_constructors.public_constructors())

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "Op", "OPS", "op_class",
           "register"] + sorted(_constructors.public_constructors())

"""One translation per exportable sparkps op: ``fn(out, node)`` emits the ONNX nodes that compute the node's
outputs (named as sparkps names them) into ``out``, a ``sparkps.onnx.emitter.Emitter``. Inference semantics:
Dropout is the identity, BatchNorm uses its moving statistics, a loss output is its forward value
(SoftmaxOutput a softmax, LogisticRegressionOutput a sigmoid). Opset 17. Blocks on nothing.
"""
import numpy as np

from sparkps.errors import ConfigError
from sparkps.onnx.graph_walk import is_table_read, layer_of

TRANSLATIONS = {}


class UnsupportedOp(ConfigError):
    """An op (or an op's setting) that has no ONNX translation; the message names the op, node and layer."""


def unsupported(node, what=None):
    detail = "" if what is None else " with %s" % what
    return UnsupportedOp("cannot export op '%s'%s to ONNX (node '%s', layer '%s'); exportable ops: %s"
                         % (node.op.name, detail, node.name, layer_of(node.name), ", ".join(exportable_ops())))


def exportable_ops():
    """The sparkps op names an export translates, sorted (table reads are cut, see sparkps.onnx.graph_walk)."""
    return sorted(TRANSLATIONS)


def translates(*names):
    def register(fn):
        for name in names:
            TRANSLATIONS[name] = fn
        return fn
    return register


def translate(out, node):
    """Emit ``node`` (an op node of the walk) into ``out``; UnsupportedOp naming it when there is no translation."""
    if is_table_read(node.op):
        return cut_table_read(out, node)
    fn = TRANSLATIONS.get(node.op.name)
    if fn is None:
        raise unsupported(node)
    return fn(out, node)


def _in(out, node, i):
    return out.entry(node.inputs[i])


def _out(out, node, i=0):
    return out.output(node, i)


# ---- the cut: table reads become graph inputs ------------------------------------------------------------
def cut_table_read(out, node):
    """(batch, dim) rows per field as graph inputs; unpooled fields stacked into (batch, fields, dim), the fields of a
    FusedEmbedding with ``pooling='fields'`` summed into (batch, dim)."""
    items, flat = out.walk.cut(node)
    batch = out.walk.shape(node.inputs[0])[0]
    names = [out.table_input(item, batch) for item in items]
    if node.op.params.get("pooling") == "fields":        # the op's declared parameters
        return out.add("Sum", names, [_out(out, node)])
    if flat:
        return out.add("Identity", names, [_out(out, node)])
    one = out.axes(node.name, [1])
    stacked = [out.op("Unsqueeze", [name, one], node.name) for name in names]
    if len(stacked) == 1:
        return out.add("Identity", stacked, [_out(out, node)])
    return out.add("Concat", stacked, [_out(out, node)], axis=1)


@translates("Embedding")
def dense_embedding(out, node):
    """A dense Embedding (its weight a parameter): Gather of the weight's rows."""
    ids = out.op("Cast", [_in(out, node, 0)], node.name, to=7)     # INT64
    return out.add("Gather", [_in(out, node, 1), ids], [_out(out, node)], axis=0)


# ---- layers ------------------------------------------------------------------------------------------------
@translates("FullyConnected")
def fully_connected(out, node):
    op, data = node.op, _in(out, node, 0)
    weight = node.inputs[1]
    bias = None if op.no_bias else _in(out, node, 2)
    if op.flatten:
        if len(out.walk.shape(node.inputs[0])) != 2:
            data = out.op("Flatten", [data], node.name, axis=1)
        return out.add("Gemm", [data, out.entry(weight)] + ([bias] if bias else []), [_out(out, node)], transB=1)
    transposed = out.const(node.name + "_weight_t", out.walk.param(weight[0].name).T)
    if bias is None:
        return out.add("MatMul", [data, transposed], [_out(out, node)])
    return out.add("Add", [out.op("MatMul", [data, transposed], node.name), bias], [_out(out, node)])


ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus", "softsign": "Softsign"}


@translates("Activation")
def activation(out, node):
    return out.add(ACTIVATIONS[node.op.act_type], [_in(out, node, 0)], [_out(out, node)])


@translates("LeakyReLU")
def leaky_relu(out, node):
    kind = node.op.act_type
    if kind == "leaky":
        return out.add("LeakyRelu", [_in(out, node, 0)], [_out(out, node)], alpha=float(node.op.slope))
    if kind == "elu":
        return out.add("Elu", [_in(out, node, 0)], [_out(out, node)], alpha=float(node.op.slope))
    if kind == "selu":
        return out.add("Selu", [_in(out, node, 0)], [_out(out, node)])
    raise unsupported(node, "act_type '%s'" % kind)


@translates("BatchNorm")
def batch_norm(out, node):
    """Inference batch norm over axis 1 with the moving statistics (fix_gamma: a scale of ones)."""
    op, shape = node.op, out.walk.shape(node.inputs[0])
    if op.axis not in (1, 1 - len(shape)):
        raise unsupported(node, "axis %d (ONNX normalises axis 1)" % op.axis)
    gamma = node.inputs[1]
    scale = out.const(node.name + "_ones", np.ones(shape[1])) if op.fix_gamma else out.entry(gamma)
    inputs = [_in(out, node, 0), scale, _in(out, node, 2), out.aux(node, 0), out.aux(node, 1)]
    return out.add("BatchNormalization", inputs, [_out(out, node)], epsilon=float(op.eps))


@translates("Dropout", "_copy", "BlockGrad", "LinearRegressionOutput", "MAERegressionOutput")
def identity(out, node):
    return out.add("Identity", [_in(out, node, 0)], [_out(out, node)])


@translates("Flatten")
def flatten(out, node):
    return out.add("Flatten", [_in(out, node, 0)], [_out(out, node)], axis=1)


@translates("SoftmaxOutput")
def softmax_output(out, node):
    """The class probabilities: softmax over axis 1 (the last axis with preserve_shape)."""
    op, rank = node.op, len(out.walk.shape(node.inputs[0]))
    if op.preserve_shape:
        axis = -1
    elif rank == 2 or op.multi_output:
        axis = 1
    else:
        raise unsupported(node, "%d-D data (only 2-D, multi_output or preserve_shape)" % rank)
    return out.add("Softmax", [_in(out, node, 0)], [_out(out, node)], axis=axis)


@translates("SoftmaxActivation")
def softmax_activation(out, node):
    if node.op.mode == "instance" and len(out.walk.shape(node.inputs[0])) != 2:
        raise unsupported(node, "mode 'instance' over data that is not 2-D")
    return out.add("Softmax", [_in(out, node, 0)], [_out(out, node)], axis=1)


@translates("softmax", "log_softmax")
def softmax(out, node):
    op = node.op
    if op.temperature not in (None, 1.0) or op.use_length:
        raise unsupported(node, "temperature or use_length")
    kind = "Softmax" if op.name == "softmax" else "LogSoftmax"
    return out.add(kind, [_in(out, node, 0)], [_out(out, node)], axis=int(op.axis))


@translates("LogisticRegressionOutput")
def logistic_output(out, node):
    return out.add("Sigmoid", [_in(out, node, 0)], [_out(out, node)])


# ---- arithmetic and shapes ---------------------------------------------------------------------------------
UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
         "abs": "Abs", "negative": "Neg"}
BINARY = {"_Plus": "Add", "broadcast_add": "Add", "_Minus": "Sub", "broadcast_sub": "Sub", "_Mul": "Mul",
          "broadcast_mul": "Mul", "_Div": "Div", "broadcast_div": "Div"}
SCALAR = {"_PlusScalar": ("Add", False), "_MinusScalar": ("Sub", False), "_RMinusScalar": ("Sub", True),
          "_MulScalar": ("Mul", False), "_DivScalar": ("Div", False), "_RDivScalar": ("Div", True)}


@translates(*UNARY)
def unary(out, node):
    return out.add(UNARY[node.op.name], [_in(out, node, 0)], [_out(out, node)])


@translates("square")
def square(out, node):
    data = _in(out, node, 0)
    return out.add("Mul", [data, data], [_out(out, node)])


@translates(*BINARY)
def binary(out, node):
    return out.add(BINARY[node.op.name], [_in(out, node, 0), _in(out, node, 1)], [_out(out, node)])


@translates(*SCALAR)
def scalar(out, node):
    kind, reverse = SCALAR[node.op.name]
    value = out.const(node.name + "_scalar", float(node.op.scalar))
    data = _in(out, node, 0)
    return out.add(kind, [value, data] if reverse else [data, value], [_out(out, node)])


@translates("add_n")
def add_n(out, node):
    return out.add("Sum", [out.entry(e) for e in node.inputs], [_out(out, node)])


@translates("Concat")
def concat(out, node):
    return out.add("Concat", [out.entry(e) for e in node.inputs], [_out(out, node)], axis=int(node.op.dim))


@translates("sum", "mean")
def reduce(out, node):
    """ReduceSum / ReduceMean over ``axis`` (every axis when None; the other axes with ``exclude``)."""
    op, rank = node.op, len(out.walk.shape(node.inputs[0]))
    kind = "ReduceSum" if op.name == "sum" else "ReduceMean"
    axes = op.axis
    if axes is None or axes == ():
        axes = range(rank)
    axes = sorted({int(a) % rank for a in ([axes] if np.isscalar(axes) else axes)})
    if op.exclude:
        axes = [a for a in range(rank) if a not in axes]
    keepdims = int(bool(op.keepdims))
    if kind == "ReduceMean":                  # opset 17: ReduceMean's axes are an attribute (ReduceSum's an input)
        return out.add(kind, [_in(out, node, 0)], [_out(out, node)], axes=axes, keepdims=keepdims)
    return out.add(kind, [_in(out, node, 0), out.axes(node.name, axes)], [_out(out, node)], keepdims=keepdims)


@translates("Reshape")
def reshape(out, node):
    """ONNX Reshape with MXNet's codes 0 (keep) and -1 (infer); other codes by the inferred shape, its batch
    dimension kept as 0 when the reshape keeps it."""
    op = node.op
    codes = list(op.shape)
    if not codes or op.reverse or any(c < -1 for c in codes):
        source, target = out.walk.shape(node.inputs[0]), list(out.walk.shape((node, 0)))
        codes = ([0] + target[1:]) if target[0] == source[0] else target
    return out.add("Reshape", [_in(out, node, 0), out.axes(node.name + "_shape", codes)], [_out(out, node)])


@translates("expand_dims")
def expand_dims(out, node):
    rank = len(out.walk.shape(node.inputs[0])) + 1
    return out.add("Unsqueeze", [_in(out, node, 0), out.axes(node.name, [int(node.op.axis) % rank])],
                   [_out(out, node)])


@translates("transpose")
def transpose(out, node):
    axes = node.op.axes
    rank = len(out.walk.shape(node.inputs[0]))
    perm = list(reversed(range(rank))) if not axes else [int(a) for a in axes]
    return out.add("Transpose", [_in(out, node, 0)], [_out(out, node)], perm=perm)


@translates("clip")
def clip(out, node):
    low = out.const(node.name + "_min", float(node.op.a_min))
    high = out.const(node.name + "_max", float(node.op.a_max))
    return out.add("Clip", [_in(out, node, 0), low, high], [_out(out, node)])


@translates("dot", "batch_dot")
def dot(out, node):
    """MatMul of 2-D (dot) or 3-D (batch_dot) operands, transposed as the op says."""
    op = node.op
    operands = []
    for i, flag in ((0, op.transpose_a), (1, op.transpose_b)):
        rank = len(out.walk.shape(node.inputs[i]))
        if rank != (2 if op.name == "dot" else 3):
            raise unsupported(node, "%d-D input '%s'" % (rank, op.input_name(i)))
        value = _in(out, node, i)
        if flag:
            perm = [1, 0] if rank == 2 else [0, 2, 1]
            value = out.op("Transpose", [value], node.name, perm=perm)
        operands.append(value)
    return out.add("MatMul", operands, [_out(out, node)])


# ---- the CTR crosses (sparkps/symbol/ops/cross.py) -------------------------------------------------------------
def _pair_sums(out, node):
    """(batch, factors) sum over field pairs of e_i * e_j: ((sum_i e_i)^2 - sum_i e_i^2) / 2."""
    data, one = _in(out, node, 0), out.axes(node.name, [1])
    total = out.op("ReduceSum", [data, one], node.name, keepdims=0)
    squares = out.op("ReduceSum", [out.op("Mul", [data, data], node.name), one], node.name, keepdims=0)
    difference = out.op("Sub", [out.op("Mul", [total, total], node.name), squares], node.name)
    return difference, out.const(node.name + "_half", 0.5)


@translates("_contrib_FMInteraction")
def fm_interaction(out, node):
    """The fused pair-sum cross: NFM's bi-interaction with ``keep_factors``, else FM's second-order term."""
    return bi_interaction(out, node) if node.op.keep_factors else bi_inner_sum(out, node)


@translates("BiInteractionCross")
def bi_interaction(out, node):
    difference, half = _pair_sums(out, node)
    return out.add("Mul", [difference, half], [_out(out, node)])


@translates("BiInnerSumCross")
def bi_inner_sum(out, node):
    difference, half = _pair_sums(out, node)
    summed = out.op("ReduceSum", [difference, out.axes(node.name, [1])], node.name, keepdims=1)
    return out.add("Mul", [summed, half], [_out(out, node)])


@translates("BiInnerCross")
def bi_inner(out, node):
    """Every <e_i, e_j>, i<j, row-major: the Gram matrix flattened and gathered at the upper triangle."""
    fields = out.walk.shape(node.inputs[0])[1]
    data = _in(out, node, 0)
    gram = out.op("MatMul", [data, out.op("Transpose", [data], node.name, perm=[0, 2, 1])], node.name)
    flat = out.op("Reshape", [gram, out.axes(node.name + "_shape", [0, fields * fields])], node.name)
    rows, cols = np.triu_indices(fields, 1)
    where = out.const(node.name + "_pairs", rows * fields + cols, np.int64)
    return out.add("Gather", [flat, where], [_out(out, node)], axis=1)


@translates("CrossLayer")
def cross_layer(out, node):
    """DCN: x0 * (data . weight) + bias + data."""
    data, x0, weight, bias = (_in(out, node, i) for i in range(4))
    projected = out.op("Unsqueeze", [out.op("MatMul", [data, weight], node.name), out.axes(node.name, [1])],
                       node.name)
    crossed = out.op("Add", [out.op("Mul", [x0, projected], node.name), bias], node.name)
    return out.add("Add", [crossed, data], [_out(out, node)])

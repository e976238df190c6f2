"""Feature-cross layers of click-through-rate models, in Angel's names.

Every field embedding op here reads ``data`` of shape (batch, fields, factors): one embedded vector per
categorical field (Angel's Embedding output, cut per field).

* ``BiInnerSumCross`` (FM's second-order term): (batch, 1), sum over field pairs i<j of <e_i, e_j>;
* ``BiInteractionCross`` (NFM's bi-interaction pooling): (batch, factors), sum over pairs of e_i * e_j;
* ``BiInnerCross`` (inner-product PNN): (batch, fields*(fields-1)/2), every <e_i, e_j> with i<j in
  row-major order of the upper triangle;
* ``CrossLayer`` (DCN): x_{l+1} = x0 * (x_l . w) + b + x_l over flat (batch, dim) inputs.

The two "sum of pairs" layers use the identity sum_{i<j} e_i*e_j = ((sum_i e_i)^2 - sum_i e_i^2) / 2,
which is linear in the field count instead of quadratic.
"""
from ..op import BackwardOp, Op, apply, grad_name, register
from .nn import SumRows


def _field_shape(op, shape):
    if shape is not None and len(shape) != 3:
        raise op.shape_error("data '%s' must be (batch, fields, factors), got shape %s", op.input_name(0), shape)
    return shape


class _FieldCross(Op):
    """A cross over the field axis of one (batch, fields, factors) input."""

    def infer_shape(self, in_shapes):
        data = _field_shape(self, in_shapes[0])
        return in_shapes, [None if data is None else self.out_shape(data)], []


@register
class BiInnerSumCross(_FieldCross):
    """FM's second-order term: out[b, 0] = sum_{i<j} <e_i, e_j> over the fields of row b."""
    name, hint = "BiInnerSumCross", "biinnersumcross"

    def out_shape(self, data):
        return (data[0], 1)

    def forward(self, rt, ins, outs, aux):
        xp, x = rt.xp, ins[0]
        total = x.sum(axis=1)
        square_of_sum = xp.einsum("bk,bk->b", total, total)
        sum_of_squares = xp.einsum("bfk,bfk->b", x, x)
        xp.multiply(square_of_sum - sum_of_squares, 0.5, out=outs[0].reshape(-1))

    def gradient(self, node, out_grads):
        return [apply(PairSumCrossGrad, [node.inputs[0], out_grads[0]], grad_name(node, "data"))]


@register
class BiInteractionCross(_FieldCross):
    """NFM's bi-interaction: out[b, k] = sum_{i<j} e_i[k] * e_j[k] over the fields of row b."""
    name, hint = "BiInteractionCross", "biinteractioncross"

    def out_shape(self, data):
        return (data[0], data[2])

    def forward(self, rt, ins, outs, aux):
        xp, x = rt.xp, ins[0]
        total = x.sum(axis=1)
        xp.multiply(total * total - (x * x).sum(axis=1), 0.5, out=outs[0])

    def gradient(self, node, out_grads):
        return [apply(PairSumCrossGrad, [node.inputs[0], out_grads[0]], grad_name(node, "data"))]


@register
class PairSumCrossGrad(BackwardOp):
    """d e_f = dy * (sum_i e_i - e_f), dy of shape (batch, 1) or (batch, factors): the gradient of both
    pair-sum crosses."""
    name, hint = "_backward_PairSumCross", "_backward_pairsumcross"
    num_inputs = 2

    def forward(self, rt, ins, outs, aux):
        xp, (x, dy) = rt.xp, ins
        total = x.sum(axis=1, keepdims=True)
        xp.multiply(dy[:, None, :], total - x, out=outs[0])


@register
class BiInnerCross(_FieldCross):
    """Inner-product PNN: out[b, p] = <e_i, e_j> for the p-th pair i<j (row-major upper triangle)."""
    name, hint = "BiInnerCross", "biinnercross"

    def out_shape(self, data):
        fields = data[1]
        return (data[0], fields * (fields - 1) // 2)

    def forward(self, rt, ins, outs, aux):
        xp, x = rt.xp, ins[0]
        rows, cols = xp.triu_indices(x.shape[1], 1)
        gram = xp.matmul(x, x.transpose(0, 2, 1))
        outs[0][...] = gram[:, rows, cols]

    def gradient(self, node, out_grads):
        return [apply(BiInnerCrossGrad, [node.inputs[0], out_grads[0]], grad_name(node, "data"))]


@register
class BiInnerCrossGrad(BackwardOp):
    """d e_i = sum_{j != i} dy[pair(i, j)] * e_j, as one batched product with the symmetric pair matrix."""
    name, hint = "_backward_BiInnerCross", "_backward_biinnercross"
    num_inputs = 2

    def forward(self, rt, ins, outs, aux):
        xp, (x, dy) = rt.xp, ins
        fields = x.shape[1]
        rows, cols = xp.triu_indices(fields, 1)
        pairs = xp.zeros((x.shape[0], fields, fields), dtype=x.dtype)
        pairs[:, rows, cols] = dy
        pairs += pairs.transpose(0, 2, 1)
        xp.matmul(pairs, x, out=outs[0])


@register
class CrossLayer(Op):
    """DCN's cross layer over flat rows: out = x0 * (data . weight) + bias + data, where ``x0`` is the
    network's first (stacked) input and ``data`` the previous cross layer's output (x0 itself for the
    first); weight and bias are vectors of the row width."""
    name, hint = "CrossLayer", "crosslayer"

    def arguments(self):
        return ["data", "x0", "weight", "bias"]

    def infer_shape(self, in_shapes):
        data, x0 = in_shapes[0], in_shapes[1]
        shape = data if data is not None else x0
        if shape is not None and len(shape) != 2:
            raise self.shape_error("data '%s' must be (batch, dim), got shape %s", self.input_name(0), shape)
        if data is not None and x0 is not None and tuple(data) != tuple(x0):
            raise self.shape_error("x0 '%s' has shape %s but data '%s' has %s",
                                   self.input_name(1), x0, self.input_name(0), data)
        width = None if shape is None else (shape[1],)
        return [shape, shape, width, width], [shape], []

    def forward(self, rt, ins, outs, aux):
        xp, (x, x0, w, b) = rt.xp, ins
        xp.multiply(x0, xp.matmul(x, w)[:, None], out=outs[0])
        outs[0] += b
        outs[0] += x

    def gradient(self, node, out_grads):
        dy = out_grads[0]
        data, x0, weight = node.inputs[0], node.inputs[1], node.inputs[2]
        return [apply(CrossDataGrad, [dy, x0, weight], grad_name(node, "data")),
                apply(CrossX0Grad, [dy, data, weight], grad_name(node, "x0")),
                apply(CrossWeightGrad, [dy, x0, data], grad_name(node, "weight")),
                apply(SumRows, [dy], grad_name(node, "bias"))]


@register
class CrossDataGrad(BackwardOp):
    """d data = (dy . x0 per row) * weight + dy."""
    name, hint = "_backward_CrossLayer_data", "_backward_crosslayer_data"
    num_inputs = 3

    def forward(self, rt, ins, outs, aux):
        xp, (dy, x0, w) = rt.xp, ins
        xp.multiply(xp.einsum("bd,bd->b", dy, x0)[:, None], w, out=outs[0])
        outs[0] += dy


@register
class CrossX0Grad(BackwardOp):
    """d x0 = dy * (data . weight per row)."""
    name, hint = "_backward_CrossLayer_x0", "_backward_crosslayer_x0"
    num_inputs = 3

    def forward(self, rt, ins, outs, aux):
        xp, (dy, x, w) = rt.xp, ins
        xp.multiply(dy, xp.matmul(x, w)[:, None], out=outs[0])


@register
class CrossWeightGrad(BackwardOp):
    """d weight = data^T . (dy . x0 per row)."""
    name, hint = "_backward_CrossLayer_weight", "_backward_crosslayer_weight"
    num_inputs = 3

    def output_shapes(self, in_shapes):
        return [None if in_shapes[0] is None else (in_shapes[0][1],)]

    def forward(self, rt, ins, outs, aux):
        xp, (dy, x0, x) = rt.xp, ins
        xp.matmul(xp.einsum("bd,bd->b", dy, x0), x, out=outs[0])

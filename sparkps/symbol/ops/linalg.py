"""Matrix products and axis permutations: ``dot``, ``batch_dot``, ``transpose``."""
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import to_axis, to_bool, to_int
from ..shape import unify


def _matrix(x, transpose, left):
    """``x`` as the 2-D matrix MXNet's dot multiplies: the left operand keeps its last axis as
    columns, the right one its first axis as rows; ``transpose`` swaps which axis is contracted."""
    if (left and not transpose) or (not left and transpose):
        return x.reshape(-1, x.shape[-1]) if not transpose else x.reshape(-1, x.shape[-1]).T
    return x.reshape(x.shape[0], -1) if not transpose else x.reshape(x.shape[0], -1).T


def _dot_shapes(op, lhs, rhs):
    """(contracted size of lhs, free lhs axes, contracted size of rhs, free rhs axes)."""
    lk, lfree = (lhs[0], lhs[1:]) if op.transpose_a else (lhs[-1], lhs[:-1])
    rk, rfree = (rhs[-1], rhs[:-1]) if op.transpose_b else (rhs[0], rhs[1:])
    return lk, tuple(lfree), rk, tuple(rfree)


@register
class Dot(Op):
    """``dot(lhs, rhs, transpose_a, transpose_b)``: contract the last axis of lhs (first when
    transposed) with the first axis of rhs (last when transposed); out = free lhs axes + free rhs
    axes, as MXNet's dot on N-D arrays."""
    name, hint = "dot", "dot"
    spec = {"transpose_a": (to_bool, False), "transpose_b": (to_bool, False), "forward_stype": (str, None)}
    partial_shapes = True

    def arguments(self):
        return ["lhs", "rhs"]

    def infer_shape(self, in_shapes):
        lhs, rhs = in_shapes
        if lhs is None or rhs is None:
            return in_shapes, [None], []
        lk, lfree, rk, rfree = _dot_shapes(self, lhs, rhs)
        if lk and rk and lk != rk:
            raise self.shape_error("lhs '%s' %s and rhs '%s' %s do not agree on the contracted axis (%d vs %d)",
                                   self.input_name(0), lhs, self.input_name(1), rhs, lk, rk)
        return in_shapes, [(lfree + rfree) or (1,)], []

    def forward(self, rt, ins, outs, aux):
        a = _matrix(ins[0], self.transpose_a, True)
        b = _matrix(ins[1], self.transpose_b, False)
        rt.xp.matmul(a, b, out=outs[0].reshape(a.shape[0], b.shape[1]))

    def gradient(self, node, out_grads):
        inputs = [out_grads[0], node.inputs[0], node.inputs[1]]
        return [apply(DotGrad, inputs, grad_name(node, side), side=k, transpose_a=self.transpose_a,
                      transpose_b=self.transpose_b) for k, side in enumerate(("lhs", "rhs"))]


@register
class DotGrad(BackwardOp):
    """d lhs (side 0) or d rhs (side 1) of ``dot`` from (dy, lhs, rhs)."""
    name, hint = "_backward_dot", "_backward_dot"
    spec = {"side": (to_int, 0), "transpose_a": (to_bool, False), "transpose_b": (to_bool, False)}
    num_inputs = 3

    def output_shapes(self, in_shapes):
        return [in_shapes[1 + self.side]]

    def forward(self, rt, ins, outs, aux):
        xp, (dy, lhs, rhs), out = rt.xp, ins, outs[0]
        a, b = _matrix(lhs, self.transpose_a, True), _matrix(rhs, self.transpose_b, False)
        g = dy.reshape(a.shape[0], b.shape[1])
        if self.side == 0:
            grad = g @ b.T                        # d a, shaped like a
            grad = grad.T if self.transpose_a else grad
            xp.copyto(out, grad.reshape(out.shape))
        else:
            grad = a.T @ g                        # d b, shaped like b
            grad = grad.T if self.transpose_b else grad
            xp.copyto(out, grad.reshape(out.shape))


@register
class BatchDot(Op):
    """``batch_dot(lhs, rhs)``: (B, M, K) x (B, K, N) -> (B, M, N), each operand optionally
    transposed in its last two axes."""
    name, hint = "batch_dot", "batch_dot"
    spec = {"transpose_a": (to_bool, False), "transpose_b": (to_bool, False), "forward_stype": (str, None)}
    partial_shapes = True

    def arguments(self):
        return ["lhs", "rhs"]

    def infer_shape(self, in_shapes):
        lhs, rhs = in_shapes
        if lhs is None or rhs is None:
            return in_shapes, [None], []
        if len(lhs) < 3 or len(rhs) < 3 or unify(lhs[:-2], rhs[:-2]) is None:
            raise self.shape_error("lhs '%s' %s and rhs '%s' %s must be batches of matrices of one batch shape",
                                   self.input_name(0), lhs, self.input_name(1), rhs)
        m, k = (lhs[-1], lhs[-2]) if self.transpose_a else (lhs[-2], lhs[-1])
        k2, n = (rhs[-1], rhs[-2]) if self.transpose_b else (rhs[-2], rhs[-1])
        if not k or not k2:
            return in_shapes, [None], []          # the contracted size is unknown (as MXNet)
        if k != k2:
            raise self.shape_error("lhs '%s' %s and rhs '%s' %s do not agree on the contracted axis (%d vs %d)",
                                   self.input_name(0), lhs, self.input_name(1), rhs, k, k2)
        return in_shapes, [unify(lhs[:-2], rhs[:-2]) + (m, n)], []

    def forward(self, rt, ins, outs, aux):
        a, b = _last2(ins[0], self.transpose_a), _last2(ins[1], self.transpose_b)
        rt.xp.matmul(a, b, out=outs[0])

    def gradient(self, node, out_grads):
        inputs = [out_grads[0], node.inputs[0], node.inputs[1]]
        return [apply(BatchDotGrad, inputs, grad_name(node, side), side=k, transpose_a=self.transpose_a,
                      transpose_b=self.transpose_b) for k, side in enumerate(("lhs", "rhs"))]


def _last2(x, transpose):
    return x.swapaxes(-1, -2) if transpose else x


@register
class BatchDotGrad(BackwardOp):
    """d lhs (side 0) or d rhs (side 1) of ``batch_dot`` from (dy, lhs, rhs)."""
    name, hint = "_backward_batch_dot", "_backward_batch_dot"
    spec = DotGrad.spec
    num_inputs = 3

    def output_shapes(self, in_shapes):
        return [in_shapes[1 + self.side]]

    def forward(self, rt, ins, outs, aux):
        xp, (dy, lhs, rhs), out = rt.xp, ins, outs[0]
        a, b = _last2(lhs, self.transpose_a), _last2(rhs, self.transpose_b)
        if self.side == 0:
            xp.copyto(out, _last2(xp.matmul(dy, b.swapaxes(-1, -2)), self.transpose_a))
        else:
            xp.copyto(out, _last2(xp.matmul(a.swapaxes(-1, -2), dy), self.transpose_b))


@register
class Transpose(Op):
    """``transpose(data, axes)``: permute the axes (reverse them when ``axes`` is empty)."""
    name, hint = "transpose", "transpose"
    spec = {"axes": (to_axis, None)}
    partial_shapes = True

    def permutation(self, ndim):
        if self.axes is None:
            return tuple(reversed(range(ndim)))
        axes = (self.axes,) if isinstance(self.axes, int) else self.axes
        return tuple(a % ndim for a in axes)

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        perm = self.permutation(len(data))
        if sorted(perm) != list(range(len(data))):
            raise self.shape_error("axes %s are not a permutation of the %d axes of data '%s' %s",
                                   self.axes, len(data), self.input_name(0), data)
        return in_shapes, [tuple(data[a] for a in perm)], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].transpose(self.permutation(ins[0].ndim)))

    def gradient(self, node, out_grads):
        return [apply(TransposeBack, [out_grads[0], node.inputs[0]], grad_name(node, "data"), axes=self.axes)]


@register
class TransposeBack(BackwardOp):
    """dy permuted back by the inverse of the forward permutation (inputs dy, data)."""
    name, hint = "_backward_transpose", "_backward_transpose"
    spec = Transpose.spec
    num_inputs = 2

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        perm = Transpose.permutation(self, outs[0].ndim)
        inverse = [0] * len(perm)
        for i, a in enumerate(perm):
            inverse[a] = i
        rt.xp.copyto(outs[0], ins[0].transpose(inverse))


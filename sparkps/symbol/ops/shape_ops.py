"""Ops that move data without arithmetic: Flatten, Reshape, Concat, and their gradient helpers."""
from math import prod

from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, to_int, to_shape


@register
class Flatten(Op):
    """(batch, d1, d2, ...) -> (batch, d1*d2*...)."""
    name, hint = "Flatten", "flatten"

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        return in_shapes, [None if data is None else (data[0], prod(data[1:]))], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].reshape(outs[0].shape))

    def gradient(self, node, out_grads):
        return [apply(ReshapeLike, [out_grads[0], node.inputs[0]], grad_name(node, "data"))]


def reshape_target(op, data, spec):
    """MXNet's Reshape codes: 0 copies the input dim, -1 is inferred, -2 copies all remaining dims."""
    out, i, infer_at = [], 0, None
    for code in spec:
        if code == 0:
            out.append(data[i])
            i += 1
        elif code == -1:
            infer_at = len(out)
            out.append(1)
            i += 1
        elif code == -2:
            out.extend(data[i:])
            i = len(data)
        elif code > 0:
            out.append(code)
            i += 1
        else:
            raise op.shape_error("unsupported shape code %d in %s", code, spec)
    total = prod(data)
    if infer_at is not None:
        known = prod(out)
        if known == 0 or total % known:
            raise op.shape_error("cannot reshape %s to %s", data, spec)
        out[infer_at] = total // known
    if prod(out) != total:
        raise op.shape_error("cannot reshape %s (size %d) to %s (size %d)", data, total, tuple(out), prod(out))
    return tuple(out)


@register
class Reshape(Op):
    """Reshape to ``shape``; 0 keeps an input dimension, -1 infers one (as MXNet)."""
    name, hint = "Reshape", "reshape"
    spec = {"shape": (to_shape, REQUIRED)}

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        return in_shapes, [None if data is None else reshape_target(self, data, self.shape)], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].reshape(outs[0].shape))

    def gradient(self, node, out_grads):
        return [apply(ReshapeLike, [out_grads[0], node.inputs[0]], grad_name(node, "data"))]


@register
class ReshapeLike(BackwardOp):
    """The first input reshaped to the second input's shape."""
    name, hint = "reshape_like", "reshape_like"
    num_inputs = 2

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].reshape(outs[0].shape))


@register
class Concat(Op):
    """Join inputs along ``dim``; every other dimension must agree."""
    name, hint = "Concat", "concat"
    spec = {"num_args": (to_int, REQUIRED), "dim": (to_int, 1)}
    variadic = True

    def arguments(self):
        return ["arg%d" % i for i in range(self.num_args)]

    def infer_shape(self, in_shapes):
        known = [s for s in in_shapes if s is not None]
        if len(known) < len(in_shapes):
            return in_shapes, [None], []
        first = known[0]
        if not -len(first) <= self.dim < len(first):
            raise self.shape_error("dim %d out of range for input shape %s", self.dim, first)
        dim = self.dim % len(first)
        for i, shape in enumerate(in_shapes):
            rest = lambda s: tuple(s[:dim]) + tuple(s[dim + 1:])  # noqa: E731
            if len(shape) != len(first) or rest(shape) != rest(first):
                raise self.shape_error("input '%s' has shape %s, which does not fit %s '%s' beside dim %d",
                                       self.input_name(i), shape, first, self.input_name(0), self.dim)
        out = list(first)
        out[dim] = sum(s[dim] for s in in_shapes)
        return in_shapes, [tuple(out)], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.concatenate(ins, axis=self.dim % ins[0].ndim, out=outs[0])

    def gradient(self, node, out_grads):
        return [apply(SliceLike, [out_grads[0]] + list(node.inputs), grad_name(node, "arg%d" % i),
                      dim=self.dim, index=i, num_args=self.num_args) for i in range(self.num_args)]


@register
class SliceLike(BackwardOp):
    """Part ``index`` of the first input cut along ``dim`` the way Concat joined the other inputs."""
    name, hint = "_backward_Concat", "_backward_concat"
    spec = {"dim": (to_int, 1), "index": (to_int, 0), "num_args": (to_int, REQUIRED)}

    @property
    def num_inputs(self):
        return self.num_args + 1

    def output_shapes(self, in_shapes):
        return [in_shapes[1 + self.index]]

    def forward(self, rt, ins, outs, aux):
        dim = self.dim % ins[0].ndim
        begin = sum(x.shape[dim] for x in ins[1:1 + self.index])
        end = begin + ins[1 + self.index].shape[dim]
        cut = [slice(None)] * ins[0].ndim
        cut[dim] = slice(begin, end)
        rt.xp.copyto(outs[0], ins[0][tuple(cut)])

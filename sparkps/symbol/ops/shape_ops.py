"""Ops that move data without arithmetic: Flatten, Reshape, Concat, and their gradient helpers."""
from math import prod

from ...errors import ConfigError
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, to_bool, to_int, to_shape
from ..shape import unify


@register
class Flatten(Op):
    """(batch, d1, d2, ...) -> (batch, d1*d2*...)."""
    name, hint, aliases = "Flatten", "flatten", ("flatten",)

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        return in_shapes, [None if data is None else (data[0], prod(data[1:]))], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].reshape(outs[0].shape))

    def gradient(self, node, out_grads):
        return [apply(ReshapeLike, [out_grads[0], node.inputs[0]], grad_name(node, "data"))]


def reshape_target(op, data, spec):
    """MXNet's Reshape codes: 0 copies an input dim, -1 is inferred, -2 copies all remaining dims,
    -3 merges two consecutive input dims, -4 splits one input dim into the two values after it
    (one of which may be -1)."""
    out, i, infer_at = [], 0, None
    spec = list(spec)
    k = 0
    while k < len(spec):
        code = spec[k]
        if code == 0:
            out.append(_dim(op, data, i, spec))
            i += 1
        elif code == -1:
            if infer_at is not None:
                raise op.shape_error("more than one -1 in shape %s", tuple(spec))
            infer_at = len(out)
            out.append(1)
            i += 1
        elif code == -2:
            out.extend(data[i:])
            i = len(data)
        elif code == -3:
            out.append(_dim(op, data, i, spec) * _dim(op, data, i + 1, spec))
            i += 2
        elif code == -4:
            if k + 2 >= len(spec):
                raise op.shape_error("-4 in shape %s needs two values after it", tuple(spec))
            whole, a, b = _dim(op, data, i, spec), spec[k + 1], spec[k + 2]
            if a == -1:
                a = whole // b if b > 0 else 0
            elif b == -1:
                b = whole // a if a > 0 else 0
            if a * b != whole:
                raise op.shape_error("-4 splits dim %d of size %d into %d x %d", i, whole, a, b)
            out.extend([a, b])
            i += 1
            k += 2
        elif code > 0:
            out.append(code)
            i += 1
        else:
            raise op.shape_error("unsupported shape code %d in %s", code, tuple(spec))
        k += 1
    total = prod(data)
    if infer_at is not None:
        known = prod(out)
        if known == 0 or total % known:
            raise op.shape_error("cannot reshape %s to %s", data, tuple(spec))
        out[infer_at] = total // known
    if prod(out) != total:
        raise op.shape_error("cannot reshape %s (size %d) to %s (size %d)", data, total, tuple(out), prod(out))
    return tuple(out)


def _dim(op, data, i, spec):
    if i >= len(data):
        raise op.shape_error("shape %s refers to input dim %d, data has shape %s", tuple(spec), i, data)
    return data[i]


def legacy_target(op, data):
    """The deprecated ``target_shape`` (one 0 is inferred) with ``keep_highest``."""
    target = list(op.target_shape)
    if op.keep_highest:
        target = [data[0]] + target
    if target.count(0) > 1:
        raise op.shape_error("target_shape %s has more than one 0", op.target_shape)
    if 0 in target:
        known = prod(d for d in target if d)
        target[target.index(0)] = prod(data) // known if known else 0
    if prod(target) != prod(data):
        raise op.shape_error("cannot reshape %s to target_shape %s", data, tuple(target))
    return tuple(target)


@register
class Reshape(Op):
    """Reshape to ``shape`` with MXNet's codes (0 keep, -1 infer, -2 rest, -3 merge, -4 split);
    ``reverse`` reads the codes from the right; the deprecated ``target_shape`` still works."""
    name, hint, aliases = "Reshape", "reshape", ("reshape",)
    spec = {"shape": (to_shape, ()), "reverse": (to_bool, False), "target_shape": (to_shape, ()),
            "keep_highest": (to_bool, False)}

    def setup(self):
        if not self.shape and not self.target_shape:
            raise ConfigError("Reshape needs the parameter 'shape'")

    def output_shape(self, data):
        if not self.shape:
            return legacy_target(self, data)
        if self.reverse:
            return tuple(reversed(reshape_target(self, tuple(reversed(data)), _reversed_codes(self.shape))))
        return reshape_target(self, data, self.shape)

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        return in_shapes, [None if data is None else self.output_shape(tuple(data))], []

    def refine_inputs(self, in_shapes, out_shapes):
        """One unknown (0) input dimension follows from a known output's size (as MXNet)."""
        data, out = in_shapes[0], out_shapes[0]
        if data is None or out is None or list(data).count(0) != 1 or 0 in out:
            return in_shapes
        known = prod(d for d in data if d)
        if prod(out) % known:
            return in_shapes
        in_shapes[0] = tuple(d or prod(out) // known for d in data)
        return in_shapes

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].reshape(outs[0].shape))

    def gradient(self, node, out_grads):
        return [apply(ReshapeLike, [out_grads[0], node.inputs[0]], grad_name(node, "data"))]


def _reversed_codes(shape):
    """The codes read from the right; a -4 is written after its two values there ((16, 4, -4) splits
    the last input dim into 16 x 4), so plain reversal puts it before them."""
    return list(reversed(shape))


@register
class ReshapeLike(BackwardOp):
    """The first input reshaped to the second input's shape."""
    name, hint = "reshape_like", "reshape_like"
    num_inputs = 2

    def gradient(self, node, out_grads):
        return [apply(ReshapeLike, [out_grads[0], node.inputs[0]], grad_name(node, "lhs")), None]

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].reshape(outs[0].shape))


@register
class Concat(Op):
    """Join inputs along ``dim``; every other dimension must agree."""
    name, hint, aliases = "Concat", "concat", ("concat",)
    spec = {"num_args": (to_int, REQUIRED), "dim": (to_int, 1)}
    variadic = True

    def arguments(self):
        return ["arg%d" % i for i in range(self.num_args)]

    partial_shapes = True

    def infer_shape(self, in_shapes):
        known = [s for s in in_shapes if s is not None]
        if len(known) < len(in_shapes):
            return in_shapes, [None], []
        first = known[0]
        if not -len(first) <= self.dim < len(first):
            raise self.shape_error("dim %d out of range for input shape %s", self.dim, first)
        dim = self.dim % len(first)
        rest = lambda s: tuple(s[:dim]) + tuple(s[dim + 1:])  # noqa: E731
        common = rest(first)
        for i, shape in enumerate(in_shapes):
            merged = unify(rest(shape), common) if len(shape) == len(first) else None
            if merged is None:
                raise self.shape_error("input '%s' has shape %s, which does not fit %s '%s' beside dim %d",
                                       self.input_name(i), shape, first, self.input_name(0), self.dim)
            common = merged
        sizes = [s[dim] for s in in_shapes]
        whole = sum(sizes) if all(sizes) else 0
        full = lambda size: common[:dim] + (size,) + common[dim:]  # noqa: E731
        return [full(s[dim]) for s in in_shapes], [full(whole)], []

    def refine_inputs(self, in_shapes, out_shapes):
        out = out_shapes[0]
        if out is None or any(s is None for s in in_shapes):
            return in_shapes
        dim = self.dim % len(out)
        shapes = [tuple(out[:dim]) + (s[dim],) + tuple(out[dim + 1:]) for s in in_shapes]
        missing = [i for i, s in enumerate(shapes) if s[dim] == 0]
        if len(missing) == 1 and out[dim]:
            i = missing[0]
            size = out[dim] - sum(s[dim] for s in shapes)
            shapes[i] = shapes[i][:dim] + (size,) + shapes[i][dim + 1:]
        return shapes

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


@register
class IdentityLikeRhs(Op):
    """``_identity_with_attr_like_rhs(lhs, rhs)``: lhs unchanged, with the constraint that lhs, rhs and the
    output share one shape (MXNet uses it to let shapes flow backwards onto rhs); no gradient reaches rhs."""
    name, hint = "_identity_with_attr_like_rhs", "identity_with_attr_like_rhs"
    elementwise = True

    def arguments(self):
        return ["lhs", "rhs"]

    def infer_type(self, in_types, out_types):
        return in_types, [in_types[0] if in_types[0] is not None else out_types[0]], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0])

    def gradient(self, node, out_grads):
        return [out_grads[0], None]

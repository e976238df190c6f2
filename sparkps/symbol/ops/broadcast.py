"""Two-input element-wise math with numpy broadcasting (``broadcast_add`` ... ``broadcast_lesser``),
the same-shape ``_Maximum``/``_Minimum``/``_Power``/``_Mod``/comparisons, and the explicit
broadcasts ``broadcast_to``, ``broadcast_axis``, ``broadcast_like``.

A gradient is the head gradient times the partial derivative, summed back over the axes the input
was broadcast along (``_backward_broadcast``)."""
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, to_axis, to_int, to_shape


def broadcast_shape(lhs, rhs):
    """numpy's broadcast of two shapes; None when they do not broadcast."""
    n = max(len(lhs), len(rhs))
    a, b = (1,) * (n - len(lhs)) + tuple(lhs), (1,) * (n - len(rhs)) + tuple(rhs)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def sum_to(xp, g, shape):
    """``g`` summed over the axes along which an array of ``shape`` was broadcast to g's shape."""
    extra = g.ndim - len(shape)
    if extra:
        g = g.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _zero(xp, a, b, y):
    return None


# kind -> (forward(xp, a, b, out), d/da(xp, a, b, y), d/db(xp, a, b, y)); None: no gradient
BINARY = {
    "add": (lambda xp, a, b, out: xp.add(a, b, out=out), lambda xp, a, b, y: 1, lambda xp, a, b, y: 1),
    "sub": (lambda xp, a, b, out: xp.subtract(a, b, out=out), lambda xp, a, b, y: 1, lambda xp, a, b, y: -1),
    "mul": (lambda xp, a, b, out: xp.multiply(a, b, out=out), lambda xp, a, b, y: b, lambda xp, a, b, y: a),
    "div": (lambda xp, a, b, out: xp.divide(a, b, out=out), lambda xp, a, b, y: 1 / b,
            lambda xp, a, b, y: -y / b),
    "mod": (lambda xp, a, b, out: xp.mod(a, b, out=out), lambda xp, a, b, y: 1,
            lambda xp, a, b, y: -xp.floor(a / b)),
    "power": (lambda xp, a, b, out: xp.power(a, b, out=out), lambda xp, a, b, y: b * xp.power(a, b - 1),
              lambda xp, a, b, y: y * xp.log(a)),
    "maximum": (lambda xp, a, b, out: xp.maximum(a, b, out=out), lambda xp, a, b, y: a >= b,
                lambda xp, a, b, y: a < b),
    "minimum": (lambda xp, a, b, out: xp.minimum(a, b, out=out), lambda xp, a, b, y: a <= b,
                lambda xp, a, b, y: a > b),
    "hypot": (lambda xp, a, b, out: xp.hypot(a, b, out=out), lambda xp, a, b, y: a / y,
              lambda xp, a, b, y: b / y),
    "equal": (lambda xp, a, b, out: xp.equal(a, b, out=out, casting="unsafe"), _zero, _zero),
    "not_equal": (lambda xp, a, b, out: xp.not_equal(a, b, out=out, casting="unsafe"), _zero, _zero),
    "greater": (lambda xp, a, b, out: xp.greater(a, b, out=out, casting="unsafe"), _zero, _zero),
    "greater_equal": (lambda xp, a, b, out: xp.greater_equal(a, b, out=out, casting="unsafe"), _zero, _zero),
    "lesser": (lambda xp, a, b, out: xp.less(a, b, out=out, casting="unsafe"), _zero, _zero),
    "lesser_equal": (lambda xp, a, b, out: xp.less_equal(a, b, out=out, casting="unsafe"), _zero, _zero),
    "logical_and": (lambda xp, a, b, out: xp.logical_and(a, b, out=out, casting="unsafe"), _zero, _zero),
    "logical_or": (lambda xp, a, b, out: xp.logical_or(a, b, out=out, casting="unsafe"), _zero, _zero),
    "logical_xor": (lambda xp, a, b, out: xp.logical_xor(a, b, out=out, casting="unsafe"), _zero, _zero),
}
# same-shape MXNet names of some kinds (the rest of the same-shape family is in elemwise.py)
SAME_SHAPE = {"maximum": "_Maximum", "minimum": "_Minimum", "power": "_Power", "mod": "_Mod", "hypot": "_Hypot",
              "equal": "_equal", "not_equal": "_not_equal", "greater": "_greater",
              "greater_equal": "_greater_equal", "lesser": "_lesser", "lesser_equal": "_lesser_equal",
              "logical_and": "_logical_and", "logical_or": "_logical_or", "logical_xor": "_logical_xor"}
SAME_SHAPE_ALIASES = {"_Maximum": ("_maximum",), "_Minimum": ("_minimum",), "_Power": ("_power",),
                      "_Mod": ("_mod",), "_Hypot": ("_hypot",)}


class _BroadcastBinary(Op):
    kind = None
    same_shape = False

    def arguments(self):
        return ["lhs", "rhs"]

    def infer_shape(self, in_shapes):
        lhs, rhs = in_shapes
        if self.same_shape:
            shape = lhs if lhs is not None else rhs
            return [shape, shape], [shape], []
        if lhs is None or rhs is None:
            return in_shapes, [None], []
        out = broadcast_shape(lhs, rhs)
        if out is None:
            raise self.shape_error("shapes %s ('%s') and %s ('%s') do not broadcast",
                                   lhs, self.input_name(0), rhs, self.input_name(1))
        return in_shapes, [out], []

    def forward(self, rt, ins, outs, aux):
        BINARY[self.kind][0](rt.xp, ins[0], ins[1], outs[0])

    def gradient(self, node, out_grads):
        if BINARY[self.kind][1] is _zero:
            return [None, None]
        inputs = [out_grads[0], node.inputs[0], node.inputs[1], (node, 0)]
        return [apply(BinaryGrad, inputs, grad_name(node, side), kind=self.kind, side=k)
                for k, side in enumerate(("lhs", "rhs"))]


def _make(kind, name, same_shape, aliases=()):
    hint = name.strip("_").lower()
    cls = type("%s_%s" % (name.strip("_"), "op"), (_BroadcastBinary,), {
        "name": name, "hint": hint, "aliases": aliases, "kind": kind, "same_shape": same_shape,
        "elementwise": same_shape,
        "__doc__": "MXNet's ``%s``: element-wise %s%s." % (name, kind, "" if same_shape else " with broadcasting")})
    return register(cls)


BROADCAST_OPS = {kind: _make(kind, "broadcast_" + kind, False,
                             ("broadcast_plus",) if kind == "add" else ("broadcast_minus",) if kind == "sub" else
                             ("broadcast_less",) if kind == "lesser" else
                             ("broadcast_less_equal",) if kind == "lesser_equal" else ())
                 for kind in BINARY}
SAME_SHAPE_OPS = {kind: _make(kind, name, True, SAME_SHAPE_ALIASES.get(name, ())) for kind, name in SAME_SHAPE.items()}


@register
class BinaryGrad(BackwardOp):
    """The gradient of input ``side`` (0: lhs, 1: rhs) of a two-input op: dy * partial, summed over
    the broadcast axes (inputs dy, lhs, rhs, y)."""
    name, hint = "_backward_broadcast", "_backward_broadcast"
    spec = {"kind": (str, REQUIRED), "side": (to_int, 0)}
    num_inputs = 4

    def output_shapes(self, in_shapes):
        return [in_shapes[1 + self.side]]

    def forward(self, rt, ins, outs, aux):
        xp, (dy, a, b, y), out = rt.xp, ins, outs[0]
        partial = BINARY[self.kind][1 + self.side](xp, a, b, y)
        xp.copyto(out, sum_to(xp, dy * partial, out.shape).reshape(out.shape))


class _BroadcastTo(Op):
    """Shared by broadcast_to / broadcast_axis / broadcast_like: forward copies, backward sums."""

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], rt.xp.broadcast_to(ins[0], outs[0].shape))

    def gradient(self, node, out_grads):
        return [apply(SumTo, [out_grads[0], node.inputs[0]], grad_name(node, "data"))] + [None] * (
            len(node.inputs) - 1)

    def _check(self, data, out):
        if broadcast_shape(data, out) != tuple(out) or len(data) != len(out):
            raise self.shape_error("cannot broadcast '%s' of shape %s to %s", self.input_name(0), data, out)
        return out


@register
class BroadcastTo(_BroadcastTo):
    """``broadcast_to(data, shape)``: 0 in ``shape`` keeps the input's dimension (as MXNet)."""
    name, hint = "broadcast_to", "broadcast_to"
    spec = {"shape": (to_shape, REQUIRED)}

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        if len(self.shape) != len(data):
            raise self.shape_error("shape %s has %d axes, data '%s' has shape %s",
                                   self.shape, len(self.shape), self.input_name(0), data)
        out = tuple(d if s == 0 else s for s, d in zip(self.shape, data))
        return in_shapes, [self._check(data, out)], []


@register
class BroadcastAxis(_BroadcastTo):
    """``broadcast_axis(data, axis, size)``: repeat size-1 axes ``axis`` to ``size``."""
    name, hint, aliases = "broadcast_axis", "broadcast_axis", ("broadcast_axes",)
    spec = {"axis": (to_axis, ()), "size": (to_axis, ())}

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        axes = _tuple(self.axis)
        sizes = _tuple(self.size)
        if len(axes) != len(sizes):
            raise self.shape_error("axis %s and size %s differ in length", self.axis, self.size)
        out = list(data)
        for a, s in zip(axes, sizes):
            if not -len(data) <= a < len(data):
                raise self.shape_error("axis %d out of range for data shape %s", a, data)
            if data[a] != 1:
                raise self.shape_error("axis %d of data '%s' has size %d, not 1", a, self.input_name(0), data[a])
            out[a] = s
        return in_shapes, [tuple(out)], []


def _tuple(value):
    if value is None:
        return ()
    return (value,) if isinstance(value, int) else tuple(value)


@register
class BroadcastLike(_BroadcastTo):
    """``broadcast_like(lhs, rhs)``: lhs broadcast to rhs's shape."""
    name, hint = "broadcast_like", "broadcast_like"
    spec = {"lhs_axes": (to_axis, None), "rhs_axes": (to_axis, None)}

    def arguments(self):
        return ["lhs", "rhs"]

    def infer_type(self, in_types, out_types):
        """The output has lhs's type; rhs (read for its shape) keeps its own."""
        return in_types, [in_types[0] if in_types[0] is not None else out_types[0]], []

    def infer_shape(self, in_shapes):
        lhs, rhs = in_shapes
        if lhs is None or rhs is None:
            return in_shapes, [None], []
        if self.lhs_axes is None:
            return in_shapes, [self._check(lhs, rhs)], []
        out = list(lhs)
        for la, ra in zip(_tuple(self.lhs_axes), _tuple(self.rhs_axes)):
            out[la] = rhs[ra]
        return in_shapes, [self._check(lhs, tuple(out))], []


@register
class SumTo(BackwardOp):
    """The first input summed down to the second input's shape (the gradient of a broadcast)."""
    name, hint = "_backward_broadcast_to", "_backward_broadcast_to"
    num_inputs = 2

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        out = outs[0]
        rt.xp.copyto(out, sum_to(rt.xp, ins[0], out.shape).reshape(out.shape))


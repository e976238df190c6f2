"""Element-wise arithmetic between symbols of the same shape (never broadcast) and with scalars."""
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, to_dtype, to_float, to_int, to_shape


class _Binary(Op):
    elementwise = True
    def arguments(self):
        return ["lhs", "rhs"]

    def infer_shape(self, in_shapes):
        shape = in_shapes[0] if in_shapes[0] is not None else in_shapes[1]
        return [shape, shape], [shape], []


@register
class Plus(_Binary):
    name, hint, aliases = "_Plus", "_plus", ("elemwise_add", "_plus")

    def forward(self, rt, ins, outs, aux):
        rt.xp.add(ins[0], ins[1], out=outs[0])

    def gradient(self, node, out_grads):
        return [out_grads[0], out_grads[0]]


@register
class Minus(_Binary):
    name, hint, aliases = "_Minus", "_minus", ("elemwise_sub", "_minus")

    def forward(self, rt, ins, outs, aux):
        rt.xp.subtract(ins[0], ins[1], out=outs[0])

    def gradient(self, node, out_grads):
        return [out_grads[0], apply(MulScalar, [out_grads[0]], grad_name(node, "rhs"), scalar=-1.0)]


@register
class Mul(_Binary):
    name, hint, aliases = "_Mul", "_mul", ("elemwise_mul", "_mul")

    def forward(self, rt, ins, outs, aux):
        rt.xp.multiply(ins[0], ins[1], out=outs[0])

    def gradient(self, node, out_grads):
        lhs, rhs = node.inputs
        g = out_grads[0]
        return [apply(Mul, [g, rhs], grad_name(node, "lhs")), apply(Mul, [g, lhs], grad_name(node, "rhs"))]


@register
class Div(_Binary):
    name, hint, aliases = "_Div", "_div", ("elemwise_div", "_div")

    def forward(self, rt, ins, outs, aux):
        rt.xp.divide(ins[0], ins[1], out=outs[0])

    def gradient(self, node, out_grads):
        g, rhs = out_grads[0], node.inputs[1]
        g_out = apply(Mul, [g, (node, 0)], grad_name(node, "rhs_num"))
        ratio = apply(Div, [g_out, rhs], grad_name(node, "rhs_ratio"))
        return [apply(Div, [g, rhs], grad_name(node, "lhs")),
                apply(MulScalar, [ratio], grad_name(node, "rhs"), scalar=-1.0)]


@register
class AddN(Op):
    """Sum of any number of same-shaped inputs (also how gradients that meet are added)."""
    name, hint, aliases = "add_n", "add_n", ("ElementWiseSum", "_grad_add")
    spec = {"num_args": (to_int, REQUIRED)}
    variadic = True
    elementwise = True

    def arguments(self):
        return ["arg%d" % i for i in range(self.num_args)]

    def infer_shape(self, in_shapes):
        shape = next((s for s in in_shapes if s is not None), None)
        return [shape] * len(in_shapes), [shape], []

    def forward(self, rt, ins, outs, aux):
        add, out = rt.xp.add, outs[0]
        if len(ins) == 1:
            rt.xp.copyto(out, ins[0])
            return
        add(ins[0], ins[1], out=out)
        for x in ins[2:]:
            add(out, x, out=out)

    def gradient(self, node, out_grads):
        return [out_grads[0]] * self.num_args


class _Scalar(Op):
    elementwise = True
    spec = {"scalar": (to_float, REQUIRED)}


@register
class PlusScalar(_Scalar):
    name, hint, aliases = "_PlusScalar", "_plusscalar", ("_plus_scalar",)

    def forward(self, rt, ins, outs, aux):
        rt.xp.add(ins[0], self.scalar, out=outs[0])

    def gradient(self, node, out_grads):
        return [out_grads[0]]


@register
class MinusScalar(_Scalar):
    name, hint, aliases = "_MinusScalar", "_minusscalar", ("_minus_scalar",)

    def forward(self, rt, ins, outs, aux):
        rt.xp.subtract(ins[0], self.scalar, out=outs[0])

    def gradient(self, node, out_grads):
        return [out_grads[0]]


@register
class RMinusScalar(_Scalar):
    name, hint, aliases = "_RMinusScalar", "_rminusscalar", ("_rminus_scalar",)

    def forward(self, rt, ins, outs, aux):
        rt.xp.subtract(self.scalar, ins[0], out=outs[0])

    def gradient(self, node, out_grads):
        return [apply(MulScalar, [out_grads[0]], grad_name(node, "data"), scalar=-1.0)]


@register
class MulScalar(_Scalar):
    name, hint, aliases = "_MulScalar", "_mulscalar", ("_mul_scalar",)

    def forward(self, rt, ins, outs, aux):
        rt.xp.multiply(ins[0], self.scalar, out=outs[0])

    def gradient(self, node, out_grads):
        return [apply(MulScalar, [out_grads[0]], grad_name(node, "data"), scalar=self.scalar)]


@register
class DivScalar(_Scalar):
    name, hint, aliases = "_DivScalar", "_divscalar", ("_div_scalar",)

    def forward(self, rt, ins, outs, aux):
        rt.xp.divide(ins[0], self.scalar, out=outs[0])

    def gradient(self, node, out_grads):
        return [apply(MulScalar, [out_grads[0]], grad_name(node, "data"), scalar=1.0 / self.scalar)]


@register
class RDivScalar(_Scalar):
    name, hint, aliases = "_RDivScalar", "_rdivscalar", ("_rdiv_scalar",)

    def forward(self, rt, ins, outs, aux):
        rt.xp.divide(self.scalar, ins[0], out=outs[0])

    def gradient(self, node, out_grads):
        g_out = apply(Mul, [out_grads[0], (node, 0)], grad_name(node, "num"))
        ratio = apply(Div, [g_out, node.inputs[0]], grad_name(node, "ratio"))
        return [apply(MulScalar, [ratio], grad_name(node, "data"), scalar=-1.0)]


@register
class ZerosLike(BackwardOp):
    """Zeros shaped like its input (the gradient of an argument nothing depends on)."""
    name, hint = "zeros_like", "zeros_like"

    def forward(self, rt, ins, outs, aux):
        outs[0].fill(0)

    def gradient(self, node, out_grads):
        return [None]


@register
class FullLike(BackwardOp):
    """A constant shaped like its input (MakeLoss's head gradient)."""
    name, hint = "_full_like", "_full_like"
    spec = {"value": (to_float, REQUIRED)}

    def forward(self, rt, ins, outs, aux):
        outs[0].fill(self.value)


@register
class Copy(BackwardOp):
    name, hint, aliases = "_copy", "_copy", ("identity",)

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0])

    def gradient(self, node, out_grads):
        return [out_grads[0]]


@register
class Cast(Op):
    """``Cast(data, dtype)``: the values converted to ``dtype`` (rounded or truncated as numpy's
    astype does). Type inference gives the output ``dtype``; the executor stores every intermediate
    array in its own dtype, so the converted values are held in that type."""
    name, hint, aliases = "Cast", "cast", ("cast",)
    spec = {"dtype": (to_dtype, REQUIRED)}
    elementwise = True              # in shape; its type is its own (infer_type)

    def infer_type(self, in_types, out_types):
        return in_types, [self.dtype], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].astype(self.dtype), casting="unsafe")

    def gradient(self, node, out_grads):
        return [apply(CastGrad, [out_grads[0], node.inputs[0]], grad_name(node, "data"))]


@register
class CastGrad(BackwardOp):
    """Cast's gradient: the output gradient (input 0) converted back to the type of Cast's input (input 1,
    read for its type only), as MXNet's ``_backward_cast``."""
    name, hint = "_backward_cast", "_backward_cast"
    num_inputs = 2

    def infer_type(self, in_types, out_types):
        return in_types, [in_types[1]], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0], casting="unsafe")


class _Filled(Op):
    """An array of ``shape`` holding one value, with no inputs (``zeros``, ``ones``, ``full``)."""
    spec = {"shape": (to_shape, REQUIRED), "dtype": (str, None), "ctx": (str, None)}
    value = 0.0

    def arguments(self):
        return []

    def infer_shape(self, in_shapes):
        return [], [tuple(self.shape)], []

    def infer_type(self, in_types, out_types):
        return [], [self.dtype or "float32"], []

    def forward(self, rt, ins, outs, aux):
        outs[0].fill(self.value)

    def gradient(self, node, out_grads):
        return []


@register
class Zeros(_Filled):
    name, hint, aliases = "_zeros", "zeros", ("zeros",)


@register
class Ones(_Filled):
    name, hint, aliases = "_ones", "ones", ("ones",)
    value = 1.0


@register
class Full(_Filled):
    name, hint, aliases = "_full", "full", ("full",)
    spec = dict(_Filled.spec, value=(to_float, REQUIRED))

    def setup(self):
        self.value = self.params["value"]

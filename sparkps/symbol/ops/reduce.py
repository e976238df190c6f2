"""Reductions (sum, mean over axes) and Embedding (row lookup)."""
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import to_axis, to_bool, to_int


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else axis
    return tuple(sorted(a % ndim for a in axes))


class _Reduce(Op):
    spec = {"axis": (to_axis, None), "keepdims": (to_bool, False), "exclude": (to_bool, False)}
    scale_by_count = False

    def reduced_axes(self, ndim):
        axes = _axes(self.axis, ndim)
        return tuple(a for a in range(ndim) if a not in axes) if self.exclude else axes

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        for a in (() if self.axis is None else _axes_raw(self.axis)):
            if not -len(data) <= a < len(data):
                raise self.shape_error("axis %d out of range for data shape %s", a, data)
        axes = self.reduced_axes(len(data))
        if self.keepdims:
            out = tuple(1 if i in axes else d for i, d in enumerate(data))
        else:
            out = tuple(d for i, d in enumerate(data) if i not in axes) or (1,)
        return in_shapes, [out], []

    def forward(self, rt, ins, outs, aux):
        x, out = ins[0], outs[0]
        axes = self.reduced_axes(x.ndim)
        reduce = rt.xp.mean if self.scale_by_count else rt.xp.sum
        reduce(x, axis=axes, keepdims=True, out=out.reshape(_kept(x.shape, axes)))

    def gradient(self, node, out_grads):
        return [apply(BroadcastLike, [out_grads[0], node.inputs[0]], grad_name(node, "data"),
                      axis=self.axis, exclude=self.exclude, mean=self.scale_by_count)]


def _axes_raw(axis):
    return (axis,) if isinstance(axis, int) else axis


def _kept(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


@register
class Sum(_Reduce):
    """Sum over ``axis`` (None: all), keepdims and exclude as MXNet's sum."""
    name, hint, aliases = "sum", "sum", ("sum_axis",)


@register
class Mean(_Reduce):
    """Mean over ``axis`` (None: all)."""
    name, hint = "mean", "mean"
    scale_by_count = True


@register
class BroadcastLike(BackwardOp):
    """The first input spread back over the reduced axes of the second (divided by their size for a
    mean)."""
    name, hint = "_backward_reduce", "_backward_reduce"
    spec = {"axis": (to_axis, None), "exclude": (to_bool, False), "mean": (to_bool, False)}
    num_inputs = 2

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        dy, out = ins[0], outs[0]
        axes = _Reduce.reduced_axes(self, out.ndim)
        rt.xp.copyto(out, dy.reshape(_kept(out.shape, axes)))
        if self.mean:
            count = 1
            for a in axes:
                count *= out.shape[a]
            rt.xp.multiply(out, 1.0 / count, out=out)


# kind -> (reduce(xp, x, axes) keeping dims, derivative(xp, x, y_kept) or None)
VALUE_REDUCTIONS = {
    "max": (lambda xp, x, axes, op: x.max(axis=axes, keepdims=True), lambda xp, x, y, op: x == y),
    "min": (lambda xp, x, axes, op: x.min(axis=axes, keepdims=True), lambda xp, x, y, op: x == y),
    "prod": (lambda xp, x, axes, op: x.prod(axis=axes, keepdims=True), lambda xp, x, y, op: y / x),
    "nansum": (lambda xp, x, axes, op: xp.nansum(x, axis=axes, keepdims=True), lambda xp, x, y, op: ~xp.isnan(x)),
    "nanprod": (lambda xp, x, axes, op: xp.nanprod(x, axis=axes, keepdims=True),
                lambda xp, x, y, op: xp.where(xp.isnan(x), 0, y / x)),
    "norm": (lambda xp, x, axes, op: (xp.abs(x).sum(axis=axes, keepdims=True) if op.ord == 1 else
                                      xp.sqrt((x * x).sum(axis=axes, keepdims=True))),
             lambda xp, x, y, op: xp.sign(x) if op.ord == 1 else x / y),
}


class _ValueReduce(_Reduce):
    """A reduction whose gradient depends on the input and the result (max, min, prod, norm, ...)."""
    kind = None
    ord = 2                 # the norm's order (a parameter of Norm only; its gradient op takes it from every kind)

    def forward(self, rt, ins, outs, aux):
        x, out = ins[0], outs[0]
        axes = self.reduced_axes(x.ndim)
        rt.xp.copyto(out, VALUE_REDUCTIONS[self.kind][0](rt.xp, x, axes, self).reshape(out.shape))

    def gradient(self, node, out_grads):
        return [apply(ValueReduceGrad, [out_grads[0], node.inputs[0], (node, 0)], grad_name(node, "data"),
                      kind=self.kind, axis=self.axis, exclude=self.exclude, ord=self.ord)]


def _value_reduce(kind, doc, extra=None):
    spec = dict(_Reduce.spec, **(extra or {}))
    return register(type(kind.capitalize() + "Reduce", (_ValueReduce,),
                         {"name": kind, "hint": kind, "kind": kind, "spec": spec, "__doc__": doc}))


Max = _value_reduce("max", "Maximum over ``axis`` (None: all); the gradient goes to every maximal element.")
Min = _value_reduce("min", "Minimum over ``axis`` (None: all); the gradient goes to every minimal element.")
Prod = _value_reduce("prod", "Product over ``axis`` (None: all).")
NanSum = _value_reduce("nansum", "Sum over ``axis`` treating NaN as zero.")
NanProd = _value_reduce("nanprod", "Product over ``axis`` treating NaN as one.")
Norm = _value_reduce("norm", "The L2 (``ord=2``) or L1 (``ord=1``) norm over ``axis`` (None: all, shape (1,)).",
                     {"ord": (to_int, 2), "out_dtype": (str, None)})


@register
class ValueReduceGrad(BackwardOp):
    """dy spread over the reduced axes times the reduction's derivative (inputs dy, x, y)."""
    name, hint = "_backward_reduce_value", "_backward_reduce_value"
    spec = {"kind": (str, "max"), "axis": (to_axis, None), "exclude": (to_bool, False), "ord": (to_int, 2)}
    num_inputs = 3

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        dy, x, y = ins
        kept = _kept(x.shape, _Reduce.reduced_axes(self, x.ndim))
        derivative = VALUE_REDUCTIONS[self.kind][1](rt.xp, x, y.reshape(kept), self)
        rt.xp.multiply(dy.reshape(kept), derivative, out=outs[0])


class _ArgReduce(Op):
    """The index of the extreme element along ``axis`` (None: of the flattened data), as a value of the
    data's type, as MXNet 1.x's argmax/argmin; no gradient flows through an index."""
    spec = {"axis": (to_axis, None), "keepdims": (to_bool, False)}
    pick = None

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        if self.axis is None:
            return in_shapes, [(1,) * len(data) if self.keepdims else (1,)], []
        if not isinstance(self.axis, int) or not -len(data) <= self.axis < len(data):
            raise self.shape_error("axis %s out of range for data shape %s", self.axis, data)
        axis = self.axis % len(data)
        out = tuple(1 if i == axis else d for i, d in enumerate(data)) if self.keepdims else \
            tuple(d for i, d in enumerate(data) if i != axis) or (1,)
        return in_shapes, [out], []

    def forward(self, rt, ins, outs, aux):
        x, out = ins[0], outs[0]
        index = getattr(rt.xp, self.pick)(x.reshape(-1) if self.axis is None else x, axis=self.axis or 0)
        rt.xp.copyto(out, rt.xp.asarray(index).reshape(out.shape), casting="unsafe")

    def gradient(self, node, out_grads):
        return [None]


@register
class Argmax(_ArgReduce):
    name, hint, pick = "argmax", "argmax", "argmax"


@register
class Argmin(_ArgReduce):
    name, hint, pick = "argmin", "argmin", "argmin"

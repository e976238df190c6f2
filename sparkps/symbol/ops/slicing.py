"""Ops that cut, pick or re-arrange axes: ``SliceChannel``/``split``, ``slice_axis``, ``pick``,
``batch_take``, ``where``, ``reverse``, ``expand_dims``, ``squeeze``, ``SwapAxis``, ``zeros_like``/``ones_like``."""
from math import prod

from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, choice, to_axis, to_bool, to_int
from ..shape import unify
from .elemwise import ZerosLike


def _axis(op, axis, ndim, what="data"):
    if not -ndim <= axis < ndim:
        raise op.shape_error("axis %d out of range for %s of %d axes", axis, what, ndim)
    return axis % ndim


@register
class SliceChannel(Op):
    """``split(data, num_outputs, axis=1, squeeze_axis=False)``: ``num_outputs`` equal parts along
    ``axis``; ``squeeze_axis`` drops that axis when each part has size 1."""
    name, hint, aliases = "SliceChannel", "slicechannel", ("split",)
    spec = {"num_outputs": (to_int, REQUIRED), "axis": (to_int, 1), "squeeze_axis": (to_bool, False)}
    partial_shapes = True

    def refine_inputs(self, in_shapes, out_shapes):
        data, out = in_shapes[0], None
        for shape in out_shapes:                    # every part has one shape
            if shape is not None:
                out = tuple(shape) if out is None else (unify(out, tuple(shape)) or out)
        if data is None or out is None:
            return in_shapes
        axis = self.axis % len(data)
        dims = list(out)
        if self.squeeze_axis:
            dims.insert(axis, 1)
        dims[axis] *= self.num_outputs
        merged = unify(tuple(data), tuple(dims))
        return [merged if merged is not None else data]

    def setup(self):
        self.num_outputs = self.params["num_outputs"]
        self.output_names = tuple("output%d" % i for i in range(self.num_outputs))

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None] * self.num_outputs, []
        axis = _axis(self, self.axis, len(data))
        if data[axis] and data[axis] % self.num_outputs:
            raise self.shape_error("axis %d of data '%s' %s does not split into %d equal parts",
                                   self.axis, self.input_name(0), data, self.num_outputs)
        part = list(data)
        part[axis] //= self.num_outputs
        if self.squeeze_axis:
            if data[axis] and part[axis] != 1:
                raise self.shape_error("squeeze_axis needs parts of size 1 along axis %d, got %d", self.axis,
                                       part[axis])
            del part[axis]
        return in_shapes, [tuple(part)] * self.num_outputs, []

    def forward(self, rt, ins, outs, aux):
        x = ins[0]
        axis = self.axis % x.ndim
        size = x.shape[axis] // self.num_outputs
        for i, out in enumerate(outs):
            cut = [slice(None)] * x.ndim
            cut[axis] = slice(i * size, (i + 1) * size)
            rt.xp.copyto(out, x[tuple(cut)].reshape(out.shape))

    def gradient(self, node, out_grads):
        grads = [g if g is not None else apply(ZerosLike, [(node, i)], grad_name(node, "zeros%d" % i))
                 for i, g in enumerate(out_grads)]
        return [apply(SplitGrad, grads + [node.inputs[0]], grad_name(node, "data"), parts=self.num_outputs,
                      axis=self.axis)]


@register
class SplitGrad(BackwardOp):
    """The parts' gradients joined back along ``axis`` (inputs: the parts, then data for the shape)."""
    name, hint = "_backward_SliceChannel", "_backward_slicechannel"
    spec = {"parts": (to_int, REQUIRED), "axis": (to_int, 1)}

    @property
    def num_inputs(self):
        return self.parts + 1

    def output_shapes(self, in_shapes):
        return [in_shapes[-1]]

    def forward(self, rt, ins, outs, aux):
        out = outs[0]
        axis = self.axis % out.ndim
        size = out.shape[axis] // self.parts
        for i, g in enumerate(ins[:-1]):
            cut = [slice(None)] * out.ndim
            cut[axis] = slice(i * size, (i + 1) * size)
            rt.xp.copyto(out[tuple(cut)], g.reshape(out[tuple(cut)].shape))


@register
class SliceAxis(Op):
    """``slice_axis(data, axis, begin, end)``: data[..., begin:end, ...] along ``axis`` (end None:
    to the end; negative indices count from the end)."""
    name, hint = "slice_axis", "slice_axis"
    spec = {"axis": (to_int, REQUIRED), "begin": (to_int, REQUIRED), "end": (to_axis, None)}

    def bounds(self, size):
        begin = self.begin + size if self.begin < 0 else self.begin
        end = size if self.end is None else (self.end + size if self.end < 0 else self.end)
        return begin, end

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        axis = _axis(self, self.axis, len(data))
        begin, end = self.bounds(data[axis])
        if not 0 <= begin < end <= data[axis]:
            raise self.shape_error("begin %d, end %s do not cut axis %d of size %d", self.begin, self.end,
                                   self.axis, data[axis])
        out = list(data)
        out[axis] = end - begin
        return in_shapes, [tuple(out)], []

    def cut(self, ndim, size):
        axis = self.axis % ndim
        cut = [slice(None)] * ndim
        cut[axis] = slice(*self.bounds(size))
        return tuple(cut)

    def forward(self, rt, ins, outs, aux):
        x = ins[0]
        rt.xp.copyto(outs[0], x[self.cut(x.ndim, x.shape[self.axis % x.ndim])])

    def gradient(self, node, out_grads):
        return [apply(SliceAxisGrad, [out_grads[0], node.inputs[0]], grad_name(node, "data"), **self.params)]


@register
class SliceAxisGrad(BackwardOp):
    """dy placed back into zeros shaped like data."""
    name, hint = "_backward_slice_axis", "_backward_slice_axis"
    spec = SliceAxis.spec
    num_inputs = 2
    bounds, cut = SliceAxis.bounds, SliceAxis.cut

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        out = outs[0]
        out.fill(0)
        rt.xp.copyto(out[self.cut(out.ndim, out.shape[self.axis % out.ndim])], ins[0])


@register
class Pick(Op):
    """``pick(data, index, axis=-1, keepdims=False, mode='clip')``: out[i] = data[i, index[i]] along
    ``axis``; indices outside the axis are clipped ('clip') or wrapped ('wrap')."""
    name, hint = "pick", "pick"
    spec = {"axis": (to_axis, -1), "keepdims": (to_bool, False), "mode": (choice("clip", "wrap"), "clip")}
    partial_shapes = True
    own_type_inputs = (1,)          # integer or float indices, as MXNet's PickOpType

    def arguments(self):
        return ["data", "index"]

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        axis = _axis(self, self.axis, len(data))
        out = tuple(1 if i == axis else d for i, d in enumerate(data)) if self.keepdims else \
            tuple(d for i, d in enumerate(data) if i != axis)
        index = tuple(d for i, d in enumerate(data) if i != axis)
        given = in_shapes[1]
        if given is not None:
            merged = unify(tuple(given), index) if len(given) == len(index) else unify(tuple(given), out)
            if merged is None:
                raise self.shape_error("index '%s' has shape %s, expected %s", self.input_name(1), given, index)
            index = merged
        return [data, index], [out or (1,)], []

    def positions(self, xp, data, index):
        axis = self.axis % data.ndim
        size = data.shape[axis]
        ids = index.astype(xp.intp)
        ids = xp.clip(ids, 0, size - 1) if self.mode == "clip" else xp.mod(ids, size)
        return xp.expand_dims(ids.reshape(data.shape[:axis] + data.shape[axis + 1:]), axis), axis

    def forward(self, rt, ins, outs, aux):
        ids, axis = self.positions(rt.xp, ins[0], ins[1])
        picked = rt.xp.take_along_axis(ins[0], ids, axis=axis)
        rt.xp.copyto(outs[0], picked.reshape(outs[0].shape))

    def gradient(self, node, out_grads):
        return [apply(PickGrad, [out_grads[0], node.inputs[0], node.inputs[1]], grad_name(node, "data"),
                      **self.params), None]


@register
class BatchTake(Op):
    """``batch_take(a, indices)`` (MXNet's deprecated pick): out[i] = a[i, indices[i]] over ``a`` seen as rows of
    its last axis, indices clipped to that axis and of type int32; no gradient flows (binding one fails)."""
    name, hint = "batch_take", "batch_take"

    def arguments(self):
        return ["a", "indices"]

    def infer_type(self, in_types, out_types):
        data = in_types[0] if in_types[0] is not None else out_types[0]
        return [data, "int32"], [data], []

    def infer_shape(self, in_shapes):
        data, indices = in_shapes
        if data is not None and len(data) < 2:
            raise self.shape_error("a '%s' must have at least 2 dimensions, got %s", self.input_name(0), data)
        if data is not None and indices is not None and prod(indices) != prod(data[:-1]):
            raise self.shape_error("indices '%s' %s must hold one index per row of a %s", self.input_name(1),
                                   indices, data)
        return in_shapes, [indices], []

    def forward(self, rt, ins, outs, aux):
        rows = ins[0].reshape(-1, ins[0].shape[-1])
        ids = rt.xp.clip(ins[1].reshape(-1).astype(rt.xp.intp), 0, rows.shape[1] - 1)
        rt.xp.copyto(outs[0], rows[rt.xp.arange(rows.shape[0]), ids].reshape(outs[0].shape))


@register
class PickGrad(BackwardOp):
    """dy put at the picked positions of zeros shaped like data (inputs dy, data, index)."""
    name, hint = "_backward_pick", "_backward_pick"
    spec = Pick.spec
    num_inputs = 3
    positions = Pick.positions

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        out = outs[0]
        out.fill(0)
        ids, axis = self.positions(rt.xp, out, ins[2])
        rt.xp.put_along_axis(out, ids, ins[0].reshape(ids.shape), axis=axis)


@register
class Where(Op):
    """``where(condition, x, y)``: x where condition is non-zero, else y (condition of x's shape,
    or 1-D over x's first axis)."""
    name, hint = "where", "where"
    partial_shapes = True
    own_type_inputs = (0,)          # the condition may be of any type

    def arguments(self):
        return ["condition", "x", "y"]

    def infer_shape(self, in_shapes):
        cond, x, y = in_shapes
        shape = x if x is not None else y
        if x is not None and y is not None:
            shape = unify(tuple(x), tuple(y))
            if shape is None:
                raise self.shape_error("x '%s' %s and y '%s' %s differ", self.input_name(1), x, self.input_name(2), y)
        if shape is not None and cond is not None and unify(tuple(cond), tuple(shape)) is None \
                and unify(tuple(cond), tuple(shape[:1])) is None:
            raise self.shape_error("condition '%s' %s must have the shape of x %s or be (%d,)",
                                   self.input_name(0), cond, shape, shape[0])
        return [cond, shape, shape], [shape], []

    def mask(self, cond, ndim):
        return cond.reshape(cond.shape + (1,) * (ndim - cond.ndim)) != 0

    def forward(self, rt, ins, outs, aux):
        cond, x, y = ins
        rt.xp.copyto(outs[0], rt.xp.where(self.mask(cond, x.ndim), x, y))

    def gradient(self, node, out_grads):
        inputs = [out_grads[0], node.inputs[0]]
        return [None] + [apply(WhereGrad, inputs, grad_name(node, side), side=k)
                         for k, side in ((1, "x"), (2, "y"))]


@register
class WhereGrad(BackwardOp):
    """dy where the condition picks this side (1: x, 2: y), zero elsewhere."""
    name, hint = "_backward_where", "_backward_where"
    spec = {"side": (to_int, 1)}
    num_inputs = 2
    mask = Where.mask

    def forward(self, rt, ins, outs, aux):
        dy, cond = ins
        keep = self.mask(cond, dy.ndim)
        rt.xp.copyto(outs[0], rt.xp.where(keep if self.side == 1 else ~keep, dy, 0))


@register
class Reverse(Op):
    """``reverse(data, axis)``: the order of the elements along ``axis`` reversed."""
    name, hint, aliases = "reverse", "reverse", ("flip",)
    spec = {"axis": (to_axis, REQUIRED)}

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], rt.xp.flip(ins[0], axis=self.axis))

    def gradient(self, node, out_grads):
        return [apply(Reverse, [out_grads[0]], grad_name(node, "data"), axis=self.axis)]


@register
class ExpandDims(Op):
    """``expand_dims(data, axis)``: a new axis of size 1 at ``axis``."""
    name, hint = "expand_dims", "expand_dims"
    spec = {"axis": (to_int, REQUIRED)}

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        axis = _axis(self, self.axis, len(data) + 1, "the output")
        return in_shapes, [tuple(data[:axis]) + (1,) + tuple(data[axis:])], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].reshape(outs[0].shape))

    def gradient(self, node, out_grads):
        return [apply(ReshapeTo, [out_grads[0], node.inputs[0]], grad_name(node, "data"))]


@register
class Squeeze(Op):
    """``squeeze(data, axis=None)``: drop axes of size 1 (all of them, or those in ``axis``)."""
    name, hint = "squeeze", "squeeze"
    spec = {"axis": (to_axis, None)}

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        if self.axis is None:
            drop = {i for i, d in enumerate(data) if d == 1}
        else:
            drop = {_axis(self, a, len(data)) for a in ((self.axis,) if isinstance(self.axis, int) else self.axis)}
            if any(data[a] != 1 for a in drop):
                raise self.shape_error("axis %s of data '%s' %s is not of size 1", self.axis, self.input_name(0), data)
        return in_shapes, [tuple(d for i, d in enumerate(data) if i not in drop) or (1,)], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].reshape(outs[0].shape))

    def gradient(self, node, out_grads):
        return [apply(ReshapeTo, [out_grads[0], node.inputs[0]], grad_name(node, "data"))]


@register
class ReshapeTo(BackwardOp):
    """The first input reshaped to the second input's shape (the gradient of a pure reshape)."""
    name, hint = "_backward_reshape_to", "_backward_reshape_to"
    num_inputs = 2

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].reshape(outs[0].shape))


@register
class SwapAxis(Op):
    """``SwapAxis(data, dim1, dim2)``: exchange two axes."""
    name, hint, aliases = "SwapAxis", "swapaxis", ("swapaxes",)
    spec = {"dim1": (to_int, 0), "dim2": (to_int, 0)}

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        a, b = _axis(self, self.dim1, len(data)), _axis(self, self.dim2, len(data))
        out = list(data)
        out[a], out[b] = out[b], out[a]
        return in_shapes, [tuple(out)], []

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0].swapaxes(self.dim1, self.dim2))

    def gradient(self, node, out_grads):
        return [apply(SwapAxis, [out_grads[0]], grad_name(node, "data"), dim1=self.dim1, dim2=self.dim2)]


@register
class OnesLike(BackwardOp):
    """Ones shaped like the input (no gradient flows back)."""
    name, hint = "ones_like", "ones_like"

    def forward(self, rt, ins, outs, aux):
        outs[0].fill(1)

    def gradient(self, node, out_grads):
        return [None]

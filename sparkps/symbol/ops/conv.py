"""Convolution (1-D, 2-D, 3-D; stride, padding, dilation, groups) and the nodes of its gradient.

Convolution copies the kernel-offset views of the padded input (window.py) into columns
(N, *out, C, *kernel) and runs one matrix product per group; its gradients are matrix products with
the same columns. Output length: (n + 2*pad - dilate*(k-1) - 1) // stride + 1. Buffers are
allocated once, when the executor prepares the op.
"""
from ...errors import ConfigError
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, render, to_bool, to_int, to_shape
from .window import (channels_first, channels_last, check_geometry, extent, interior, out_size, padded_shape,
                     padding, windows)

_LAYOUTS = {1: ("NCW",), 2: ("NCHW",), 3: ("NCDHW",)}
_GEOMETRY = {"kernel": (to_shape, REQUIRED), "stride": (to_shape, ()), "pad": (to_shape, ()),
             "dilate": (to_shape, ()), "num_filter": (to_int, REQUIRED), "num_group": (to_int, 1)}


class _ConvGeometry:
    """Kernel, stride, pad, dilation and groups, checked and completed at construction."""

    def setup(self):
        self.stride, self.pad, self.dilate = check_geometry(self.name, self.kernel, self.stride, self.pad,
                                                            self.dilate)
        if self.num_filter < 1 or self.num_group < 1 or self.num_filter % self.num_group:
            raise ConfigError("%s: num_filter %d must be a positive multiple of num_group %d"
                              % (self.name, self.num_filter, self.num_group))

    @property
    def geometry(self):
        return {"kernel": self.kernel, "stride": self.stride, "pad": self.pad, "dilate": self.dilate,
                "num_filter": self.num_filter, "num_group": self.num_group}

    def out_spatial(self, data):
        return tuple(out_size(n, k, s, p, p, d) for n, k, s, p, d in
                     zip(data[2:], self.kernel, self.stride, self.pad, self.dilate))

    def columns(self, xp, x, out_spatial):
        """(columns buffer (N, *out, C, *kernel), callable filling it from x)."""
        cols = xp.zeros((x.shape[0],) + tuple(out_spatial) + (x.shape[1],) + tuple(self.kernel), dtype=x.dtype)
        buffer = xp.zeros(padded_shape(x.shape, self.pad, self.pad), dtype=x.dtype) if any(self.pad) else None
        padded, refresh = padding(xp, x, buffer, self.pad, self.pad)
        copies = [(cols[(Ellipsis,) + offset], channels_last(view))
                  for offset, view in windows(padded, self.kernel, self.stride, self.dilate, out_spatial)]

        def fill():
            refresh()
            for dst, src in copies:
                xp.copyto(dst, src)
        return cols, fill

    def group_slices(self, channels):
        """[(filter slice, column slice)] of each group."""
        fg, cg = self.num_filter // self.num_group, channels // self.num_group
        k = 1
        for size in self.kernel:
            k *= size
        return [(slice(g * fg, (g + 1) * fg), slice(g * cg * k, (g + 1) * cg * k)) for g in range(self.num_group)]


def _rows_of(xp, dy):
    """(callable copying dy (N, F, *out) into a (N, *out, F) buffer, that buffer as (M, F))."""
    buffer = xp.zeros((dy.shape[0],) + tuple(dy.shape[2:]) + (dy.shape[1],), dtype=dy.dtype)
    target = channels_first(buffer)
    return (lambda: xp.copyto(target, dy)), buffer.reshape(-1, dy.shape[1])


@register
class Convolution(_ConvGeometry, Op):
    """out[n, f] = bias[f] + sum over c in f's group and kernel offsets of weight[f, c, offset] *
    data_padded[n, c, out_position * stride + offset * dilate] (MXNet's cross-correlation), weight
    (num_filter, C / num_group, *kernel), on NCW, NCHW or NCDHW data."""
    name, hint, aliases = "Convolution", "convolution", ("Convolution_v1",)
    spec = dict(_GEOMETRY, no_bias=(to_bool, False), workspace=(to_int, 1024), cudnn_tune=(str, None),
                cudnn_off=(to_bool, False), layout=(str, None))
    partial_shapes = True

    def setup(self):
        _ConvGeometry.setup(self)
        if self.layout not in (None, "None") + _LAYOUTS.get(len(self.kernel), ()):
            raise ConfigError("Convolution: layout %s is not supported (channels first: %s)"
                              % (self.layout, "/".join(_LAYOUTS.get(len(self.kernel), ("NCHW",)))))

    def arguments(self):
        return ["data", "weight"] if self.no_bias else ["data", "weight", "bias"]

    def infer_shape(self, in_shapes):
        data, weight = in_shapes[0], in_shapes[1]
        out = None
        if data is not None:
            if len(data) != 2 + len(self.kernel):
                raise self.shape_error("data '%s' must have %d axes (N, C and %d spatial) for kernel %s, got %s",
                                       self.input_name(0), 2 + len(self.kernel), len(self.kernel),
                                       render(self.kernel), data)
            if data[1] and data[1] % self.num_group:
                raise self.shape_error("data '%s' has %d channels, not a multiple of num_group %d",
                                       self.input_name(0), data[1], self.num_group)
            span = extent(self.kernel, self.dilate)
            if any(n and k > n + 2 * p for n, k, p in zip(data[2:], span, self.pad)):
                dilated = "" if span == tuple(self.kernel) else " (dilated %s)" % render(span)
                raise self.shape_error("kernel %s%s is larger than data '%s' of shape %s padded by %s",
                                       render(self.kernel), dilated, self.input_name(0), data, render(self.pad))
            weight = (self.num_filter, data[1] // self.num_group) + tuple(self.kernel)
            out = (data[0], self.num_filter) + self.out_spatial(data)
        elif weight is not None and len(weight) == 2 + len(self.kernel):
            weight = (self.num_filter, weight[1]) + tuple(self.kernel)
        return [data, weight] + ([] if self.no_bias else [(self.num_filter,)]), [out], []

    def refine_inputs(self, in_shapes, out_shapes):
        """Batch and spatial sizes of data from a known output (MXNet's backward inference)."""
        data, out = in_shapes[0], out_shapes[0]
        if data is None or out is None or len(data) != len(out):
            return in_shapes
        span = extent(self.kernel, self.dilate)
        guess = (out[0], data[1]) + tuple((o - 1) * s + k - 2 * p if o else 0
                                          for o, s, k, p in zip(out[2:], self.stride, span, self.pad))
        in_shapes[0] = tuple(d or g for d, g in zip(data, guess))
        return in_shapes

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, x, out, f = rt.xp, ins[0], outs[0], self.num_filter
        cols, fill = self.columns(xp, x, out.shape[2:])
        product = xp.zeros((x.shape[0],) + tuple(out.shape[2:]) + (f,), dtype=out.dtype)
        rows, cols2d, weight2d = product.reshape(-1, f), cols.reshape(product.size // f, -1), ins[1].reshape(f, -1)
        products = [(cols2d[:, cs], weight2d[fs].T, rows[:, fs]) for fs, cs in self.group_slices(x.shape[1])]
        as_ncx = channels_first(product)
        bias = None if self.no_bias else ins[2].reshape((1, f) + (1,) * len(self.kernel))
        matmul = xp.matmul

        def run():
            fill()
            for a, b, o in products:
                matmul(a, b, out=o)
            if bias is None:
                xp.copyto(out, as_ncx)
            else:
                xp.add(as_ncx, bias, out=out)
        return run

    def gradient(self, node, out_grads):
        dy, (data, weight) = out_grads[0], node.inputs[:2]
        grads = [apply(ConvDataGrad, [dy, weight, data], grad_name(node, "data"), **self.geometry),
                 apply(ConvWeightGrad, [dy, data], grad_name(node, "weight"), **self.geometry)]
        if not self.no_bias:
            grads.append(apply(ConvBiasGrad, [dy], grad_name(node, "bias")))
        return grads


@register
class ConvDataGrad(_ConvGeometry, BackwardOp):
    """d data: dy . weight gives the gradient of each column, added back onto the window it came
    from; shaped like data (the third input, read for its shape only)."""
    name, hint = "_backward_Convolution_data", "_backward_convolution_data"
    spec = dict(_GEOMETRY)
    num_inputs = 3

    def output_shapes(self, in_shapes):
        return [in_shapes[2]]

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, (dy, weight, _), out = rt.xp, ins, outs[0]
        copy_dy, dy_rows = _rows_of(xp, dy)
        col_grads = xp.zeros((out.shape[0],) + tuple(dy.shape[2:]) + (out.shape[1],) + tuple(self.kernel),
                             dtype=out.dtype)
        col_rows, weight2d = col_grads.reshape(dy_rows.shape[0], -1), weight.reshape(weight.shape[0], -1)
        products = [(dy_rows[:, fs], weight2d[fs], col_rows[:, cs]) for fs, cs in self.group_slices(out.shape[1])]
        target = xp.zeros(padded_shape(out.shape, self.pad, self.pad), dtype=out.dtype) if any(self.pad) else out
        adds = [(view, channels_first(col_grads[(Ellipsis,) + offset]))
                for offset, view in windows(target, self.kernel, self.stride, self.dilate, dy.shape[2:])]
        inner = interior(target, out.shape, self.pad) if any(self.pad) else None

        def run():
            copy_dy()
            for a, b, o in products:
                xp.matmul(a, b, out=o)
            target.fill(0)
            for view, grad in adds:
                view += grad
            if inner is not None:
                xp.copyto(out, inner)
        return run


@register
class ConvWeightGrad(_ConvGeometry, BackwardOp):
    """d weight = dy^T . columns of data, per group, reshaped to (num_filter, C / groups, *kernel)."""
    name, hint = "_backward_Convolution_weight", "_backward_convolution_weight"
    spec = dict(_GEOMETRY)
    num_inputs = 2

    def output_shapes(self, in_shapes):
        dy, data = in_shapes
        if dy is None or data is None:
            return [None]
        return [(dy[1], data[1] // self.num_group) + tuple(self.kernel)]

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, (dy, data), out = rt.xp, ins, outs[0]
        copy_dy, dy_rows = _rows_of(xp, dy)
        cols, fill = self.columns(xp, data, dy.shape[2:])
        cols2d, grad2d = cols.reshape(dy_rows.shape[0], -1), out.reshape(out.shape[0], -1)
        products = [(dy_rows[:, fs].T, cols2d[:, cs], grad2d[fs]) for fs, cs in self.group_slices(data.shape[1])]

        def run():
            copy_dy()
            fill()
            for a, b, o in products:
                xp.matmul(a, b, out=o)
        return run


@register
class ConvBiasGrad(BackwardOp):
    """d bias = dy summed over the batch and every spatial axis."""
    name, hint = "_backward_Convolution_bias", "_backward_convolution_bias"

    def output_shapes(self, in_shapes):
        return [None if in_shapes[0] is None else (in_shapes[0][1],)]

    def forward(self, rt, ins, outs, aux):
        rt.xp.sum(ins[0], axis=(0,) + tuple(range(2, ins[0].ndim)), out=outs[0])

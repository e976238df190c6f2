"""Convolution and Pooling over 2-D NCHW data, and the nodes of their gradients.

Both visit the kh*kw kernel offsets one at a time, each offset being a strided view of the (padded)
input, so they use only array functions numpy and cupy share. Convolution copies those views into
columns (N, OH, OW, C, kh, kw) and runs one matrix product; its gradients are matrix products with
the same columns. Output size: OH = (H + 2*pad_h - kh) // stride_h + 1 (MXNet's 'valid' convention).
"""
from ...errors import ConfigError
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, choice, render, to_bool, to_int, to_shape


def _check_pair(op_name, key, value, minimum):
    if len(value) != 2 or min(value) < minimum:
        raise ConfigError("%s: parameter %r must be two ints >= %d (height, width), got %s"
                          % (op_name, key, minimum, render(value)))


def _out_hw(hw, kernel, stride, pad):
    return tuple((hw[a] + 2 * pad[a] - kernel[a]) // stride[a] + 1 for a in (0, 1))


def _windows(padded, kernel, stride, out_hw):
    """The view of ``padded`` (N, C, Hp, Wp) under each kernel offset, in row-major offset order:
    ((i, j), padded[:, :, i + stride_h * oh, j + stride_w * ow]) of shape (N, C, OH, OW)."""
    (sh, sw), (oh, ow) = stride, out_hw
    return [((i, j), padded[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw])
            for i in range(kernel[0]) for j in range(kernel[1])]


def _padded_shape(shape, pad):
    n, c, h, w = shape
    return (n, c, h + 2 * pad[0], w + 2 * pad[1])


def _interior(padded, shape, pad):
    return padded[:, :, pad[0]:pad[0] + shape[2], pad[1]:pad[1] + shape[3]]


def _padding(xp, x, buffer, pad):
    """(padded array, callable refreshing it from x): x itself when there is no padding."""
    if not any(pad):
        return x, lambda: None
    inner = _interior(buffer, x.shape, pad)
    return buffer, lambda: xp.copyto(inner, x)


class _Window:
    """Kernel, stride and pad of a window sliding over the last two axes of NCHW data."""

    def check_window(self):
        for key, minimum in (("kernel", 1), ("stride", 1), ("pad", 0)):
            _check_pair(self.name, key, getattr(self, key), minimum)

    def window(self, shape):
        return self.kernel, self.stride, self.pad

    def check_data(self, data):
        """The output (N, C', OH, OW) spatial size for data shape ``data`` (0 where the input size is
        unknown), or a ShapeError."""
        if len(data) != 4:
            raise self.shape_error("data '%s' must be 4-D (N, C, H, W), got shape %s", self.input_name(0), data)
        kernel, stride, pad = self.window(data)
        if any(data[2 + a] and kernel[a] > data[2 + a] + 2 * pad[a] for a in (0, 1)):
            raise self.shape_error("kernel %s is larger than data '%s' of shape %s padded by %s",
                                   kernel, self.input_name(0), data, pad)
        out = _out_hw(data[2:], kernel, stride, pad)
        return tuple(o if data[2 + a] else 0 for a, o in enumerate(out))

    def refine_inputs(self, in_shapes, out_shapes):
        """Batch and spatial sizes of data from a known output (MXNet's backward inference)."""
        data, out = in_shapes[0], out_shapes[0]
        if data is None or out is None or len(data) != 4 or getattr(self, "global_pool", False):
            return in_shapes
        kernel, stride, pad = self.window(data)
        guess = [out[0], data[1]] + [(out[2 + a] - 1) * stride[a] + kernel[a] - 2 * pad[a] if out[2 + a] else 0
                                     for a in (0, 1)]
        in_shapes[0] = tuple(d or g for d, g in zip(data, guess))
        return in_shapes


def _cols_scratch(data, kernel, stride, pad):
    """Scratch for _im2col: the columns, then the zero-padded data when there is padding."""
    oh, ow = _out_hw(data[2:], kernel, stride, pad)
    shapes = [((data[0], oh, ow, data[1]) + tuple(kernel), None)]
    return shapes + ([(_padded_shape(data, pad), None)] if any(pad) else [])


def _im2col(xp, x, scratch, kernel, stride, pad):
    """A callable filling scratch[0] (N, OH, OW, C, kh, kw) with every window of x."""
    cols = scratch[0]
    padded, refresh = _padding(xp, x, scratch[1] if any(pad) else None, pad)
    copies = [(cols[..., i, j], view.transpose(0, 2, 3, 1))
              for (i, j), view in _windows(padded, kernel, stride, cols.shape[1:3])]

    def fill():
        refresh()
        for dst, src in copies:
            xp.copyto(dst, src)
    return fill


def _rows_of(dy, buffer, xp):
    """A callable copying dy (N, F, OH, OW) into buffer (N, OH, OW, F); returns buffer as (M, F)."""
    target = buffer.transpose(0, 3, 1, 2)
    return (lambda: xp.copyto(target, dy)), buffer.reshape(-1, buffer.shape[-1])


_WINDOW_SPEC = {"kernel": (to_shape, REQUIRED), "stride": (to_shape, (1, 1)), "pad": (to_shape, (0, 0))}


@register
class Convolution(_Window, Op):
    """out[n, f] = bias[f] + sum over c, i, j of weight[f, c, i, j] * data_padded[n, c, y*sh + i, x*sw + j]
    (a 2-D cross-correlation as MXNet's), weight (num_filter, C, kh, kw), zero padding ``pad``."""
    name, hint, aliases = "Convolution", "convolution", ("Convolution_v1",)
    spec = dict(_WINDOW_SPEC, num_filter=(to_int, REQUIRED), no_bias=(to_bool, False), dilate=(to_shape, ()),
                num_group=(to_int, 1), workspace=(to_int, 1024), cudnn_tune=(str, None), cudnn_off=(to_bool, False),
                layout=(str, None))
    partial_shapes = True

    def setup(self):
        if any(d != 1 for d in self.dilate) or self.num_group != 1 or self.layout not in (None, "None", "NCHW"):
            raise ConfigError("Convolution: dilate %s, num_group %d, layout %s are not supported yet (only "
                              "2-D NCHW convolutions without dilation or groups)"
                              % (render(self.dilate), self.num_group, self.layout))
        self.check_window()
        if self.num_filter < 1:
            raise ConfigError("Convolution: parameter 'num_filter' must be >= 1, got %d" % self.num_filter)

    def arguments(self):
        return ["data", "weight"] if self.no_bias else ["data", "weight", "bias"]

    def infer_shape(self, in_shapes):
        data, weight = in_shapes[0], in_shapes[1]
        out = None
        if data is not None:
            oh, ow = self.check_data(data)
            weight = (self.num_filter, data[1]) + self.kernel
            out = (data[0], self.num_filter, oh, ow)
        elif weight is not None and len(weight) == 4:
            weight = (self.num_filter, weight[1]) + self.kernel
        return [data, weight] + ([] if self.no_bias else [(self.num_filter,)]), [out], []

    def scratch_shapes(self, in_shapes, out_shapes):
        return [(out_shapes[0][:1] + out_shapes[0][2:] + (self.num_filter,), None)] + _cols_scratch(
            in_shapes[0], self.kernel, self.stride, self.pad)

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, out, f = rt.xp, outs[0], self.num_filter
        product = aux[0]
        fill = _im2col(xp, ins[0], aux[1:], self.kernel, self.stride, self.pad)
        cols, weight_t = aux[1].reshape(product.size // f, -1), ins[1].reshape(f, -1).T
        rows, as_nchw = product.reshape(-1, f), product.transpose(0, 3, 1, 2)
        bias = None if self.no_bias else ins[2].reshape(1, f, 1, 1)

        def run():
            fill()
            xp.matmul(cols, weight_t, out=rows)
            if bias is None:
                xp.copyto(out, as_nchw)
            else:
                xp.add(as_nchw, bias, out=out)
        return run

    def gradient(self, node, out_grads):
        dy, (data, weight) = out_grads[0], node.inputs[:2]
        window = {"kernel": self.kernel, "stride": self.stride, "pad": self.pad}
        grads = [apply(ConvDataGrad, [dy, weight, data], grad_name(node, "data"), **window),
                 apply(ConvWeightGrad, [dy, data], grad_name(node, "weight"), **window)]
        if not self.no_bias:
            grads.append(apply(ConvBiasGrad, [dy], grad_name(node, "bias")))
        return grads


@register
class ConvDataGrad(BackwardOp):
    """d data: dy . weight gives the gradient of each column, added back onto the window it came
    from; shaped like data (the third input, read for its shape only)."""
    name, hint = "_backward_Convolution_data", "_backward_convolution_data"
    spec = dict(_WINDOW_SPEC)
    num_inputs = 3

    def output_shapes(self, in_shapes):
        return [in_shapes[2]]

    def scratch_shapes(self, in_shapes, out_shapes):
        (n, f, oh, ow), data = in_shapes[0], in_shapes[2]
        shapes = [((n, oh, ow, f), None), ((n, oh, ow, data[1]) + self.kernel, None)]
        return shapes + ([(_padded_shape(data, self.pad), None)] if any(self.pad) else [])

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, (dy, weight, _), out = rt.xp, ins, outs[0]
        copy_dy, dy_rows = _rows_of(dy, aux[0], xp)
        col_grads = aux[1]
        target = aux[2] if any(self.pad) else out
        adds = [(view, col_grads[..., i, j].transpose(0, 3, 1, 2))
                for (i, j), view in _windows(target, self.kernel, self.stride, col_grads.shape[1:3])]
        matrix, col_rows = weight.reshape(weight.shape[0], -1), col_grads.reshape(dy_rows.shape[0], -1)
        interior = _interior(target, out.shape, self.pad) if any(self.pad) else None

        def run():
            copy_dy()
            xp.matmul(dy_rows, matrix, out=col_rows)
            target.fill(0)
            for view, grad in adds:
                view += grad
            if interior is not None:
                xp.copyto(out, interior)
        return run


@register
class ConvWeightGrad(BackwardOp):
    """d weight = dy^T . columns of data, reshaped to (num_filter, C, kh, kw)."""
    name, hint = "_backward_Convolution_weight", "_backward_convolution_weight"
    spec = dict(_WINDOW_SPEC)
    num_inputs = 2

    def output_shapes(self, in_shapes):
        dy, data = in_shapes
        return [None if dy is None or data is None else (dy[1], data[1]) + self.kernel]

    def scratch_shapes(self, in_shapes, out_shapes):
        n, f, oh, ow = in_shapes[0]
        return [((n, oh, ow, f), None)] + _cols_scratch(in_shapes[1], self.kernel, self.stride, self.pad)

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, (dy, data), out = rt.xp, ins, outs[0]
        copy_dy, dy_rows = _rows_of(dy, aux[0], xp)
        fill = _im2col(xp, data, aux[1:], self.kernel, self.stride, self.pad)
        cols, grad = aux[1].reshape(dy_rows.shape[0], -1), out.reshape(out.shape[0], -1)

        def run():
            copy_dy()
            fill()
            xp.matmul(dy_rows.T, cols, out=grad)
        return run


@register
class ConvBiasGrad(BackwardOp):
    """d bias = dy summed over the batch and both spatial axes."""
    name, hint = "_backward_Convolution_bias", "_backward_convolution_bias"

    def output_shapes(self, in_shapes):
        return [None if in_shapes[0] is None else (in_shapes[0][1],)]

    def forward(self, rt, ins, outs, aux):
        rt.xp.sum(ins[0], axis=(0, 2, 3), out=outs[0])


_POOL_SPEC = dict(_WINDOW_SPEC, kernel=(to_shape, ()), pool_type=(choice("max", "avg"), "max"),
                  global_pool=(to_bool, False))


class _PoolWindow(_Window):
    """Pooling's window: the whole H x W (stride 1, no padding) when global_pool."""

    def check_pool_window(self):
        if self.global_pool:
            _check_pair(self.name, "stride", self.stride, 1)
            _check_pair(self.name, "pad", self.pad, 0)
            return
        self.check_window()
        if any(p >= k for p, k in zip(self.pad, self.kernel)):
            raise ConfigError("%s: parameter 'pad' %s must be smaller than the kernel %s"
                              % (self.name, render(self.pad), render(self.kernel)))

    def window(self, shape):
        if self.global_pool:
            return tuple(shape[2:]), (1, 1), (0, 0)
        return self.kernel, self.stride, self.pad

    def pool_scratch(self, data):
        """The padded copy of data (max pads with -inf, avg with 0), when there is padding."""
        return [(_padded_shape(data, self.pad), None)] if not self.global_pool and any(self.pad) else []

    def padded_input(self, xp, x, scratch):
        buffer = scratch[0] if scratch else None
        if buffer is not None:
            buffer.fill(float("-inf") if self.pool_type == "max" else 0)
        return _padding(xp, x, buffer, self.window(x.shape)[2])


@register
class Pooling(_PoolWindow, Op):
    """Max or average over each kh x kw window (stride, padding as MXNet's 'valid' convention);
    average divides by the whole kernel area, padding included. global_pool pools all of H x W."""
    name, hint = "Pooling", "pooling"
    spec = dict(_POOL_SPEC, pooling_convention=(choice("valid"), "valid"))

    def setup(self):
        self.check_pool_window()

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        return in_shapes, [tuple(data[:2]) + self.check_data(data)], []

    def scratch_shapes(self, in_shapes, out_shapes):
        return self.pool_scratch(in_shapes[0])

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, out = rt.xp, outs[0]
        padded, refresh = self.padded_input(xp, ins[0], aux)
        kernel, stride, _ = self.window(ins[0].shape)
        first, *rest = [view for _, view in _windows(padded, kernel, stride, out.shape[2:])]
        combine = xp.maximum if self.pool_type == "max" else xp.add
        scale = 1.0 / (kernel[0] * kernel[1])

        def run():
            refresh()
            xp.copyto(out, first)
            for view in rest:
                combine(out, view, out=out)
            if self.pool_type == "avg":
                xp.multiply(out, scale, out=out)
        return run

    def gradient(self, node, out_grads):
        inputs = [out_grads[0], node.inputs[0]] + ([(node, 0)] if self.pool_type == "max" else [])
        return [apply(PoolingGrad, inputs, grad_name(node, "data"), kernel=self.kernel, stride=self.stride,
                      pad=self.pad, pool_type=self.pool_type, global_pool=self.global_pool)]


@register
class PoolingGrad(_PoolWindow, BackwardOp):
    """d data of Pooling, from (dy, data) and for max also the forward output. Average spreads dy /
    area over each window; max sends dy to the window's arg-max, the first maximal element in
    row-major window order when there are ties."""
    name, hint = "_backward_Pooling", "_backward_pooling"
    spec = dict(_POOL_SPEC)

    def setup(self):
        self.check_pool_window()
        self.num_inputs = 3 if self.pool_type == "max" else 2

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def scratch_shapes(self, in_shapes, out_shapes):
        data, out_shape = in_shapes[1], in_shapes[0]
        shapes = [(out_shape, None)] + self.pool_scratch(data)           # dy scaled or masked; padded dx
        if self.pool_type == "max":
            shapes += [(out_shape, "bool"), (out_shape, "bool")] + self.pool_scratch(data)  # hit, taken, x
        return shapes

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, dy, out = rt.xp, ins[0], outs[0]
        kernel, stride, pad = self.window(ins[1].shape)
        padded = any(pad)
        part, target = aux[0], (aux[1] if padded else out)
        targets = [view for _, view in _windows(target, kernel, stride, dy.shape[2:])]
        interior = _interior(target, out.shape, pad) if padded else None
        if self.pool_type == "max":
            hit, taken = aux[2 if padded else 1:][:2]
            source, refresh = self.padded_input(xp, ins[1], aux[4:])
            sources = [view for _, view in _windows(source, kernel, stride, dy.shape[2:])]
        area = float(kernel[0] * kernel[1])

        def run():
            target.fill(0)
            if self.pool_type == "avg":
                xp.divide(dy, area, out=part)
                for view in targets:
                    view += part
            else:
                refresh()
                taken.fill(False)
                for view, source_view in zip(targets, sources):
                    xp.equal(source_view, ins[2], out=hit)
                    xp.greater(hit, taken, out=hit)        # maximal here and at no earlier offset
                    xp.logical_or(taken, hit, out=taken)
                    xp.multiply(dy, hit, out=part)
                    view += part
            if interior is not None:
                xp.copyto(out, interior)
        return run

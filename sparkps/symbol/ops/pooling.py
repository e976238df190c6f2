"""Pooling over 1, 2 or 3 spatial axes: max, avg, sum and lp (the p-norm of each window), with
MXNet's output conventions ('valid': floor, 'full': ceil, 'same': ceil(n / stride)), global_pool
and count_include_pad, and the node of its gradient."""
import numpy as np

from ...errors import ConfigError
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import choice, render, to_bool, to_int, to_shape
from .window import check_geometry, interior, padded_shape, padding, windows

_POOL_SPEC = {"kernel": (to_shape, ()), "stride": (to_shape, ()), "pad": (to_shape, ()),
              "pool_type": (choice("max", "avg", "sum", "lp"), "max"), "global_pool": (to_bool, False),
              "pooling_convention": (choice("valid", "full", "same"), "valid"),
              "count_include_pad": (to_bool, True), "p_value": (to_int, 2), "cudnn_off": (to_bool, False),
              "layout": (str, None)}


def _ceil_div(a, b):
    return -(-a // b)


class _PoolGeometry:
    """The window of a pooling op for a given data shape."""

    def setup(self):
        if self.layout not in (None, "None", "NCW", "NCHW", "NCDHW"):
            raise ConfigError("%s: layout %s is not supported (channels first: NCW/NCHW/NCDHW)"
                              % (self.name, self.layout))
        if not self.global_pool:
            if not self.kernel:
                raise ConfigError("%s needs the parameter 'kernel' (or global_pool=True)" % self.name)
            self.stride, self.pad, _ = check_geometry(self.name, self.kernel, self.stride, self.pad, ())
            if any(p >= k for p, k in zip(self.pad, self.kernel)):
                raise ConfigError("%s: parameter 'pad' %s must be smaller than the kernel %s"
                                  % (self.name, render(self.pad), render(self.kernel)))
        if self.pool_type == "lp" and self.p_value < 1:
            raise ConfigError("%s: p_value must be >= 1, got %d" % (self.name, self.p_value))

    def geometry(self, shape):
        """(kernel, stride, pad_lo, pad_hi, pad counted as padding on the high side, out sizes)."""
        rank = len(shape) - 2
        if self.global_pool:
            zeros = (0,) * rank
            return tuple(shape[2:]), (1,) * rank, zeros, zeros, zeros, (1,) * rank
        kernel, stride, pad = self.kernel, self.stride, self.pad
        lo, hi, counted, out = [], [], [], []
        for n, k, s, p in zip(shape[2:], kernel, stride, pad):
            if self.pooling_convention == "same":
                o = _ceil_div(n, s) if n else 0
                total = max((o - 1) * s + k - n, 0)
                lo.append(total // 2)
                hi.append(total - total // 2)
                counted.append(total - total // 2)
            else:
                if not n:
                    o = 0
                elif self.pooling_convention == "full":
                    o = _ceil_div(n + 2 * p - k, s) + 1
                else:
                    o = (n + 2 * p - k) // s + 1
                lo.append(p)
                hi.append(max(p, (o - 1) * s + k - n - p))
                counted.append(p)
            out.append(o)
        return tuple(kernel), tuple(stride), tuple(lo), tuple(hi), tuple(counted), tuple(out)

    def prepare(self, xp, x):
        """(padded input, refresh callable, views per kernel offset, window counts or None)."""
        kernel, stride, lo, hi, counted, out = self.geometry(x.shape)
        fill = float("-inf") if self.pool_type == "max" else 0.0
        buffer = None
        if any(lo) or any(hi):
            buffer = xp.full(padded_shape(x.shape, lo, hi), fill, dtype=x.dtype)
        padded, refresh = padding(xp, x, buffer, lo, hi)
        views = [view for _, view in windows(padded, kernel, stride, (1,) * len(kernel), out)]
        return padded, refresh, views, self.counts(x.shape, kernel, stride, lo, hi, counted, out)

    def counts(self, shape, kernel, stride, lo, hi, counted, out):
        """Elements each average divides by (numpy, (1, 1, *out)), or None for the whole kernel area."""
        if self.pool_type != "avg":
            return None
        mask = np.zeros((1, 1) + padded_shape(shape, lo, hi)[2:])
        if self.count_include_pad:
            region = tuple(slice(0, low + n + c) for low, n, c in zip(lo, shape[2:], counted))
        else:
            region = tuple(slice(low, low + n) for low, n in zip(lo, shape[2:]))
        mask[(0, 0) + region] = 1.0
        total = sum(view for _, view in windows(mask, kernel, stride, (1,) * len(kernel), out))
        area = float(np.prod(kernel))
        return None if np.all(total == area) else np.maximum(total, 1.0)


@register
class Pooling(_PoolGeometry, Op):
    """max / avg / sum / lp over each window of NCW, NCHW or NCDHW data; global_pool pools every
    spatial position. avg divides by the kernel area (count_include_pad) or by the data elements in
    the window; lp gives (sum |x|^p)^(1/p)."""
    name, hint, aliases = "Pooling", "pooling", ("Pooling_v1",)
    spec = dict(_POOL_SPEC)

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None], []
        rank = len(data) - 2
        if rank not in (1, 2, 3) or (not self.global_pool and rank != len(self.kernel)):
            raise self.shape_error("data '%s' must have %s axes (N, C, spatial), got shape %s", self.input_name(0),
                                   "3 to 5" if self.global_pool else 2 + len(self.kernel), data)
        kernel, _, lo, hi, _, out = self.geometry(data)
        if any(n and k > n + a + b for n, k, a, b in zip(data[2:], kernel, lo, hi)):
            raise self.shape_error("kernel %s is larger than data '%s' of shape %s padded by %s",
                                   render(kernel), self.input_name(0), data, render(lo))
        return in_shapes, [tuple(data[:2]) + out], []

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, out, kind = rt.xp, outs[0], self.pool_type
        _, refresh, views, counts = self.prepare(xp, ins[0])
        counts = None if counts is None else xp.asarray(counts, dtype=out.dtype)
        area = float(len(views))                 # the kernel's area: one view per kernel offset
        p = self.p_value

        def run():
            refresh()
            if kind == "max":
                xp.copyto(out, views[0])
                for view in views[1:]:
                    xp.maximum(out, view, out=out)
                return
            if kind == "lp":
                out.fill(0)
                for view in views:
                    xp.add(out, xp.abs(view) ** p, out=out)
                xp.power(out, 1.0 / p, out=out)
                return
            xp.copyto(out, views[0])
            for view in views[1:]:
                xp.add(out, view, out=out)
            if kind == "avg":
                if counts is None:
                    xp.multiply(out, 1.0 / area, out=out)
                else:
                    xp.divide(out, counts, out=out)
        return run

    def gradient(self, node, out_grads):
        inputs = [out_grads[0], node.inputs[0]] + ([(node, 0)] if self.pool_type in ("max", "lp") else [])
        return [apply(PoolingGrad, inputs, grad_name(node, "data"), **self.params)]


@register
class PoolingGrad(_PoolGeometry, BackwardOp):
    """d data of Pooling from (dy, data[, output]): avg spreads dy / count over each window, sum
    spreads dy, lp sends dy * (|x| / y)^(p-1) * sign(x), max sends dy to the window's arg-max (the
    first maximal element in row-major window order when there are ties)."""
    name, hint = "_backward_Pooling", "_backward_pooling"
    spec = dict(_POOL_SPEC)

    def setup(self):
        _PoolGeometry.setup(self)
        self.num_inputs = 3 if self.pool_type in ("max", "lp") else 2

    def output_shapes(self, in_shapes):
        return [in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, dy, out, kind = rt.xp, ins[0], outs[0], self.pool_type
        kernel, stride, lo, hi, _, out_sizes = self.geometry(out.shape)
        padded = any(lo) or any(hi)
        target = xp.zeros(padded_shape(out.shape, lo, hi), dtype=out.dtype) if padded else out
        targets = [view for _, view in windows(target, kernel, stride, (1,) * len(kernel), out_sizes)]
        inner = interior(target, out.shape, lo) if padded else None
        part = xp.zeros(dy.shape, dtype=dy.dtype)
        _, refresh, sources, counts = self.prepare(xp, ins[1])
        counts = None if counts is None else xp.asarray(counts, dtype=out.dtype)
        area = float(len(targets))
        hit, taken = xp.zeros(dy.shape, dtype=bool), xp.zeros(dy.shape, dtype=bool)
        p = self.p_value

        def run():
            target.fill(0)
            if kind in ("avg", "sum"):
                if kind == "sum":
                    xp.copyto(part, dy)
                elif counts is None:
                    xp.divide(dy, area, out=part)
                else:
                    xp.divide(dy, counts, out=part)
                for view in targets:
                    view += part
            elif kind == "lp":
                refresh()
                y = ins[2]
                scale = xp.where(y > 0, dy * xp.power(xp.where(y > 0, y, 1), 1 - p), 0)
                for view, source in zip(targets, sources):
                    view += scale * xp.abs(source) ** (p - 1) * xp.sign(source)
            else:
                refresh()
                taken.fill(False)
                for view, source in zip(targets, sources):
                    xp.equal(source, ins[2], out=hit)
                    xp.greater(hit, taken, out=hit)        # maximal here and at no earlier offset
                    xp.logical_or(taken, hit, out=taken)
                    xp.multiply(dy, hit, out=part)
                    view += part
            if inner is not None:
                xp.copyto(out, inner)
        return run

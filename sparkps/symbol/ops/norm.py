"""Dropout and BatchNorm: ops whose forward differs between training and inference."""
from ... import backend
from ...errors import ConfigError
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import choice, to_bool, to_float, to_shape
from .elemwise import Mul


@register
class Dropout(Op):
    """Training (or always, with mode='always'): zero each element with probability p and scale the rest by
    1/(1-p); the mask is a hidden second output the gradient reuses. ``axes`` share one draw along those axes
    (variational dropout). Inference in mode 'training': identity. p=1 gives zeros (MXNet 1.9.1: NaN, from
    0 * 1/(1-p); docs/mxnet.md says why sparkps differs). ``cudnn_off`` is accepted and changes nothing."""
    name, hint = "Dropout", "dropout"
    spec = {"p": (to_float, 0.5), "mode": (choice("training", "always"), "training"), "axes": (to_shape, ()),
            "cudnn_off": (to_bool, False)}
    num_outputs, num_visible = 2, 1
    output_names = ("output", "mask")

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is not None and any(not -len(data) <= a < len(data) for a in self.axes):
            raise self.shape_error("axes %s out of range for data shape %s", self.axes, data)
        return in_shapes, [data, data], []

    def forward(self, rt, ins, outs, aux):
        xp, (out, mask) = rt.xp, outs
        if (not rt.is_train and self.mode == "training") or self.p == 0:
            xp.copyto(out, ins[0])
            mask.fill(1)
            return
        if self.p >= 1:                                # everything dropped: zeros, not MXNet's 0 * inf = NaN
            mask.fill(0)
            out.fill(0)
            return
        draw = mask
        if self.axes:
            axes = {a % mask.ndim for a in self.axes}
            draw = xp.empty(tuple(1 if i in axes else n for i, n in enumerate(mask.shape)), mask.dtype)
        backend.uniform_into(rt.rng, draw)
        xp.greater_equal(draw, self.p, out=draw)      # True/False as 1/0 in the float mask
        xp.multiply(draw, 1.0 / (1.0 - self.p), out=draw)
        if draw is not mask:
            xp.copyto(mask, xp.broadcast_to(draw, mask.shape))
        xp.multiply(ins[0], mask, out=out)

    def gradient(self, node, out_grads):
        return [apply(Mul, [out_grads[0], (node, 1)], grad_name(node, "data"))]


@register
class BatchNorm(Op):
    """Normalise over every axis but ``axis`` (1): batch statistics in training (moving averages
    updated with ``momentum``), moving statistics at inference or with use_global_stats.
    fix_gamma=True (MXNet's default) uses gamma = 1 and gives it no gradient."""
    name, hint = "BatchNorm", "batchnorm"
    spec = {"eps": (to_float, 1e-3), "momentum": (to_float, 0.9), "fix_gamma": (to_bool, True),
            "use_global_stats": (to_bool, False), "axis": (int, 1), "cudnn_off": (to_bool, False),
            "output_mean_var": (to_bool, False), "min_calib_range": (to_float, None),
            "max_calib_range": (to_float, None)}
    num_outputs = 3
    output_names = ("output", "mean", "var")

    @property
    def num_visible(self):
        """output alone, or output, mean and var with output_mean_var (as MXNet)."""
        return 3 if self.output_mean_var else 1

    def arguments(self):
        return ["data", "gamma", "beta"]

    def aux_names(self):
        return ["moving_mean", "moving_var"]

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None] * 3, [None, None]
        if not -len(data) <= self.axis < len(data):
            raise self.shape_error("axis %d out of range for data shape %s", self.axis, data)
        channel = (data[self.axis],)
        return [data, channel, channel], [data, channel, channel], [channel, channel]

    def forward(self, rt, ins, outs, aux):
        xp, (x, gamma, beta), (out, mean, saved_var) = rt.xp, ins, outs
        shape = _channel_shape(x, self.axis)
        axes = _reduce_axes(x, self.axis)
        if rt.is_train and not self.use_global_stats:
            xp.mean(x, axis=axes, out=mean)
            centered = x - mean.reshape(shape)
            var = xp.mean(centered * centered, axis=axes)
            aux[0] *= self.momentum
            aux[0] += (1 - self.momentum) * mean
            aux[1] *= self.momentum
            aux[1] += (1 - self.momentum) * var
        else:
            xp.copyto(mean, aux[0])
            var = aux[1]
        xp.copyto(saved_var, var)
        invstd = _invstd(xp, var, self.eps)
        xp.subtract(x, mean.reshape(shape), out=out)
        scale = invstd if self.fix_gamma else invstd * gamma
        xp.multiply(out, scale.reshape(shape), out=out)
        xp.add(out, beta.reshape(shape), out=out)

    def gradient(self, node, out_grads):
        backward = apply(BatchNormGrad, [out_grads[0], node.inputs[0], node.inputs[1], (node, 1), (node, 2)],
                         grad_name(node, "all"), **self.params)
        grad_node = backward[0]
        return [(grad_node, 0), (grad_node, 1), (grad_node, 2)]


@register
class BatchNormV1(BatchNorm):
    """MXNet's older BatchNorm (files before 0.11 and scripts naming it): the same normalisation over axis 1,
    with the parameters it had (eps, momentum, fix_gamma, use_global_stats, output_mean_var)."""
    name, hint = "BatchNorm_v1", "batchnorm_v1"
    spec = {k: BatchNorm.spec[k] for k in ("eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var")}
    axis, cudnn_off = 1, False

    def gradient(self, node, out_grads):
        backward = apply(BatchNormGrad, [out_grads[0], node.inputs[0], node.inputs[1], (node, 1), (node, 2)],
                         grad_name(node, "all"), axis=1, **self.params)
        return [(backward[0], 0), (backward[0], 1), (backward[0], 2)]


def _invstd(xp, var, eps):
    """1 / sqrt(var + eps), per channel."""
    return xp.reciprocal(xp.sqrt(var + eps))


def _channel_shape(x, axis):
    axis %= x.ndim
    return tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))


def _reduce_axes(x, axis):
    axis %= x.ndim
    return tuple(i for i in range(x.ndim) if i != axis)


@register
class BatchNormGrad(BackwardOp):
    """d data, d gamma, d beta from (dy, data, gamma, saved mean, saved variance)."""
    name, hint = "_backward_BatchNorm", "_backward_batchnorm"
    spec = BatchNorm.spec
    num_inputs, num_outputs = 5, 3
    output_names = ("data", "gamma", "beta")

    def output_shapes(self, in_shapes):
        return [in_shapes[1], in_shapes[2], in_shapes[2]]

    def forward(self, rt, ins, outs, aux):
        xp, (dy, x, gamma, mean, var), (dx, dgamma, dbeta) = rt.xp, ins, outs
        invstd = _invstd(xp, var, self.eps)
        shape, axes = _channel_shape(x, self.axis), _reduce_axes(x, self.axis)
        count = x.size // x.shape[self.axis]
        xhat = (x - mean.reshape(shape)) * invstd.reshape(shape)
        xp.sum(dy, axis=axes, out=dbeta)
        xp.sum(dy * xhat, axis=axes, out=dgamma)
        g = invstd if self.fix_gamma else invstd * gamma
        if rt.is_train and not self.use_global_stats:
            inner = dy - (dbeta / count).reshape(shape) - xhat * (dgamma / count).reshape(shape)
            xp.multiply(inner, g.reshape(shape), out=dx)
        else:
            xp.multiply(dy, g.reshape(shape), out=dx)
        if self.fix_gamma:
            dgamma.fill(0)


def _channel_window_sum(xp, x, nsize):
    """Sum over a window of ``nsize`` channels centred on each channel (axis 1), zero beyond the ends."""
    half = nsize // 2
    total = xp.zeros_like(x)
    channels = x.shape[1]
    for shift in range(-half, half + 1):
        lo, hi = max(0, -shift), min(channels, channels - shift)
        if lo < hi:
            total[:, lo:hi] += x[:, lo + shift:hi + shift]
    return total


@register
class LRN(Op):
    """Local response normalisation across channels: x / (knorm + alpha/nsize * sum of x^2 over
    ``nsize`` neighbouring channels)^beta, as MXNet's LRN."""
    name, hint = "LRN", "lrn"
    spec = {"alpha": (to_float, 1e-4), "beta": (to_float, 0.75), "knorm": (to_float, 2.0),
            "nsize": (int, None)}

    def setup(self):
        if self.nsize is None or self.nsize < 1:
            raise ConfigError("LRN needs the parameter 'nsize' (a positive window size)")

    def norm(self, xp, x):
        return self.knorm + (self.alpha / self.nsize) * _channel_window_sum(xp, x * x, self.nsize)

    def forward(self, rt, ins, outs, aux):
        xp, x = rt.xp, ins[0]
        xp.multiply(x, self.norm(xp, x) ** -self.beta, out=outs[0])

    def gradient(self, node, out_grads):
        return [apply(LRNGrad, [out_grads[0], node.inputs[0]], grad_name(node, "data"), **self.params)]


@register
class LRNGrad(BackwardOp):
    """dy * N^-beta - 2 alpha beta / nsize * x * window_sum(dy * x * N^(-beta-1)) (inputs dy, x)."""
    name, hint = "_backward_LRN", "_backward_lrn"
    spec = LRN.spec
    num_inputs = 2
    setup, norm = LRN.setup, LRN.norm

    def forward(self, rt, ins, outs, aux):
        xp, (dy, x) = rt.xp, ins
        n = self.norm(xp, x)
        spread = _channel_window_sum(xp, dy * x * n ** (-self.beta - 1), self.nsize)
        xp.subtract(dy * n ** -self.beta, (2 * self.alpha * self.beta / self.nsize) * x * spread, out=outs[0])

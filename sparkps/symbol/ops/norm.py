"""Dropout and BatchNorm: ops whose forward differs between training and inference."""
from ... import backend
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import to_bool, to_float
from .elemwise import Mul


@register
class Dropout(Op):
    """Training: zero each element with probability p and scale the rest by 1/(1-p) (the mask is a
    hidden second output the gradient reuses). Inference: identity."""
    name, hint = "Dropout", "dropout"
    spec = {"p": (to_float, 0.5)}
    num_outputs, num_visible = 2, 1
    output_names = ("output", "mask")

    def infer_shape(self, in_shapes):
        return in_shapes, [in_shapes[0], in_shapes[0]], []

    def forward(self, rt, ins, outs, aux):
        xp, (out, mask) = rt.xp, outs
        if not rt.is_train or self.p == 0:
            xp.copyto(out, ins[0])
            mask.fill(1)
            return
        if self.p >= 1:                                # everything dropped (MXNet gives zeros)
            mask.fill(0)
            out.fill(0)
            return
        backend.uniform_into(rt.rng, mask)
        xp.greater_equal(mask, self.p, out=mask)      # True/False as 1/0 in the float mask
        xp.multiply(mask, 1.0 / (1.0 - self.p), out=mask)
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
            "use_global_stats": (to_bool, False), "axis": (int, 1), "cudnn_off": (to_bool, False)}
    num_outputs, num_visible = 3, 1
    output_names = ("output", "mean", "invstd")

    def arguments(self):
        return ["data", "gamma", "beta"]

    def aux_names(self):
        return ["moving_mean", "moving_var"]

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is None:
            return in_shapes, [None, None, None], [None, None]
        if not -len(data) <= self.axis < len(data):
            raise self.shape_error("axis %d out of range for data shape %s", self.axis, data)
        channel = (data[self.axis],)
        return [data, channel, channel], [data, channel, channel], [channel, channel]

    def forward(self, rt, ins, outs, aux):
        xp, (x, gamma, beta), (out, mean, invstd) = rt.xp, ins, outs
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
        xp.add(var, self.eps, out=invstd)
        xp.sqrt(invstd, out=invstd)
        xp.reciprocal(invstd, out=invstd)
        xp.subtract(x, mean.reshape(shape), out=out)
        scale = invstd if self.fix_gamma else invstd * gamma
        xp.multiply(out, scale.reshape(shape), out=out)
        xp.add(out, beta.reshape(shape), out=out)

    def gradient(self, node, out_grads):
        backward = apply(BatchNormGrad, [out_grads[0], node.inputs[0], node.inputs[1], (node, 1), (node, 2)],
                         grad_name(node, "all"), **self.params)
        grad_node = backward[0]
        return [(grad_node, 0), (grad_node, 1), (grad_node, 2)]


def _channel_shape(x, axis):
    axis %= x.ndim
    return tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))


def _reduce_axes(x, axis):
    axis %= x.ndim
    return tuple(i for i in range(x.ndim) if i != axis)


@register
class BatchNormGrad(BackwardOp):
    """d data, d gamma, d beta from (dy, data, gamma, saved mean, saved 1/std)."""
    name, hint = "_backward_BatchNorm", "_backward_batchnorm"
    spec = BatchNorm.spec
    num_inputs, num_outputs = 5, 3
    output_names = ("data", "gamma", "beta")

    def output_shapes(self, in_shapes):
        return [in_shapes[1], in_shapes[2], in_shapes[2]]

    def forward(self, rt, ins, outs, aux):
        xp, (dy, x, gamma, mean, invstd), (dx, dgamma, dbeta) = rt.xp, ins, outs
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

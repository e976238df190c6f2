"""Softmax as a layer (not a loss head): ``softmax``, ``log_softmax`` over an axis (with an optional
temperature) and the older ``SoftmaxActivation`` (per instance or per channel)."""
from ...errors import ConfigError
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import choice, to_axis, to_bool, to_dtype, to_int


def softmax_into(xp, x, axis, out, log=False):
    """softmax (or log-softmax) of ``x`` along ``axis`` written into ``out`` (may alias x)."""
    xp.subtract(x, x.max(axis=axis, keepdims=True), out=out)
    if log:
        xp.subtract(out, xp.log(xp.exp(out).sum(axis=axis, keepdims=True)), out=out)
        return
    xp.exp(out, out=out)
    xp.divide(out, out.sum(axis=axis, keepdims=True), out=out)


class _Softmax(Op):
    log = False

    def setup(self):
        if self.use_length:
            raise ConfigError("%s: use_length=True (a length input) is not supported yet" % self.name)

    def infer_type(self, in_types, out_types):
        """The output has ``dtype`` when given (the data keeps its own type), else the data's type."""
        if self.dtype is None:
            return Op.infer_type(self, in_types, out_types)
        return in_types, [self.dtype], []

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        if data is not None and not -len(data) <= self.axis < len(data):
            raise self.shape_error("axis %d out of range for data '%s' %s", self.axis, self.input_name(0), data)
        return in_shapes, [data], []

    def forward(self, rt, ins, outs, aux):
        x = ins[0] if self.temperature in (None, 1.0) else ins[0] / self.temperature
        softmax_into(rt.xp, x, self.axis, outs[0], self.log)

    def gradient(self, node, out_grads):
        return [apply(SoftmaxGrad, [out_grads[0], (node, 0)], grad_name(node, "data"), axis=self.axis,
                      temperature=self.temperature, log=int(self.log))]


_SPEC = {"axis": (to_int, -1), "temperature": (to_axis, None), "dtype": (to_dtype, None),
         "use_length": (to_bool, False)}


@register
class Softmax(_Softmax):
    """``softmax(data, axis=-1, temperature=None)``: exp(x/T) normalised along ``axis``."""
    name, hint = "softmax", "softmax"
    spec = dict(_SPEC)


@register
class LogSoftmax(_Softmax):
    """``log_softmax(data, axis=-1, temperature=None)``: the log of softmax, computed stably."""
    name, hint = "log_softmax", "log_softmax"
    spec = dict(_SPEC)
    log = True


@register
class SoftmaxGrad(BackwardOp):
    """softmax: y * (dy - sum(dy * y)) / T; log_softmax: (dy - exp(y) * sum(dy)) / T (inputs dy, y)."""
    name, hint = "_backward_softmax", "_backward_softmax"
    spec = {"axis": (to_int, -1), "temperature": (to_axis, None), "log": (to_int, 0)}
    num_inputs = 2

    def forward(self, rt, ins, outs, aux):
        xp, (dy, y), out = rt.xp, ins, outs[0]
        if self.log:
            xp.subtract(dy, xp.exp(y) * dy.sum(axis=self.axis, keepdims=True), out=out)
        else:
            xp.multiply(y, dy - (dy * y).sum(axis=self.axis, keepdims=True), out=out)
        if self.temperature not in (None, 1.0):
            xp.divide(out, self.temperature, out=out)


@register
class SoftmaxActivation(Op):
    """MXNet's older softmax layer: over everything but the batch axis ('instance') or over axis 1
    at each position ('channel')."""
    name, hint = "SoftmaxActivation", "softmaxactivation"
    spec = {"mode": (choice("instance", "channel"), "instance")}

    def rows(self, x):
        return x.reshape(x.shape[0], -1) if self.mode == "instance" else x

    def forward(self, rt, ins, outs, aux):
        softmax_into(rt.xp, self.rows(ins[0]), 1, self.rows(outs[0]))

    def gradient(self, node, out_grads):
        return [apply(SoftmaxActivationGrad, [out_grads[0], (node, 0)], grad_name(node, "data"), mode=self.mode)]


@register
class SoftmaxActivationGrad(BackwardOp):
    name, hint = "_backward_SoftmaxActivation", "_backward_softmaxactivation"
    spec = SoftmaxActivation.spec
    num_inputs = 2
    rows = SoftmaxActivation.rows

    def forward(self, rt, ins, outs, aux):
        dy, y, out = self.rows(ins[0]), self.rows(ins[1]), self.rows(outs[0])
        rt.xp.multiply(y, dy - (dy * y).sum(axis=1, keepdims=True), out=out)

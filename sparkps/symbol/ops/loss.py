"""Loss heads. Each supplies its own gradient (it ignores the head gradient), as in MXNet:
SoftmaxOutput (softmax - one-hot), LinearRegressionOutput, LogisticRegressionOutput, MakeLoss."""
from functools import partial
from math import prod

import numpy as np

from ... import backend
from ...errors import ConfigError, DataError
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import choice, to_bool, to_float
from .softmax import softmax_into


def check_labels(op, label, classes, rt=None):
    """For the SoftmaxOutput ``op`` (its ``use_ignore``/``ignore_label`` parameters): DataError naming the label
    input when a label is outside [0, classes) (ignored labels aside); labels are cast to integers toward zero, as
    MXNet does. On a gpu context a label fed from the host this pass is checked on its host copy
    (``rt.host_copy``), so the step does not wait for the device."""
    if rt is not None:
        label = rt.host_copy(op, 1, label)
    if label.min() >= 0 and label.max() < classes:
        return
    ignore = op.ignore_label if op.use_ignore else None
    bad = label[(label < 0) | (label >= classes)]
    bad = bad[bad != ignore] if ignore is not None else bad
    if bad.size:
        raise DataError("%s '%s': label '%s' has value %g outside [0, %d)"
                        % (op.name, op.node_name, op.input_name(1), float(bad.ravel()[0]), classes))


class _LabelledHead(Op):
    """A loss head fed (data, label): the label is an input that gets no gradient."""
    is_loss = True
    label_inputs = (1,)

    def arguments(self):
        return ["data", "label"]


@register
class SoftmaxOutput(_LabelledHead):
    """Softmax over the last axis of (batch, classes) data; gradient (softmax - one-hot(label)) *
    grad_scale, divided by the batch size ('batch') or the number of counted labels ('valid'). With
    multi_output (softmax over axis 1 of (batch, classes, *spatial)) 'null' and 'batch' also divide by the
    spatial size, as MXNet's softmax_output-inl.h."""
    name, hint, aliases = "SoftmaxOutput", "softmaxoutput", ("Softmax",)
    spec = {"grad_scale": (to_float, 1.0), "ignore_label": (to_float, -1.0), "use_ignore": (to_bool, False),
            "normalization": (choice("null", "batch", "valid"), "null"),
            "multi_output": (to_bool, False), "preserve_shape": (to_bool, False),
            "smooth_alpha": (to_float, 0.0), "out_grad": (to_bool, False)}

    def setup(self):
        if self.out_grad:
            raise ConfigError("SoftmaxOutput: out_grad=True (scaling by the head gradient) is not supported yet")

    def label_shape(self, data):
        """The shape of class-index labels for ``data`` (probability labels have data's shape)."""
        if self.multi_output:
            return (data[0],) + tuple(data[2:])
        if self.preserve_shape:
            return tuple(data[:-1])
        return (data[0],)

    def infer_shape(self, in_shapes):
        data, label = in_shapes
        if data is not None and len(data) < 2:
            raise self.shape_error("data '%s' must have a batch and a class axis, got %s", self.input_name(0), data)
        if data is not None:
            index = self.label_shape(data)
            if label is None or (label != tuple(data) and prod(label) != prod(index)):
                label = index
        return [data, label], [data], []

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        xp, (x, label), out = rt.xp, ins, outs[0]
        if x.ndim != 2 or label.shape == x.shape or self.multi_output:
            return partial(self.general_forward, rt, x, label, out)
        classes = x.shape[1]
        subtract, exp, divide = xp.subtract, xp.exp, xp.divide

        def run():
            if rt.is_train:
                check_labels(self, label, classes, rt)
            subtract(x, x.max(axis=1, keepdims=True), out=out)
            exp(out, out=out)
            divide(out, out.sum(axis=1, keepdims=True), out=out)
        return run

    def general_forward(self, rt, x, label, out):
        """N-D data: softmax over axis 1 (multi_output), the last axis (preserve_shape), or all but
        the batch axis; probability labels of data's shape are accepted."""
        if rt.is_train and label.shape != x.shape:
            check_labels(self, label, x.shape[1] if self.multi_output else
                         x.shape[-1] if self.preserve_shape else x[0].size, rt)
        if self.multi_output:
            softmax_into(rt.xp, x, 1, out)
        elif self.preserve_shape:
            softmax_into(rt.xp, x, -1, out)
        else:
            softmax_into(rt.xp, x.reshape(x.shape[0], -1), 1, out.reshape(x.shape[0], -1))

    def gradient(self, node, out_grads):
        label = node.inputs[1]
        return [apply(SoftmaxOutputGrad, [(node, 0), label], grad_name(node, "data"), **self.params), None]


@register
class SoftmaxOutputGrad(BackwardOp):
    """Fused (probabilities - one-hot(label)) * scale, one node instead of five; N-D data,
    probability labels and label smoothing take a general path."""
    name, hint = "_backward_SoftmaxOutput", "_backward_softmaxoutput"
    spec = dict(SoftmaxOutput.spec)
    num_inputs = 2

    def general(self, in_shapes):
        prob, label = in_shapes
        return len(prob) != 2 or tuple(label) == tuple(prob) or self.multi_output or self.smooth_alpha > 0

    def scratch_shapes(self, in_shapes, out_shapes):
        return [] if self.general(in_shapes) else [((in_shapes[0][0],), "intp")]

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        if self.general([ins[0].shape, ins[1].shape]):
            return partial(self.general_run, rt.xp, ins[0], ins[1], outs[0])
        aux[0][...] = rt.xp.arange(len(aux[0]))
        return partial(self.run, rt.xp, ins[0], ins[1], outs[0], aux[0])

    def general_run(self, xp, prob, label, out):
        if self.multi_output:
            moved = xp.moveaxis(prob, 1, -1)
        elif self.preserve_shape:
            moved = prob
        else:
            moved = prob.reshape(prob.shape[0], -1)
        classes = moved.shape[-1]
        grad = moved.reshape(-1, classes).copy()
        keep = None
        if label.shape == prob.shape:                  # probability labels
            target = xp.moveaxis(label, 1, -1) if self.multi_output else label.reshape(moved.shape)
            grad -= target.reshape(grad.shape)
            count = grad.shape[0]
        else:
            ids = label.reshape(-1).astype(xp.intp)
            rows = xp.arange(grad.shape[0])
            if self.smooth_alpha > 0:
                off = self.smooth_alpha / (classes - 1)
                grad -= off
                grad[rows, ids] -= 1 - self.smooth_alpha - off
            else:
                grad[rows, ids] -= 1
            if self.use_ignore:
                keep = label.reshape(-1) != self.ignore_label
                grad[~keep] = 0
            count = grad.shape[0] if keep is None else int(keep.sum())
        scale = self.grad_scale
        if self.normalization == "batch":
            scale /= prob.shape[0]
        elif self.normalization == "valid":
            scale /= max(count, 1)
        if self.multi_output and self.normalization != "valid":   # MXNet: also per spatial position
            scale /= prod(prob.shape[2:])
        grad *= scale
        grad = grad.reshape(moved.shape)
        xp.copyto(out, xp.moveaxis(grad, -1, 1) if self.multi_output else grad.reshape(out.shape))

    def run(self, xp, prob, label, out, rows):
        if not self.use_ignore and xp is not np:        # one fused kernel on the device
            scale = self.grad_scale / (len(rows) if self.normalization in ("batch", "valid") else 1)
            backend.subtract_one_hot(out, prob, label, scale)
            return
        classes = label.astype(xp.intp)
        xp.copyto(out, prob)
        if self.use_ignore:
            keep = label != self.ignore_label
            out[rows[keep], classes[keep]] -= 1
            out[~keep] = 0
            count = int(keep.sum())
        else:
            out[rows, classes] -= 1
            count = len(rows)
        scale = self.grad_scale
        if self.normalization == "batch":
            scale /= len(rows)
        elif self.normalization == "valid":
            scale /= max(count, 1)
        if scale != 1.0:
            xp.multiply(out, scale, out=out)


class _Regression(_LabelledHead):
    spec = {"grad_scale": (to_float, 1.0)}

    def infer_shape(self, in_shapes):
        data, label = in_shapes
        if data is not None and (label is None or _same_size(label, data)):
            label = data if label is None else label
        return [data, label], [data], []

    def gradient(self, node, out_grads):
        return [apply(RegressionGrad, [(node, 0), node.inputs[1]], grad_name(node, "data"),
                      grad_scale=self.grad_scale), None]


def _same_size(a, b):
    size = lambda s: 1 if not s else s[0] * size(s[1:])  # noqa: E731
    return size(a) == size(b) and a[0] == b[0]


@register
class LinearRegressionOutput(_Regression):
    """Output = data; gradient (data - label) * grad_scale / outputs-per-sample (MXNet)."""
    name, hint = "LinearRegressionOutput", "linearregressionoutput"

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0])


@register
class LogisticRegressionOutput(_Regression):
    """Output = sigmoid(data); gradient (output - label) * grad_scale / outputs-per-sample."""
    name, hint = "LogisticRegressionOutput", "logisticregressionoutput"

    def forward(self, rt, ins, outs, aux):
        xp, out = rt.xp, outs[0]
        xp.negative(ins[0], out=out)
        xp.exp(out, out=out)
        xp.add(out, 1, out=out)
        xp.reciprocal(out, out=out)


@register
class MAERegressionOutput(_Regression):
    """Output = data; gradient sign(data - label) * grad_scale / outputs-per-sample (MXNet)."""
    name, hint = "MAERegressionOutput", "maeregressionoutput"

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0])

    def gradient(self, node, out_grads):
        return [apply(RegressionGrad, [(node, 0), node.inputs[1]], grad_name(node, "data"),
                      grad_scale=self.grad_scale, absolute=True), None]


@register
class RegressionGrad(BackwardOp):
    name, hint = "_backward_RegressionOutput", "_backward_regression"
    spec = {"grad_scale": (to_float, 1.0), "absolute": (to_bool, False)}
    num_inputs = 2

    def forward(self, rt, ins, outs, aux):
        out, label = outs[0], ins[1]
        rt.xp.subtract(ins[0], label.reshape(out.shape), out=out)
        if self.absolute:
            rt.xp.sign(out, out=out)
        per_sample = out.size // out.shape[0] if out.ndim else 1
        scale = self.grad_scale / per_sample
        if scale != 1.0:
            rt.xp.multiply(out, scale, out=out)


@register
class MakeLoss(Op):
    """Output = data; the gradient is grad_scale (divided per normalization), whatever comes in."""
    name, hint = "MakeLoss", "makeloss"
    spec = {"grad_scale": (to_float, 1.0), "normalization": (choice("null", "batch", "valid"), "null"),
            "valid_thresh": (to_float, 0.0)}
    is_loss = True

    def forward(self, rt, ins, outs, aux):
        rt.xp.copyto(outs[0], ins[0])

    def gradient(self, node, out_grads):
        return [apply(MakeLossGrad, [(node, 0)], grad_name(node, "data"), grad_scale=self.grad_scale,
                      normalization=self.normalization, valid_thresh=self.valid_thresh)]


@register
class MakeLossGrad(BackwardOp):
    name, hint = "_backward_MakeLoss", "_backward_makeloss"
    spec = MakeLoss.spec

    def forward(self, rt, ins, outs, aux):
        out, scale = outs[0], self.grad_scale
        if self.normalization == "batch":
            scale /= out.shape[0]
        elif self.normalization == "valid":
            scale /= max(int((ins[0] > self.valid_thresh).sum()), 1)
        out.fill(scale)

"""Activation (relu, sigmoid, tanh, softrelu) and LeakyReLU, each with a fused gradient node that
reads the forward output (or input) instead of rebuilding the derivative from small ops."""
import math

from ... import backend
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, choice, to_float


@register
class Activation(Op):
    name, hint = "Activation", "activation"
    elementwise = True
    spec = {"act_type": (choice("relu", "sigmoid", "tanh", "softrelu", "softsign"), REQUIRED)}

    def forward(self, rt, ins, outs, aux):
        xp, x, out = rt.xp, ins[0], outs[0]
        kind = self.act_type
        if kind == "relu":
            xp.maximum(x, 0, out=out)
        elif kind == "sigmoid":
            xp.negative(x, out=out)
            xp.exp(out, out=out)
            xp.add(out, 1, out=out)
            xp.reciprocal(out, out=out)
        elif kind == "tanh":
            xp.tanh(x, out=out)
        elif kind == "softrelu":
            xp.logaddexp(x, 0, out=out)
        else:
            xp.abs(x, out=out)
            xp.add(out, 1, out=out)
            xp.divide(x, out, out=out)

    def gradient(self, node, out_grads):
        return [apply(ActivationGrad, [out_grads[0], (node, 0)], grad_name(node, "data"),
                      act_type=self.act_type)]


@register
class ActivationGrad(BackwardOp):
    """d data from dy and the activation's output y: relu 1[y>0], sigmoid y(1-y), tanh 1-y^2,
    softrelu 1-exp(-y), softsign (1-|y|)^2."""
    name, hint = "_backward_Activation", "_backward_activation"
    spec = Activation.spec
    num_inputs = 2

    def scratch_shapes(self, in_shapes, out_shapes):
        return [] if self.act_type == "relu" else [(in_shapes[1], None)]

    def forward(self, rt, ins, outs, aux):
        xp, (dy, y), out = rt.xp, ins, outs[0]
        kind = self.act_type
        if kind == "relu":
            xp.multiply(dy, y > 0, out=out)
            return
        tmp = aux[0]                      # scratch buffer from scratch_shapes
        if kind == "sigmoid":
            xp.subtract(1, y, out=tmp)
            xp.multiply(tmp, y, out=tmp)
        elif kind == "tanh":
            xp.multiply(y, y, out=tmp)
            xp.subtract(1, tmp, out=tmp)
        elif kind == "softrelu":
            xp.negative(y, out=tmp)
            xp.expm1(tmp, out=tmp)
            xp.negative(tmp, out=tmp)
        else:
            xp.abs(y, out=tmp)
            xp.subtract(1, tmp, out=tmp)
            xp.multiply(tmp, tmp, out=tmp)
        xp.multiply(tmp, dy, out=out)


SELU_ALPHA, SELU_LAMBDA = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
GELU_CUBE, GELU_SCALE = 0.044715, math.sqrt(2.0 / math.pi)


def _gelu_parts(xp, x):
    """(tanh(g(x)), g'(x)) of MXNet 1.x's gelu, 0.5 x (1 + tanh(g(x))), g(x) = sqrt(2/pi) (x + 0.044715 x^3)."""
    return xp.tanh(GELU_SCALE * (x + GELU_CUBE * x * x * x)), GELU_SCALE * (1.0 + 3.0 * GELU_CUBE * x * x)


def _gamma_shape(gamma, x):
    """gamma of x's own shape, (C,) spread along axis 1 of x, or a single slope."""
    if gamma.shape == x.shape:
        return gamma
    return gamma.reshape((1, -1) + (1,) * (x.ndim - 2)) if gamma.size > 1 else gamma.reshape(())


@register
class LeakyReLU(Op):
    """x for x > 0, otherwise: slope * x ('leaky'), gamma * x with a learnt gamma per channel
    ('prelu', gamma initialised to 0.25), slope * (exp(x) - 1) ('elu'), SELU's scaled elu ('selu');
    'gelu' is MXNet 1.x's tanh approximation of x * Phi(x) everywhere.  'rrelu' (randomized leaky ReLU)
    multiplies each negative element by its own slope drawn uniformly from [lower_bound, upper_bound) in
    training (the executor's generator; the slopes are a hidden second output the gradient reuses) and by
    the mean slope (lower_bound + upper_bound) / 2 at inference, as MXNet."""
    name, hint = "LeakyReLU", "leakyrelu"
    spec = {"act_type": (choice("leaky", "elu", "prelu", "selu", "gelu", "rrelu"), "leaky"),
            "slope": (to_float, 0.25), "lower_bound": (to_float, 0.125), "upper_bound": (to_float, 0.334)}
    input_attrs = {"gamma": {"__init__": '["Constant", {"value": 0.25}]'}}
    num_visible = 1

    @property
    def num_outputs(self):
        return 2 if self.act_type == "rrelu" else 1

    @property
    def output_names(self):
        return ("output", "mask") if self.act_type == "rrelu" else ("output",)

    @property
    def elementwise(self):
        return self.act_type not in ("prelu", "rrelu")

    def arguments(self):
        return ["data", "gamma"] if self.act_type == "prelu" else ["data"]

    def infer_shape(self, in_shapes):
        if self.act_type == "rrelu":
            return in_shapes, [in_shapes[0]] * 2, []
        if self.act_type != "prelu":
            return in_shapes, [in_shapes[0]], []
        data, gamma = in_shapes
        if data is not None and gamma is None:
            gamma = (data[1],) if len(data) > 1 else (1,)
        return [data, gamma], [data], []

    def forward(self, rt, ins, outs, aux):
        xp, x, out = rt.xp, ins[0], outs[0]
        kind = self.act_type
        if kind == "leaky":
            xp.multiply(x, self.slope, out=out)
            xp.maximum(out, x, out=out) if self.slope <= 1 else xp.minimum(out, x, out=out)
        elif kind == "prelu":
            xp.copyto(out, xp.where(x > 0, x, _gamma_shape(ins[1], x) * x))
        elif kind == "rrelu":
            mask = outs[1]
            if rt.is_train:
                backend.uniform_into(rt.rng, mask)
                mask *= self.upper_bound - self.lower_bound
                mask += self.lower_bound
            else:
                mask.fill((self.lower_bound + self.upper_bound) / 2.0)
            xp.copyto(out, xp.where(x > 0, x, mask * x))
        elif kind == "gelu":
            t, _ = _gelu_parts(xp, x)
            xp.multiply(0.5 * x, 1.0 + t, out=out)
        else:
            alpha, scale = (self.slope, 1.0) if kind == "elu" else (SELU_ALPHA, SELU_LAMBDA)
            xp.minimum(x, 0, out=out)
            xp.expm1(out, out=out)
            xp.multiply(out, alpha, out=out)
            xp.copyto(out, x, where=x > 0)
            if scale != 1.0:
                xp.multiply(out, scale, out=out)

    def gradient(self, node, out_grads):
        inputs = [out_grads[0], node.inputs[0], (node, 0)]
        if self.act_type == "rrelu":
            inputs.append((node, 1))
        if self.act_type == "prelu":
            inputs.append(node.inputs[1])
            return [apply(LeakyReLUGrad, inputs, grad_name(node, side), part=k, **self.params)
                    for k, side in enumerate(("data", "gamma"))]
        return [apply(LeakyReLUGrad, inputs, grad_name(node, "data"), **self.params)]


@register
class LeakyReLUGrad(BackwardOp):
    """d data (part 0) or, for prelu, d gamma (part 1) from (dy, x, y[, gamma])."""
    name, hint = "_backward_LeakyReLU", "_backward_leakyrelu"
    spec = dict(LeakyReLU.spec, part=(int, 0))

    @property
    def num_inputs(self):
        return 4 if self.act_type in ("prelu", "rrelu") else 3

    def output_shapes(self, in_shapes):
        return [in_shapes[3] if self.part == 1 else in_shapes[1]]

    def forward(self, rt, ins, outs, aux):
        xp, (dy, x, y), out = rt.xp, ins[:3], outs[0]
        kind = self.act_type
        positive = x > 0
        if kind == "prelu":
            gamma = ins[3]
            if self.part == 1:
                spread = dy * x * ~positive
                if gamma.shape == x.shape:
                    xp.copyto(out, spread)
                    return
                axes = tuple(a for a in range(x.ndim) if a != 1 or gamma.size == 1)
                xp.copyto(out, spread.sum(axis=axes).reshape(out.shape))
                return
            xp.copyto(out, xp.where(positive, dy, dy * _gamma_shape(gamma, x)))
            return
        if kind == "rrelu":                            # the slopes the forward pass drew
            xp.copyto(out, xp.where(y > 0, dy, dy * ins[3]))
            return
        if kind == "gelu":
            t, slope = _gelu_parts(xp, x)
            xp.multiply(dy, 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * slope, out=out)
            return
        if kind == "leaky":
            xp.multiply(dy, self.slope, out=out)
        elif kind == "elu":
            xp.add(y, self.slope, out=out)
            xp.multiply(out, dy, out=out)
        else:                                          # selu: y + lambda * alpha below zero
            xp.add(y, SELU_LAMBDA * SELU_ALPHA, out=out)
            xp.multiply(out, dy, out=out)
            xp.copyto(out, dy * SELU_LAMBDA, where=positive)
            return
        xp.copyto(out, dy, where=positive)

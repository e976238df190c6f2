"""Activation (relu, sigmoid, tanh, softrelu) and LeakyReLU, each with a fused gradient node that
reads the forward output (or input) instead of rebuilding the derivative from small ops."""
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


@register
class LeakyReLU(Op):
    """x for x > 0, slope * x otherwise (act_type 'leaky'); 'elu': slope * (exp(x) - 1) for x <= 0."""
    name, hint = "LeakyReLU", "leakyrelu"
    spec = {"act_type": (choice("leaky", "elu"), "leaky"), "slope": (to_float, 0.25)}

    def forward(self, rt, ins, outs, aux):
        xp, x, out = rt.xp, ins[0], outs[0]
        if self.act_type == "leaky":
            xp.multiply(x, self.slope, out=out)
            xp.maximum(out, x, out=out) if self.slope <= 1 else xp.minimum(out, x, out=out)
        else:
            xp.minimum(x, 0, out=out)
            xp.expm1(out, out=out)
            xp.multiply(out, self.slope, out=out)
            xp.copyto(out, x, where=x > 0)

    def gradient(self, node, out_grads):
        return [apply(LeakyReLUGrad, [out_grads[0], node.inputs[0], (node, 0)], grad_name(node, "data"),
                      act_type=self.act_type, slope=self.slope)]


@register
class LeakyReLUGrad(BackwardOp):
    name, hint = "_backward_LeakyReLU", "_backward_leakyrelu"
    spec = LeakyReLU.spec
    num_inputs = 3

    def forward(self, rt, ins, outs, aux):
        xp, (dy, x, y), out = rt.xp, ins, outs[0]
        positive = x > 0
        if self.act_type == "leaky":
            xp.multiply(dy, self.slope, out=out)
        else:
            xp.add(y, self.slope, out=out)
            xp.multiply(out, dy, out=out)
        xp.copyto(out, dy, where=positive)

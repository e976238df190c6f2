"""Element-wise math of one input, and of one input with a scalar, as MXNet's unary ops
(``abs``, ``square``, ``sigmoid``, ``clip``, ...) and scalar ops (``_PowerScalar``,
``_MaximumScalar``, ``_greater_scalar``, ...).

Each op is a row of a table: its forward function and its derivative from (x, y); the gradient is
one ``_backward_unary`` node computing dy * derivative. Comparisons, ``sign``, ``round`` and the like
have a zero derivative (no gradient flows, as in MXNet)."""
import numpy as np

from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, to_float


def _sigmoid(xp, x, out):
    xp.negative(x, out=out)
    xp.exp(out, out=out)
    xp.add(out, 1, out=out)
    xp.reciprocal(out, out=out)


def _hard_sigmoid(xp, x, out, op):
    xp.multiply(x, op.alpha, out=out)
    xp.add(out, op.beta, out=out)
    xp.clip(out, 0, 1, out=out)


# name -> (forward(xp, x, out, op), derivative(xp, x, y, op) or None for zero)
UNARY = {
    "abs": (lambda xp, x, out, op: xp.abs(x, out=out), lambda xp, x, y, op: xp.sign(x)),
    "negative": (lambda xp, x, out, op: xp.negative(x, out=out), lambda xp, x, y, op: -xp.ones_like(x)),
    "reciprocal": (lambda xp, x, out, op: xp.reciprocal(x, out=out), lambda xp, x, y, op: -(y * y)),
    "square": (lambda xp, x, out, op: xp.multiply(x, x, out=out), lambda xp, x, y, op: 2 * x),
    "sqrt": (lambda xp, x, out, op: xp.sqrt(x, out=out), lambda xp, x, y, op: 0.5 / y),
    "rsqrt": (lambda xp, x, out, op: xp.divide(1, xp.sqrt(x), out=out), lambda xp, x, y, op: -0.5 * y * y * y),
    "cbrt": (lambda xp, x, out, op: xp.cbrt(x, out=out), lambda xp, x, y, op: 1 / (3 * y * y)),
    "exp": (lambda xp, x, out, op: xp.exp(x, out=out), lambda xp, x, y, op: y),
    "expm1": (lambda xp, x, out, op: xp.expm1(x, out=out), lambda xp, x, y, op: y + 1),
    "log": (lambda xp, x, out, op: xp.log(x, out=out), lambda xp, x, y, op: 1 / x),
    "log1p": (lambda xp, x, out, op: xp.log1p(x, out=out), lambda xp, x, y, op: 1 / (1 + x)),
    "log2": (lambda xp, x, out, op: xp.log2(x, out=out), lambda xp, x, y, op: 1 / (x * np.log(2))),
    "log10": (lambda xp, x, out, op: xp.log10(x, out=out), lambda xp, x, y, op: 1 / (x * np.log(10))),
    "sin": (lambda xp, x, out, op: xp.sin(x, out=out), lambda xp, x, y, op: xp.cos(x)),
    "cos": (lambda xp, x, out, op: xp.cos(x, out=out), lambda xp, x, y, op: -xp.sin(x)),
    "tanh": (lambda xp, x, out, op: xp.tanh(x, out=out), lambda xp, x, y, op: 1 - y * y),
    "sign": (lambda xp, x, out, op: xp.sign(x, out=out), None),
    "round": (lambda xp, x, out, op: xp.copyto(out, xp.where(x >= 0, xp.floor(x + 0.5), xp.ceil(x - 0.5))),
              None),
    "rint": (lambda xp, x, out, op: xp.rint(x, out=out), None),
    "floor": (lambda xp, x, out, op: xp.floor(x, out=out), None),
    "ceil": (lambda xp, x, out, op: xp.ceil(x, out=out), None),
    "trunc": (lambda xp, x, out, op: xp.trunc(x, out=out), None),
    "fix": (lambda xp, x, out, op: xp.trunc(x, out=out), None),
    "relu": (lambda xp, x, out, op: xp.maximum(x, 0, out=out), lambda xp, x, y, op: (x > 0).astype(x.dtype)),
    "sigmoid": (lambda xp, x, out, op: _sigmoid(xp, x, out), lambda xp, x, y, op: y * (1 - y)),
    "softsign": (lambda xp, x, out, op: xp.divide(x, 1 + xp.abs(x), out=out),
                 lambda xp, x, y, op: 1 / (1 + xp.abs(x)) ** 2),
    "hard_sigmoid": (_hard_sigmoid,
                     lambda xp, x, y, op: op.alpha * ((y > 0) & (y < 1)).astype(x.dtype)),
    "clip": (lambda xp, x, out, op: xp.clip(x, op.a_min, op.a_max, out=out),
             lambda xp, x, y, op: ((x >= op.a_min) & (x <= op.a_max)).astype(x.dtype)),
    "BlockGrad": (lambda xp, x, out, op: xp.copyto(out, x), None),
    # with a scalar
    "_MaximumScalar": (lambda xp, x, out, op: xp.maximum(x, op.scalar, out=out),
                       lambda xp, x, y, op: (x >= op.scalar).astype(x.dtype)),
    "_MinimumScalar": (lambda xp, x, out, op: xp.minimum(x, op.scalar, out=out),
                       lambda xp, x, y, op: (x <= op.scalar).astype(x.dtype)),
    "_PowerScalar": (lambda xp, x, out, op: xp.power(x, op.scalar, out=out),
                     lambda xp, x, y, op: op.scalar * xp.power(x, op.scalar - 1)),
    "_RPowerScalar": (lambda xp, x, out, op: xp.power(op.scalar, x, out=out),
                      lambda xp, x, y, op: y * np.log(op.scalar)),
    "_HypotScalar": (lambda xp, x, out, op: xp.hypot(x, op.scalar, out=out), lambda xp, x, y, op: x / y),
    "_ModScalar": (lambda xp, x, out, op: xp.mod(x, op.scalar, out=out), lambda xp, x, y, op: xp.ones_like(x)),
    "_RModScalar": (lambda xp, x, out, op: xp.mod(op.scalar, x, out=out),
                    lambda xp, x, y, op: -xp.floor(op.scalar / x)),
    "_equal_scalar": (lambda xp, x, out, op: xp.equal(x, op.scalar, out=out, casting="unsafe"), None),
    "_not_equal_scalar": (lambda xp, x, out, op: xp.not_equal(x, op.scalar, out=out, casting="unsafe"), None),
    "_greater_scalar": (lambda xp, x, out, op: xp.greater(x, op.scalar, out=out, casting="unsafe"), None),
    "_greater_equal_scalar": (lambda xp, x, out, op: xp.greater_equal(x, op.scalar, out=out, casting="unsafe"),
                              None),
    "_lesser_scalar": (lambda xp, x, out, op: xp.less(x, op.scalar, out=out, casting="unsafe"), None),
    "_lesser_equal_scalar": (lambda xp, x, out, op: xp.less_equal(x, op.scalar, out=out, casting="unsafe"), None),
}

ALIASES = {"BlockGrad": ("stop_gradient",), "_MaximumScalar": ("_maximum_scalar",),
           "_MinimumScalar": ("_minimum_scalar",), "_PowerScalar": ("_power_scalar",),
           "_RPowerScalar": ("_rpower_scalar",), "_ModScalar": ("_mod_scalar",),
           "_HypotScalar": ("_hypot_scalar",), "_RModScalar": ("_rmod_scalar",),
           "_lesser_scalar": ("_less_scalar",), "_lesser_equal_scalar": ("_less_equal_scalar",)}
SPECS = {"clip": {"a_min": (to_float, REQUIRED), "a_max": (to_float, REQUIRED)},
         "hard_sigmoid": {"alpha": (to_float, 0.2), "beta": (to_float, 0.5)}}
SCALAR_SPEC = {"scalar": (to_float, REQUIRED)}


class _Unary(Op):
    """One op of the UNARY table; ``kind`` is its MXNet name."""
    kind = None
    elementwise = True

    def forward(self, rt, ins, outs, aux):
        UNARY[self.kind][0](rt.xp, ins[0], outs[0], self)

    def gradient(self, node, out_grads):
        if UNARY[self.kind][1] is None:
            return [None]
        return [apply(UnaryGrad, [out_grads[0], node.inputs[0], (node, 0)], grad_name(node, "data"),
                      kind=self.kind, **self.params)]


def _make(kind):
    spec = SCALAR_SPEC if kind.startswith("_") and kind.endswith(("Scalar", "_scalar")) else SPECS.get(kind, {})
    cls = type(kind.strip("_") + "Op", (_Unary,), {
        "name": kind, "hint": kind.lower().strip("_"), "aliases": ALIASES.get(kind, ()), "spec": spec,
        "kind": kind, "__doc__": "MXNet's ``%s`` element-wise." % kind})
    return register(cls)


UNARY_OPS = {kind: _make(kind) for kind in UNARY}


@register
class UnaryGrad(BackwardOp):
    """dy * derivative(x, y) of the unary op ``kind`` (inputs dy, x, y)."""
    name, hint = "_backward_unary", "_backward_unary"
    spec = {"kind": (str, REQUIRED), "scalar": (to_float, 0.0), "a_min": (to_float, 0.0), "a_max": (to_float, 0.0),
            "alpha": (to_float, 0.2), "beta": (to_float, 0.5)}
    num_inputs = 3

    def forward(self, rt, ins, outs, aux):
        dy, x, y = ins
        rt.xp.multiply(dy, UNARY[self.kind][1](rt.xp, x, y, self), out=outs[0])

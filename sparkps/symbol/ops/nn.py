"""FullyConnected and the three nodes of its gradient (data, weight, bias)."""
from functools import partial
from math import prod

from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, to_bool, to_int


def _rows(x, flatten):
    """``x`` as a 2-D matrix: (batch, features) when flattening, else (-1, last axis)."""
    if x.ndim == 2:
        return x
    return x.reshape(x.shape[0], -1) if flatten else x.reshape(-1, x.shape[-1])


@register
class FullyConnected(Op):
    """out = data . weight^T + bias, with weight (num_hidden, in) and data flattened to 2-D as MXNet."""
    name, hint = "FullyConnected", "fullyconnected"
    spec = {"num_hidden": (to_int, REQUIRED), "no_bias": (to_bool, False), "flatten": (to_bool, True)}
    propagates_nonfinite = (0,)     # a NaN/inf in a data row makes that output row non-finite
    partial_shapes = True           # an unknown batch size (0) still gives the weight's shape

    def refine_inputs(self, in_shapes, out_shapes):
        data, out = in_shapes[0], out_shapes[0]
        if data is not None and out is not None and data[0] == 0 and out[0]:
            in_shapes[0] = (out[0],) + tuple(data[1:])
        return in_shapes

    def arguments(self):
        return ["data", "weight"] if self.no_bias else ["data", "weight", "bias"]

    def infer_shape(self, in_shapes):
        data, weight = in_shapes[0], in_shapes[1]
        out = None
        if data is not None:
            if len(data) < 2 and self.flatten:
                raise self.shape_error("data '%s' must have a batch axis, got shape %s", self.input_name(0), data)
            features = prod(data[1:]) if self.flatten else data[-1]
            weight = (self.num_hidden, features)
            out = (data[0], self.num_hidden) if self.flatten else tuple(data[:-1]) + (self.num_hidden,)
        elif weight is not None:
            weight = (self.num_hidden, weight[1]) if len(weight) == 2 else weight
        shapes = [data, weight] + ([] if self.no_bias else [(self.num_hidden,)])
        return shapes, [out], []

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        x, out = _rows(ins[0], self.flatten), _rows(outs[0], False)
        dot, weight_t = rt.xp.matmul, ins[1].T
        if self.no_bias:
            return partial(dot, x, weight_t, out=out)
        add, bias = rt.xp.add, ins[2]

        def run():
            dot(x, weight_t, out=out)
            add(out, bias, out=out)
        return run

    def gradient(self, node, out_grads):
        dy = out_grads[0]
        data, weight = node.inputs[0], node.inputs[1]
        grads = [apply(FCDataGrad, [dy, weight, data], grad_name(node, "data"), flatten=self.flatten),
                 apply(FCWeightGrad, [dy, data], grad_name(node, "weight"), flatten=self.flatten)]
        if not self.no_bias:
            grads.append(apply(SumRows, [dy], grad_name(node, "bias")))
        return grads


@register
class FCDataGrad(BackwardOp):
    """d data = dy . weight, shaped like data (its third input, read for the shape only)."""
    name, hint = "_backward_FullyConnected_data", "_backward_fc_data"
    spec = {"flatten": (to_bool, True)}
    num_inputs = 3

    def output_shapes(self, in_shapes):
        return [in_shapes[2]]

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        return partial(rt.xp.matmul, _rows(ins[0], False), ins[1], out=_rows(outs[0], self.flatten))


@register
class FCWeightGrad(BackwardOp):
    """d weight = dy^T . data (data flattened as in the forward pass)."""
    name, hint = "_backward_FullyConnected_weight", "_backward_fc_weight"
    spec = {"flatten": (to_bool, True)}
    num_inputs = 2

    def output_shapes(self, in_shapes):
        dy, data = in_shapes
        if dy is None or data is None:
            return [None]
        return [(dy[-1], prod(data[1:]) if self.flatten else data[-1])]

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        return partial(rt.xp.matmul, _rows(ins[0], False).T, _rows(ins[1], self.flatten), out=outs[0])


@register
class SumRows(BackwardOp):
    """Sum over every axis but the last (a bias gradient), as ones . dy: one BLAS gemv is several
    times faster than a numpy reduction over the batch axis."""
    name, hint = "_sum_rows", "_sum_rows"

    def output_shapes(self, in_shapes):
        return [None if in_shapes[0] is None else (in_shapes[0][-1],)]

    def scratch_shapes(self, in_shapes, out_shapes):
        return [((prod(in_shapes[0][:-1]),), None)]

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        ones = aux[0]
        ones.fill(1)
        return partial(rt.xp.dot, ones, _rows(ins[0], False), out=outs[0])

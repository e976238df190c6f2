"""Fused CTR ops: the hot path of a CTR step as a few compiled kernels instead of many small array ops.

* ``contrib.FusedEmbedding``: ``contrib.HashEmbedding`` (same parameters, shapes and meaning; a sparse table read,
  see ``ops/embedding.py``) as one kernel that checks the positions, gathers the rows and pools them; its weight
  gradient (``_backward_FusedEmbedding``) is one kernel that sums each row's output gradients (the per-id gradient
  sum the kvstore receives as a row-sparse gradient). ``pooling='fields'`` reads one id of each field of a
  (batch, fields) input and sums their rows (the values of ``'sum'``; an ONNX export takes each field's row as its
  own input, as for ``'none'``): a whole first-order term (batch, 1) in one node.
* ``contrib.FMInteraction``: the pair-sum cross of (batch, fields, factors) rows, ``sum_{i<j} e_i * e_j`` by
  ``((sum e)^2 - sum e^2) / 2`` in one pass: FM's second-order term (batch, 1) (``BiInnerSumCross``) or, with
  ``keep_factors=True``, NFM's bi-interaction pooling (batch, factors) (``BiInteractionCross``); its gradient
  (``_backward_FMInteraction``) is one pass too.

Each op keeps an explicit backward node, so the gradient graph stays a graph (``net.backward_graph()``). The
kernels are chosen by the bound context: numba loops on cpu (``fused_kernels``, imported on first bind), CuPy
kernels on gpu (``fused_cuda``). The CTR zoo builds its networks from these ops (``sparkps.nets.build(...,
fused=True)``, the default); the unfused ops stay for other graphs and for the parity tests. Nothing blocks
beyond the computation.
"""
from ...errors import DataError
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import choice, to_bool
from .cross import _field_shape
from .embedding import HashEmbedding, _local_index

POOLINGS = ("none", "sum", "mean", "fields")
_CODES = {"none": 0, "sum": 1, "mean": 2, "fields": 1}


def _kernels(rt):
    """(module, takes_xp): the numba kernels on a cpu context, the CuPy ones (called with ``xp``) on a gpu one."""
    if rt.ctx is not None and rt.ctx.device_type == "gpu":
        from . import fused_cuda
        return fused_cuda, True
    from . import fused_kernels
    return fused_kernels, False


def _positions(op, ids):
    """``ids`` as the (rows, width) matrix the kernels read: the pooled axis last, or one row for pooling 'none'."""
    if op.pooling == "none":
        return ids.reshape(1, -1)
    return ids.reshape(-1, ids.shape[-1])


def _rows_view(op, out):
    return out.reshape(-1, op.output_dim)


@register
class FusedEmbedding(HashEmbedding):
    """``contrib.HashEmbedding`` in one kernel (see the module docstring); ``data`` holds row positions into
    ``weight`` (-1 = absent) when bound directly, as HashEmbedding's. A fractional, NaN or too large position is a
    DataError naming the op and its input. ``pooling='fields'``: the last axis holds one id of each field, their
    rows summed (as ``'sum'``)."""
    name, hint = "_contrib_FusedEmbedding", "fusedembedding"
    aliases = ("FusedEmbedding",)
    spec = dict(HashEmbedding.spec, pooling=(choice(*POOLINGS), "none"))

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        kernels, on_device = _kernels(rt)
        ids, weight = ins
        pos, out, code = _positions(self, ids), _rows_view(self, outs[0]), _CODES[self.pooling]
        if on_device:
            def run_device():
                _local_index(self, rt, ids, weight.shape[0])      # checked on the host copy the pass was fed
                kernels.gather_rows(rt.xp, pos, weight, out, code)
            return run_device
        gather = kernels.gather_rows

        def run():
            bad = gather(pos, weight, out, code)
            if bad >= 0:
                raise DataError(f"{self.name} '{self.node_name}': input '{self.input_name(0)}' must hold integer "
                                f"row positions below {weight.shape[0]} (-1 for absent), got "
                                f"{float(pos.reshape(-1)[bad])!r}")
        return run

    def gradient(self, node, out_grads):
        data, weight = node.inputs
        return [None, apply(FusedEmbeddingGrad, [data, out_grads[0], weight], grad_name(node, "weight"),
                            pooling=self.pooling)]


@register
class FusedEmbeddingGrad(BackwardOp):
    """The weight gradient of a FusedEmbedding, shaped like its bound weight (the third input, read for the shape
    only): each present position's output gradient summed into its row, in one kernel."""
    name, hint = "_backward_FusedEmbedding", "_backward_fusedembedding"
    spec = {"pooling": (choice(*POOLINGS), "none")}
    num_inputs = 3

    def output_shapes(self, in_shapes):
        return [in_shapes[2]]

    def infer_type(self, in_types, out_types):
        return in_types, [in_types[1]], []             # the output gradient's type, whatever the positions'

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        kernels, on_device = _kernels(rt)
        ids, dy, _ = ins
        grad = outs[0]
        pos, rows, code = _positions(self, ids), dy.reshape(-1, grad.shape[1]), _CODES[self.pooling]
        if on_device:
            xp = rt.xp
            return lambda: kernels.scatter_rows(xp, pos, rows, grad, code)
        scatter = kernels.scatter_rows
        return lambda: scatter(pos, rows, grad, code)


@register
class FMInteraction(Op):
    """The pair-sum cross of ``data`` (batch, fields, factors) in one kernel: FM's second-order term (batch, 1),
    or NFM's bi-interaction (batch, factors) with ``keep_factors``; the same values as ``BiInnerSumCross`` /
    ``BiInteractionCross``."""
    name, hint = "_contrib_FMInteraction", "fminteraction"
    aliases = ("FMInteraction",)
    spec = {"keep_factors": (to_bool, False)}

    def infer_shape(self, in_shapes):
        data = _field_shape(self, in_shapes[0])
        out = None if data is None else (data[0], data[2] if self.keep_factors else 1)
        return in_shapes, [out], []

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        kernels, on_device = _kernels(rt)
        x, out, keep = ins[0], outs[0], bool(self.keep_factors)
        if on_device:
            xp = rt.xp
            return lambda: kernels.pair_sum_forward(xp, x, out, keep)
        forward = kernels.pair_sum_forward
        return lambda: forward(x, out, keep)

    def gradient(self, node, out_grads):
        return [apply(FMInteractionGrad, [node.inputs[0], out_grads[0]], grad_name(node, "data"),
                      keep_factors=self.keep_factors)]


@register
class FMInteractionGrad(BackwardOp):
    """d e_f = dy * (sum_i e_i - e_f) in one kernel: the gradient of FMInteraction."""
    name, hint = "_backward_FMInteraction", "_backward_fminteraction"
    spec = {"keep_factors": (to_bool, False)}
    num_inputs = 2

    def forward(self, rt, ins, outs, aux):
        self.compile(rt, ins, outs, aux)()

    def compile(self, rt, ins, outs, aux):
        kernels, on_device = _kernels(rt)
        (x, dy), dx, keep = ins, outs[0], bool(self.keep_factors)
        if on_device:
            xp = rt.xp
            return lambda: kernels.pair_sum_backward(xp, x, dy, dx, keep)
        backward = kernels.pair_sum_backward
        return lambda: backward(x, dy, dx, keep)

"""Embeddings: the dense Embedding op and the ops whose weight gradient is row-sparse, and the tables a symbol
reads through them.

Three ops read rows of a table:

* ``Embedding(data, input_dim, output_dim, sparse_grad=True)`` and
  ``contrib.SparseEmbedding``: a bounded table of ``input_dim`` rows, MXNet's names;
* ``contrib.HashEmbedding(data, output_dim, table='user', pooling='sum')``: an unbounded table keyed by 64-bit
  ids, with EmbeddingBag-style pooling (``'sum'`` / ``'mean'`` over the last axis of ``data``, the ids of one
  multi-valued field; a ``padding_id`` marks absent ids).

Bound directly, they behave as a dense embedding over whatever ``weight`` holds. In training
(``sparkps.train.sparse_batch``) ``weight`` is bound to a small batch-local matrix: the worker replaces the
batch's ids by their positions among its unique ids (``-1`` for absent ids), pulls those rows into the matrix,
and the weight gradient the executor computes, summed per local row, is the row-sparse gradient of the unique
ids. 64-bit ids never enter the executor and nothing of size ``input_dim x dim`` is allocated.
"""
import numpy as np

from ... import backend
from ...errors import ConfigError, DataError
from ...rows.config import ATTR as TABLE_OPTIONS_ATTR
from ...rows.config import TableConfig
from ..graph import topo_order
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import REQUIRED, choice, to_bool, to_dtype, to_int


def _optional_int(value):
    """An int, or None from None / 'None' / '' (as written back into JSON)."""
    value = value.strip() if isinstance(value, str) else value
    return None if value in (None, "None", "") else to_int(value)


def local_weight_shape(known, full):
    """The weight shape an embedding accepts: a known (rows, dim) matrix of the right width (a batch-local
    matrix of pulled rows), else ``full``."""
    if known is not None and len(known) == 2 and known[1] == full[1]:
        return tuple(known)
    return full


def _local_index(op, rt, ids, rows):
    """Integer positions from ``ids`` (negative = absent); DataError naming the op and input when an id is
    fractional, NaN or past the ``rows`` of the weight."""
    index = ids.astype(rt.xp.intp)
    ids = rt.host_copy(op, 0, ids)
    xp = backend.get_array_module(ids)
    checked = ids.astype(xp.intp)
    if ids.size and (int(checked.max()) >= rows or not bool(xp.all(checked == ids))):
        raise DataError(f"{op.name} '{op.node_name}': input '{op.input_name(0)}' must hold integer row positions "
                        f"below {rows} (-1 for absent)")
    return index


def _table_type(in_types, out_types, default):
    weight, out = in_types[1], out_types[0]
    return weight if weight is not None else out if out is not None else default


@register
class HashEmbedding(Op):
    """Rows of an unbounded table for ids in ``data``; ``pooling`` 'none' -> data.shape + (output_dim,), 'sum' or
    'mean' -> data.shape[:-1] + (output_dim,) (over the last axis; absent ids count neither in the sum nor in the
    mean; a field with no ids gives zeros). ``table`` names the weight variable; ``padding_id`` is the raw id
    that marks an absent entry. Bound directly, ``data`` holds row positions into ``weight`` (-1 = absent)."""
    name, hint = "_contrib_HashEmbedding", "hashembedding"
    aliases = ("HashEmbedding",)
    spec = {"output_dim": (to_int, REQUIRED), "table": (str, ""), "pooling": (choice("none", "sum", "mean"), "none"),
            "padding_id": (_optional_int, None)}

    def arguments(self):
        return ["data", "weight"]

    def infer_type(self, in_types, out_types):
        """The ids keep their own type; weight and output share the weight's (or the output's) type."""
        dtype = _table_type(in_types, out_types, None)
        return [in_types[0], dtype], [dtype], []

    def infer_shape(self, in_shapes):
        data, weight = in_shapes
        out = None
        if data is not None:
            if self.pooling != "none" and len(data) < 2:
                raise self.shape_error("pooling '%s' needs data '%s' with at least 2 axes (batch, ids), got %s",
                                       self.pooling, self.input_name(0), data)
            rows = 1
            for d in data:
                rows *= d
            weight = local_weight_shape(weight, (rows, self.output_dim))
            out = tuple(data) + (self.output_dim,) if self.pooling == "none" else \
                tuple(data[:-1]) + (self.output_dim,)
        elif weight is not None:
            weight = local_weight_shape(weight, weight[:1] + (self.output_dim,))
        return [data, weight], [out], []

    def forward(self, rt, ins, outs, aux):
        xp, (ids, weight) = rt.xp, ins
        index = _local_index(self, rt, ids, weight.shape[0])
        present = index >= 0
        rows = xp.take(weight, xp.where(present, index, 0).reshape(-1), axis=0)
        rows = rows.reshape(ids.shape + (self.output_dim,)) * present[..., None]
        if self.pooling == "none":
            xp.copyto(outs[0], rows)
            return
        xp.sum(rows, axis=-2, out=outs[0])
        if self.pooling == "mean":
            count = xp.maximum(present.sum(axis=-1), 1)
            xp.divide(outs[0], count[..., None], out=outs[0])

    def gradient(self, node, out_grads):
        data, weight = node.inputs
        return [None, apply(EmbeddingRowsGrad, [data, out_grads[0], weight], grad_name(node, "weight"),
                            pooling=self.pooling)]


@register
class EmbeddingRowsGrad(BackwardOp):
    """The gradient of an embedding's weight, shaped like the weight it was bound with (its third input, read for
    the shape only): each id's output gradient added into its row, absent (negative) ids skipped."""
    name, hint = "_backward_EmbeddingRows", "_backward_embedding_rows"
    spec = {"pooling": (choice("none", "sum", "mean"), "none")}
    num_inputs = 3

    def output_shapes(self, in_shapes):
        return [in_shapes[2]]

    def infer_type(self, in_types, out_types):
        return in_types, [in_types[1]], []             # the output gradient's type, whatever the ids'

    def forward(self, rt, ins, outs, aux):
        xp, (ids, dy, _), out = rt.xp, ins, outs[0]
        out.fill(0)
        index = ids.astype(xp.intp)
        present = index >= 0
        dim = out.shape[1]
        if self.pooling == "none":
            rows = dy.reshape(ids.shape + (dim,))
        else:
            rows = xp.broadcast_to(dy[..., None, :], ids.shape + (dim,))
            if self.pooling == "mean":
                rows = rows / xp.maximum(present.sum(axis=-1), 1)[..., None, None]
        keep = present.reshape(-1)
        if xp is not np:      # absent ids add zero rows into row 0: no boolean mask, so no wait for the device
            rows = rows.reshape(-1, dim) * keep[:, None].astype(rows.dtype)
            backend.scatter_add(out, xp.where(keep, index.reshape(-1), 0), rows)
            return
        index, rows = index.reshape(-1)[keep], rows.reshape(-1, dim)[keep]
        if index.size:
            segment_sum(out, index, rows)


def segment_sum(out, index, rows):
    """out[index[k]] += rows[k], repeated indices summed. Into a batch's own rows (a sparse table's pulled rows, at
    most a few times the batch): one ``np.bincount`` per column of ``out`` (linear in the batch, summed in float64),
    2-40x faster than sorting for the narrow tables of CTR models (widths 1-64 at 13,000 ids over 6,000 rows). Into
    a table much taller than the batch, where a bincount would sweep every row of it each step: a stable sort and
    one ``np.add.reduceat`` over the runs of equal indices."""
    rows = rows.reshape(len(index), -1)
    if out.shape[0] > 4 * len(index):
        order = np.argsort(index, kind="stable")
        ordered = index[order]
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        out[ordered[starts]] += np.add.reduceat(rows[order], starts, axis=0).reshape(len(starts), *out.shape[1:])
        return
    for column in range(rows.shape[1]):
        out[:, column] += np.bincount(index, rows[:, column], out.shape[0]).astype(out.dtype, copy=False)


def row_gradient(node, out_grads):
    """The weight gradient of a sparse ``Embedding`` node: shaped like its bound weight (full or batch-local)."""
    data, weight = node.inputs
    return [None, apply(EmbeddingRowsGrad, [data, out_grads[0], weight], grad_name(node, "weight"))]


def _is_sparse(op):
    return isinstance(op, HashEmbedding) or (op.name in ("Embedding", "_contrib_SparseEmbedding")
                                              and op.params.get("sparse_grad"))


def sparse_tables(symbol):
    """{weight name: TableConfig} for every sparse embedding of ``symbol`` (in graph order): weight variable
    ``name``, row width ``dim``, ``input_dim`` (None when hashed), the data variables holding its ids (``fields``),
    the id meaning 'absent' (``padding_id``, or None) and the options its weight Variable declares (attribute
    ``__table_options__``, see sparkps/rows/config.py). Several ops may read one table (pass them the same
    ``weight`` Variable); they must agree on ``dim`` and ``input_dim``. ConfigError when a table's weight or ids are
    not plain variables, or when its readers disagree."""
    tables = {}
    for node in topo_order(symbol.entries):
        if node.op is None or not _is_sparse(node.op):
            continue
        op = node.op
        (data_node, _), (weight_node, _) = node.inputs
        for what, src in (("ids", data_node), ("weight", weight_node)):
            if src.op is not None:
                raise ConfigError(f"{op.name} '{node.name}': its {what} must be a variable (the table and its ids "
                                  f"are fed by the trainer), got the output of '{src.name}'")
        input_dim = None if isinstance(op, HashEmbedding) else op.input_dim
        padding = op.padding_id if isinstance(op, HashEmbedding) else None
        spec = TableConfig.from_options(weight_node.name, weight_node.attrs.get(TABLE_OPTIONS_ATTR),
                                        dim=op.output_dim, input_dim=input_dim, fields=(data_node.name,),
                                        padding_id=padding)
        known = tables.get(spec.name)
        if known is None:
            tables[spec.name] = spec
            continue
        if (known.dim, known.input_dim, known.padding_id) != (spec.dim, spec.input_dim, spec.padding_id):
            raise ConfigError(f"table '{spec.name}' is read with (output_dim, input_dim, padding_id) "
                              f"{(known.dim, known.input_dim, known.padding_id)} by one op and "
                              f"{(spec.dim, spec.input_dim, spec.padding_id)} by '{node.name}'")
        if data_node.name not in known.fields:
            tables[spec.name] = known.replace(fields=known.fields + (data_node.name,))
    return tables


@register
class Embedding(Op):
    """Rows of weight (input_dim, output_dim) picked by integer ids in data; out = data.shape +
    (output_dim,). Ids outside [0, input_dim) raise DataError naming the data input."""
    name, hint = "Embedding", "embedding"
    spec = {"input_dim": (to_int, REQUIRED), "output_dim": (to_int, REQUIRED), "dtype": (to_dtype, "float32"),
            "sparse_grad": (to_bool, False)}

    def arguments(self):
        return ["data", "weight"]

    partial_shapes = True

    def infer_type(self, in_types, out_types):
        """The ids keep their own type; weight and output share one type: the weight's when known, else the
        output's, else ``dtype`` (MXNet's EmbeddingOpType)."""
        dtype = _table_type(in_types, out_types, self.dtype)
        return [in_types[0], dtype], [dtype], []

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        out = None if data is None else tuple(data) + (self.output_dim,)
        weight = (self.input_dim, self.output_dim)
        if self.sparse_grad:  # may be bound to a batch-local matrix of pulled rows
            weight = local_weight_shape(in_shapes[1], weight)
        return [data, weight], [out], []

    def forward(self, rt, ins, outs, aux):
        xp, (ids, weight) = rt.xp, ins
        index = ids.astype(xp.intp)
        checked = rt.host_copy(self, 0, ids)
        cxp = backend.get_array_module(checked)
        cindex = checked.astype(cxp.intp)
        if ids.size and (int(cindex.min()) < 0 or int(cindex.max()) >= self.input_dim
                         or not bool(cxp.all(cindex == checked))):
            raise DataError("Embedding '%s': input '%s' must hold integer ids in [0, %d)"
                            % (self.node_name, self.input_name(0), self.input_dim))
        xp.take(weight, index.reshape(-1), axis=0, out=outs[0].reshape(-1, self.output_dim))

    def gradient(self, node, out_grads):
        if self.sparse_grad:
            return row_gradient(node, out_grads)
        return [None, apply(EmbeddingGrad, [node.inputs[0], out_grads[0]], grad_name(node, "weight"),
                            input_dim=self.input_dim, output_dim=self.output_dim)]


@register
class EmbeddingGrad(BackwardOp):
    """Dense weight gradient: each id's row of dy added into its row (repeated ids accumulate)."""
    name, hint = "_backward_Embedding", "_backward_embedding"
    spec = {"input_dim": (to_int, REQUIRED), "output_dim": (to_int, REQUIRED)}
    num_inputs = 2

    def output_shapes(self, in_shapes):
        return [(self.input_dim, self.output_dim)]

    def infer_type(self, in_types, out_types):
        return in_types, [in_types[1]], []             # the output gradient's type, whatever the ids'

    def forward(self, rt, ins, outs, aux):
        xp, (ids, dy), out = rt.xp, ins, outs[0]
        out.fill(0)
        index = ids.astype(xp.intp).reshape(-1)
        rows = dy.reshape(-1, self.output_dim)
        backend.scatter_add(out, index, rows)


@register
class SparseEmbedding(Embedding):
    """MXNet's ``contrib.SparseEmbedding``: an Embedding whose weight gradient is always row-sparse."""
    name, hint = "_contrib_SparseEmbedding", "sparseembedding"
    aliases = ("SparseEmbedding",)
    spec = dict(Embedding.spec, sparse_grad=(to_bool, True), deterministic=(to_bool, False))

    def setup(self):
        self.sparse_grad = True
        self.params["sparse_grad"] = True

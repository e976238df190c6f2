"""The walk over a sparkps graph that an ONNX export follows: which variables are parameters, which are the
model's data inputs, where the graph is cut at its table reads, and the shape of every entry.

No ``onnx`` here: the walk decides, ``sparkps.onnx.export`` writes. A CTR network is cut after its table lookups
(``contrib.HashEmbedding``, ``contrib.FusedEmbedding``, ``contrib.SparseEmbedding`` and ``Embedding(sparse_grad=True)``,
see sparkps/symbol/ops/embedding.py and fused.py): the exported graph takes the looked-up rows of each field as
inputs, named ``<table>:<field>`` (``embedding_weight:C1``), and the serving side does the lookup (a FusedEmbedding
that sums the rows of several fields, ``pooling='fields'``, takes each field's row and sums them in the graph).
Blocks on nothing.
"""
from dataclasses import dataclass

import numpy as np

from sparkps.errors import ConfigError
from sparkps.rows.values import RowSparse
from sparkps.symbol.graph import aux_name, topo_order
from sparkps.symbol.ops.embedding import HashEmbedding

TABLE_READS = ("_contrib_HashEmbedding", "_contrib_FusedEmbedding", "_contrib_SparseEmbedding", "Embedding")


def is_table_read(op):
    """Whether op node ``op`` reads rows of a sparse table (where the exported graph is cut)."""
    if op is None or op.name not in TABLE_READS:
        return False
    return op.name != "Embedding" or bool(op.params.get("sparse_grad"))


def layer_of(node_name):
    """The layer a node belongs to: the name prefix sparkps's network builders give every node of one layer
    ('deep' for 'deep_fc1', 'cross1' for 'cross1', 'fc1' for 'fc1_act')."""
    return node_name.split("_", 1)[0] or node_name


@dataclass(frozen=True)
class TableInput:
    """One graph input of a cut table read: the looked-up (pooled) row of ``field`` from ``table``."""
    name: str
    table: str
    field: str
    ids: str            # the sparkps ids variable the field's ids came in
    pooling: str        # 'none', 'sum' or 'mean': how the model pools a multi-valued field's rows
    dim: int


def field_names(fields):
    """{ids variable: [field names]} from ``fields``: a mapping, a sparkps.ctr.features.FeatureSpec, or None (no
    names given)."""
    from sparkps.ctr.features import FeatureSpec
    if fields is None:
        return {}
    if isinstance(fields, FeatureSpec):
        return {item.name: list(item.fields) for item in fields.id_inputs()}
    try:
        return {str(name): [str(f) for f in ([names] if isinstance(names, str) else names)]
                for name, names in dict(fields).items()}
    except (TypeError, ValueError):
        raise ConfigError("fields must map each ids input to its field names (or be a FeatureSpec), got %r"
                          % (fields,)) from None


def merged_params(arg_params, aux_params):
    """One {name: numpy array} of arguments and auxiliary states; MXNet's 'arg:'/'aux:' prefixes dropped."""
    merged = {}
    for source in (arg_params or {}), (aux_params or {}):
        for name, value in source.items():
            kind, sep, rest = str(name).partition(":")
            merged[rest if sep and kind in ("arg", "aux") else str(name)] = value
    return merged


class GraphWalk:
    """A symbol's graph seen for export: ``nodes`` in topological order, ``shapes`` of every (node, output),
    the ``params`` it reads and the ``data`` inputs (named by ``input_shapes``) it takes."""

    def __init__(self, symbol, params, input_shapes, fields=None):
        self.symbol = symbol
        self.params = params
        self.input_shapes = {str(k): tuple(int(d) for d in v) for k, v in input_shapes.items()}
        self.fields = field_names(fields)
        self.nodes = topo_order(symbol.entries)
        self.shapes = self._infer_shapes()
        self.table_inputs = {}      # name -> TableInput, in the order the graph reads them

    def _infer_shapes(self):
        unknown = sorted(set(self.input_shapes) - set(self.symbol.list_arguments()))
        if unknown:
            raise ConfigError("input_shapes names %s, which the symbol does not take (its arguments: %s)"
                              % (unknown, self.symbol.list_arguments()))
        known = dict(self.input_shapes)
        for name in self.symbol.list_arguments():
            value = self.params.get(name)
            if name not in known and value is not None and not isinstance(value, RowSparse):
                known[name] = tuple(np.shape(value))
        internals = self.symbol.get_internals()
        _, out_shapes, _ = internals.infer_shape_partial(**known)
        shapes = {}
        for (node, index), shape in zip(internals.entries, out_shapes):
            shapes[(id(node), index)] = None if shape is None else tuple(shape)
        return shapes

    def shape(self, entry):
        """The inferred shape of ``entry`` (node, output); ConfigError naming it when input_shapes do not fix it."""
        node, index = entry
        shape = self.shapes.get((id(node), index))
        if shape is None or 0 in shape:
            raise ConfigError("the shape of '%s' is not known from input_shapes %s; give the shape of every data "
                              "input" % (node.output_name(index), self.input_shapes))
        return shape

    def role(self, node):
        """'param', 'input' or 'missing' for variable ``node``."""
        if node.name in self.input_shapes:
            return "input"
        return "param" if node.name in self.params else "missing"

    def param(self, name):
        """The numpy value of parameter ``name``; ConfigError when absent or a sparse table's rows."""
        value = self.params.get(name)
        if value is None:
            raise ConfigError("params has no value for '%s' (an argument of the symbol that is not a data input "
                              "in input_shapes)" % name)
        if isinstance(value, RowSparse):
            raise ConfigError("'%s' is a sparse table (its rows are looked up by the serving side); only a table "
                              "read by HashEmbedding/SparseEmbedding is cut from the graph" % name)
        from sparkps.backend import asnumpy
        return np.asarray(asnumpy(value))

    def aux(self, node, j):
        return self.param(aux_name(node, j))

    def cut(self, node):
        """The TableInputs of table-read ``node`` (one per field, in field order), registered as graph inputs."""
        op = node.op
        (ids_node, _), (table_node, _) = node.inputs
        ids_shape = self.shape(node.inputs[0])
        pooling = op.pooling if isinstance(op, HashEmbedding) and op.pooling != "fields" else "none"
        where = "%s '%s' (layer '%s')" % (op.name, node.name, layer_of(node.name))
        if ids_node.op is not None or table_node.op is not None:
            raise ConfigError("%s: its ids and table must be variables to cut the graph there" % where)
        if len(ids_shape) > 2 or (pooling != "none" and len(ids_shape) != 2):
            raise ConfigError("%s: ids of shape %s; an export cuts table reads of (batch,) or (batch, fields) ids "
                              "only" % (where, ids_shape))
        count = 1 if pooling != "none" or len(ids_shape) == 1 else ids_shape[1]
        names = self.fields.get(ids_node.name)
        if names is None:
            names = [ids_node.name] if count == 1 else ["%s%d" % (ids_node.name, k) for k in range(count)]
        if len(names) != count:
            raise ConfigError("%s: fields names %d field(s) %s for ids input '%s', which holds %d"
                              % (where, len(names), names, ids_node.name, count))
        made = []
        for field in names:
            item = TableInput("%s:%s" % (table_node.name, field), table_node.name, field, ids_node.name, pooling,
                              op.output_dim)
            known = self.table_inputs.setdefault(item.name, item)
            if known != item:
                raise ConfigError("%s: table input '%s' is read twice in different ways (%s, %s)"
                                  % (where, item.name, known, item))
            made.append(item)
        return made, len(ids_shape) == 1 or pooling != "none"

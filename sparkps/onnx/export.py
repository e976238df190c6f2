"""``export_model``: a sparkps network (Symbol or symbol JSON file, and its params) written as an ONNX model,
MXNet's ``mx.onnx.export_model``. The only module that imports ``onnx``, and only when it is called.
"""
import os

import numpy as np

from sparkps.errors import ConfigError, DataError
from sparkps.onnx.emitter import Emitter
from sparkps.onnx.graph_walk import GraphWalk, merged_params
from sparkps.onnx.translations import translate
from sparkps.symbol.graph import topo_order

OPSET = 17
IR_VERSION = 8              # the IR of opset 17: readable by every ONNX Runtime since 1.11
BATCH = "batch"             # the symbolic first dimension of every input and output when dynamic


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ConfigError("sparkps.onnx.export_model needs the onnx package: pip install onnx") from None
    return onnx


def _symbol(symbol):
    """A Symbol from a Symbol or the path of a symbol JSON file."""
    if not isinstance(symbol, (str, os.PathLike)):
        return symbol
    from sparkps.symbol import load_json
    try:
        with open(symbol, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError("cannot read the symbol file %s: %s" % (symbol, exc)) from None
    try:
        return load_json(text)
    except ConfigError as exc:
        raise DataError("%s: %s" % (symbol, exc)) from None


def _params(params):
    """{name: array} from a dict (MXNet's 'arg:'/'aux:' prefixes allowed), an (arg_params, aux_params) pair or
    the path of a .params file (sparkps's .npz or MXNet's binary format)."""
    if isinstance(params, (str, os.PathLike)):
        from sparkps.model_files import load_params
        return merged_params(*load_params(os.fspath(params)))
    if isinstance(params, (tuple, list)) and len(params) == 2 and all(isinstance(p, dict) for p in params):
        return merged_params(*params)
    if isinstance(params, dict):
        return merged_params(params, None)
    raise ConfigError("params must be a dict of name -> array, an (arg_params, aux_params) pair or a .params "
                      "path, got %s" % type(params).__name__)


def _input_shapes(symbol, input_shapes, params):
    """{name: shape} from a dict, or a list of shapes for the symbol's data arguments in order (MXNet's
    in_shapes: the arguments that are neither parameters nor labels)."""
    if isinstance(input_shapes, dict):
        return input_shapes
    labels = {node.inputs[i][0].name for node in topo_order(symbol.entries) if node.op is not None
              for i in node.op.label_inputs}
    names = [n for n in symbol.list_arguments() if n not in params and n not in labels]
    shapes = list(input_shapes or [])
    if len(shapes) != len(names):
        raise ConfigError("input_shapes gives %d shape(s) for the data input(s) %s; give one each (or a dict "
                          "name -> shape)" % (len(shapes), names))
    return dict(zip(names, shapes))


def build_graph(symbol, params, input_shapes, fields=None):
    """The Emitter holding the whole graph of ``symbol`` (no onnx needed): its nodes, initializers, inputs."""
    walk = GraphWalk(symbol, params, input_shapes, fields)
    out = Emitter(walk)
    for node in walk.nodes:
        if node.op is not None:
            translate(out, node)
    for node, index in symbol.entries:        # a head that is a variable: name it as an output
        if node.op is None:
            out.entry((node, index))
    return out


def _value_info(onnx, name, shape, dtype, dynamic):
    dims = [BATCH if dynamic and k == 0 else int(d) for k, d in enumerate(shape)]
    return onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), dims)


def to_model(out, symbol, dynamic=True, name="sparkps"):
    """The onnx.ModelProto of an Emitter's graph (outputs: the symbol's outputs, as sparkps names them)."""
    onnx = _onnx()
    helper = onnx.helper
    nodes = [helper.make_node(kind, inputs, outputs, name=outputs[0], **attrs)
             for kind, inputs, outputs, attrs in out.nodes]
    inputs = [_value_info(onnx, n, shape, dtype, dynamic) for n, (shape, dtype) in out.inputs.items()]
    outputs = [_value_info(onnx, out.entry((node, i)), out.walk.shape((node, i)), np.float32, dynamic)
               for node, i in symbol.entries]
    initializers = [onnx.numpy_helper.from_array(np.ascontiguousarray(v), n) for n, v in out.initializers.items()]
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, producer_name="sparkps", opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def _check_types(onnx_file_path, in_types):
    """MXNet's positional order puts ``in_types`` fourth; here it is keyword-only and float32 (what the model
    takes): a type where the path belongs, or another type, is one ConfigError saying so."""
    if not isinstance(onnx_file_path, (str, os.PathLike)):
        raise ConfigError("export_model's 4th argument is the ONNX file path (sym, params, input_shapes, "
                          "onnx_file_path), got %r; pass in_types= by keyword" % (onnx_file_path,))
    for dtype in in_types if isinstance(in_types, (list, tuple)) else [in_types]:
        try:
            ok = np.dtype(dtype) == np.float32
        except TypeError:
            ok = False
        if not ok:
            raise ConfigError("in_types: a sparkps network takes float32 inputs, got %r" % (dtype,))


def export_model(sym, params, input_shapes=None, onnx_file_path="model.onnx", fields=None, dynamic=True,
                 verbose=False, *, in_types=np.float32):
    """Write ``sym`` with ``params`` as an ONNX model at ``onnx_file_path`` and return that path.

    ``sym``: a Symbol or the path of a symbol JSON file. ``params``: {name: array} (arguments and auxiliary
    states; 'arg:'/'aux:' prefixes allowed), an (arg_params, aux_params) pair, or a .params file path.
    ``input_shapes``: {data input: shape}, or a list of shapes in the order of the symbol's data arguments
    (MXNet's ``in_shapes``); for a CTR network, the shapes of its id and numeric inputs (``spec.input_shapes(n)``).
    ``fields``: the field names of each ids input ({'ids': ['C1', 'C2'], 'ids_tags': ['tags']}, or the
    FeatureSpec), naming the looked-up rows the graph takes; ``dynamic``: the first (batch) dimension of every
    input and output is symbolic; ``in_types``: float32 (MXNet's argument, keyword-only here). The graph is cut
    at the sparse table reads (see sparkps.onnx.graph_walk and docs/export.md). Raises ConfigError saying
    ``pip install onnx`` without onnx, UnsupportedOp naming an op without a translation. Blocks on reading and
    writing the files."""
    onnx = _onnx()
    _check_types(onnx_file_path, in_types)
    symbol = _symbol(sym)
    values = _params(params)
    shapes = _input_shapes(symbol, input_shapes, values)
    out = build_graph(symbol, values, shapes, fields)
    model = to_model(out, symbol, dynamic=dynamic)
    onnx.save(model, os.fspath(onnx_file_path))
    if verbose:
        print("sparkps.onnx: wrote %s (inputs %s, outputs %s)"
              % (onnx_file_path, [i.name for i in model.graph.input], [o.name for o in model.graph.output]))
    return onnx_file_path

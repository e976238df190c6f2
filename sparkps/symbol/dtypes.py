"""Type inference over a graph, as MXNet's ``infer_type``: element types flow from the arguments
whose types are known (given, or a variable's ``__dtype__`` attribute) through each op until nothing
changes. An op's default rule gives every input (labels included), output and auxiliary state the one
type its inputs and outputs agree on; ops that differ (Embedding's integer ids) override
``Op.infer_type``. A conflict raises ConfigError naming the op and the input. The executor plans the type
of every intermediate array the same way (``plan_entry_types``), so one graph can mix float16, float32, float64
and integer arrays; dtypes are written and read as MXNet's symbol files hold them (type codes)."""
import numpy as np

from ..errors import ConfigError
from .graph import aux_entries, topo_order


def infer_entry_types(entries, known):
    """(argument types, output types, aux types) as numpy dtypes, None where not determined.
    ``known`` maps argument names to dtypes (anything np.dtype accepts). Blocks on nothing."""
    nodes = topo_order(entries)
    types, aux = {}, {}
    for node in nodes:
        if node.op is None:
            given = known.get(node.name, node.attrs.get("__dtype__"))
            types[(node, 0)] = _dtype(given, node.name)
    for _ in range(len(nodes) + 1):
        if not _one_pass(nodes, types, aux):
            break
    arg_types = [types[(n, 0)] for n in nodes if n.op is None]
    out_types = [types.get(e) for e in entries]
    return arg_types, out_types, [aux.get(a) for a in aux_entries(entries)]


# MXNet's type codes (mshadow's TypeFlag), what ``Variable(dtype=...)`` stores as ``__dtype__`` in symbol files
MXNET_TYPE_CODES = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8", 6: "int64",
                    7: "bool", 8: "int16", 9: "uint16", 10: "uint32", 11: "uint64"}
_CODE_OF = {np.dtype(name): code for code, name in MXNET_TYPE_CODES.items()}


def mxnet_type_code(dtype):
    """MXNet's code of ``dtype`` (anything np.dtype accepts), e.g. 0 for float32; ConfigError if it has none."""
    try:
        return _CODE_OF[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise ConfigError("%r is not a dtype MXNet's symbols can hold (%s)"
                          % (dtype, ", ".join(MXNET_TYPE_CODES.values()))) from None


def parse_dtype(value):
    """A numpy dtype from a name, a numpy type, MXNet's code ('0' is float32) or the older text
    "<class 'numpy.int32'>"; ConfigError naming the value otherwise."""
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit() and int(text) in MXNET_TYPE_CODES:
            return np.dtype(MXNET_TYPE_CODES[int(text)])
        if text.startswith("<class 'numpy.") and text.endswith("'>"):
            value = text[len("<class 'numpy."):-2]
    try:
        return np.dtype(value)
    except TypeError:
        raise ConfigError("%r is not a dtype" % (value,)) from None


def _dtype(value, name):
    if value is None:
        return None
    try:
        return parse_dtype(value)
    except ConfigError as exc:
        raise ConfigError("infer_type: %s (argument '%s')" % (exc, name)) from None


def _one_pass(nodes, types, aux):
    changed = False
    for node in nodes:
        op = node.op
        if op is None:
            continue
        ins = [types.get(e) for e in node.inputs]
        outs = [types.get((node, i)) for i in range(op.num_outputs)]
        in_new, out_new, aux_new = op.infer_type(ins, outs)
        for i, entry in enumerate(node.inputs):
            changed |= _set(types, entry, in_new[i], node, "input '%s'" % op.input_name(i))
        for i in range(op.num_outputs):
            changed |= _set(types, (node, i), out_new[i], node, "output %d" % i)
        for j in range(len(op.aux_names())):
            changed |= _set(aux, (node, j), aux_new[j] if j < len(aux_new) else None, node, "auxiliary state")
    return changed


def _set(table, key, proposed, node, what):
    if proposed is None:
        return False
    current = table.get(key)
    if current is None:
        table[key] = np.dtype(proposed)
        return True
    if current != np.dtype(proposed):
        raise ConfigError("%s '%s': %s has type %s but the op needs %s"
                          % (node.op.name, node.name, what, current, np.dtype(proposed)))
    return False


def plan_entry_types(variables, op_nodes, known, default):
    """{entry: dtype} for every output of ``op_nodes`` (forward then backward nodes, in execution order):
    what the executor allocates each intermediate array as.  ``known`` maps the names of ``variables`` whose
    arrays fix a type (the bound inputs the forward pass reads, the head-gradient placeholders) to their
    dtype; the rest is inferred as ``infer_type`` does, and an entry nothing determines gets ``default``.
    A conflict (an op given inputs of types it cannot mix) raises ConfigError naming the op and the input."""
    types, aux = {}, {}
    for node in variables:
        if node.name in known:
            types[(node, 0)] = np.dtype(known[node.name])
    nodes = list(variables) + list(op_nodes)
    for _ in range(len(nodes) + 1):
        if not _one_pass(op_nodes, types, aux):
            break
    default = np.dtype(default)
    return {(node, i): types.get((node, i), default) for node in op_nodes for i in range(node.op.num_outputs)}

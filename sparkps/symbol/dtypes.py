"""Type inference over a graph, as MXNet's ``infer_type``: element types flow from the arguments
whose types are known (given, or a variable's ``__dtype__`` attribute) through each op until nothing
changes. An op's default rule gives every input (labels included), output and auxiliary state the one
type its inputs and outputs agree on; ops that differ (Embedding's integer ids) override
``Op.infer_type``. A conflict raises ConfigError naming the op and the input."""
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


def _dtype(value, name):
    if value is None:
        return None
    try:
        return np.dtype(value)
    except TypeError as exc:
        raise ConfigError("infer_type: %r is not a dtype (argument '%s')" % (value, name)) from exc


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

"""Shape inference over a graph: each op completes what it can until nothing changes.

Known shapes flow forwards (data -> output) and, where an op can tell, backwards (an
FullyConnected's data shape gives its weight shape; a loss head's data gives its label shape).
A shape an op needs that differs from a known one raises ShapeError naming the op, the argument and
both shapes.
"""
from ..errors import ShapeError
from .graph import aux_entries, aux_name, topo_order
from .params import to_shape


def complete(shape):
    """True for a shape with every dimension known (MXNet writes an unknown dimension as 0)."""
    return shape is not None and all(d > 0 for d in shape)


def unify(a, b):
    """The shape both partial shapes ``a`` and ``b`` describe (0 = unknown), or None on a conflict."""
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x and y and x != y:
            return None
        out.append(x or y)
    return tuple(out)


def _merge(known, proposed, what):
    if proposed is None:
        return known, False
    proposed = tuple(int(d) for d in proposed)
    if known is None:
        return proposed, True
    merged = unify(tuple(known), proposed)
    if merged is None:
        raise ShapeError(what(known, proposed))
    return merged, merged != tuple(known)


def infer_graph_shapes(nodes, known, aux_known=None):
    """Shapes of every entry of ``nodes`` (topologically ordered).

    ``known`` maps variable names to shapes. Returns (entry_shapes {(node, i): shape or None},
    aux_shapes {(node, j): shape or None}). Blocks on nothing.
    """
    shapes, aux = {}, {}
    for node in nodes:
        if node.op is None:
            given = known.get(node.name)
            if given is None and "__shape__" in node.attrs:
                given = to_shape(node.attrs["__shape__"]) or None
            shapes[(node, 0)] = tuple(given) if given is not None else None
    for node in nodes:
        if node.op is not None:
            for j in range(len(node.op.aux_names())):
                aux[(node, j)] = (aux_known or {}).get(aux_name(node, j))
    for _ in range(len(nodes) + 1):
        if not _one_pass(nodes, shapes, aux):
            break
    return shapes, aux


def infer_entry_shapes(entries, known):
    """(argument shapes, output shapes, aux shapes) of the graph under ``entries``, in
    argument / entry / aux-state order, with None for each shape ``known`` does not determine."""
    nodes = topo_order(entries)
    shapes, aux = infer_graph_shapes(nodes, known)
    arg_shapes = [shapes[(n, 0)] for n in nodes if n.op is None]
    out_shapes = [shapes.get(e) for e in entries]
    return arg_shapes, out_shapes, [aux[a] for a in aux_entries(entries)]


def _one_pass(nodes, shapes, aux):
    changed = False
    for node in nodes:
        op = node.op
        if op is None:
            continue
        ins = [shapes.get(entry) for entry in node.inputs]
        outs_known = [shapes.get((node, i)) for i in range(op.num_outputs)]
        if node.inputs and all(s is None for s in ins) and all(s is None for s in outs_known):
            continue
        if op.elementwise:
            in_new, out_new, aux_new = _elementwise(ins, outs_known, op)
        else:
            seen = ins if op.partial_shapes else [s if complete(s) else None for s in ins]
            in_new, out_new, aux_new = op.infer_shape(list(seen))
            in_new = op.refine_inputs([n if n is not None else k for n, k in zip(list(in_new) + [None] * len(ins),
                                                                                  ins)], outs_known)
        arg_names = op.arguments()
        for i, entry in enumerate(node.inputs):
            label = arg_names[i] if i < len(arg_names) else "input %d" % i
            what = _mismatch(node, "argument '%s' (%s)" % (op.input_name(i), label))
            shapes[entry], did = _merge(shapes.get(entry), in_new[i] if i < len(in_new) else None, what)
            changed |= did
        for i in range(op.num_outputs):
            what = _mismatch(node, "output %d" % i)
            shapes[(node, i)], did = _merge(shapes.get((node, i)), out_new[i] if i < len(out_new) else None,
                                            what)
            changed |= did
        for j in range(len(op.aux_names())):
            what = _mismatch(node, "auxiliary state '%s'" % aux_name(node, j))
            aux[(node, j)], did = _merge(aux.get((node, j)), aux_new[j] if j < len(aux_new) else None, what)
            changed |= did
    return changed


def _elementwise(ins, outs, op):
    """Inputs and outputs of an element-wise op share one shape: unify what is known of each."""
    shape, source = None, None
    named = [("input '%s'" % op.input_name(i), s) for i, s in enumerate(ins)]
    named += [("output %d" % i, s) for i, s in enumerate(outs)]
    for label, s in named:
        if s is None:
            continue
        merged = tuple(s) if shape is None else unify(shape, tuple(s))
        if merged is None:
            raise op.shape_error("%s has shape %s but %s has %s (element-wise ops do not broadcast)",
                                 label, tuple(s), source, shape)
        shape, source = merged, source or label
    return [shape] * len(ins), [shape] * op.num_outputs, []


def _mismatch(node, subject):
    def message(known, proposed):
        return "%s '%s': %s has shape %s but the op needs %s" % (
            node.op.name, node.name, subject, tuple(known), tuple(proposed))
    return message

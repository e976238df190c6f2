"""Build the backward graph: walk the forward nodes in reverse order, ask each op for its input
gradients as new graph nodes, and sum gradients that meet (``add_n``).

Only nodes on a path to a requested argument get gradients; the executor later runs only the
backward nodes that the requested gradients depend on.
"""
from ..errors import ConfigError
from .graph import Node, topo_order
from .op import apply


def build_gradients(heads, wrt_names):
    """Gradients of ``heads`` w.r.t. the variables named in ``wrt_names``.

    Returns (grads, head_grads): grads maps each name to an entry or None (no dependence);
    head_grads lists one placeholder variable node per head ('<output>_head_grad').
    """
    nodes = topo_order(heads)
    variables = {n.name: n for n in nodes if n.op is None}
    missing = [w for w in wrt_names if w not in variables]
    if missing:
        raise ConfigError("cannot differentiate w.r.t. %s: not arguments of this symbol"
                          % ", ".join(repr(m) for m in missing))
    targets = {id(variables[w]) for w in wrt_names}
    needs = _needs_gradient(nodes, targets)
    pending = {}
    head_grads = []
    for node, index in heads:
        placeholder = Node(None, "%s_head_grad" % node.output_name(index))
        head_grads.append(placeholder)
        pending.setdefault((node, index), []).append((placeholder, 0))
    for node in reversed(nodes):
        if node.op is None or id(node) not in needs:
            continue
        out_grads = [_total(pending.pop((node, i), None), node, i) for i in range(node.op.num_outputs)]
        if not node.op.is_loss and all(g is None for g in out_grads):
            continue
        in_grads = node.op.gradient(node, out_grads)
        for entry, grad in zip(node.inputs, in_grads):
            if grad is not None and id(entry[0]) in needs:
                pending.setdefault(entry, []).append(grad)
    grads = {w: _total(pending.get((variables[w], 0)), variables[w], 0) for w in wrt_names}
    return grads, head_grads


def _needs_gradient(nodes, targets):
    needs = set(targets)
    for node in nodes:
        if any(id(entry[0]) in needs for entry in node.inputs):
            needs.add(id(node))
    return needs


def _total(grads, node, index):
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    from .ops.elemwise import AddN
    name = "%s_grad_sum" % node.output_name(index)
    return apply(AddN, grads, name, num_args=len(grads))


def gradient_symbol(symbol, wrt=None):
    """A Group of the gradient entries of ``symbol`` w.r.t. ``wrt`` (default: all arguments)."""
    from .ops.elemwise import ZerosLike
    from .symbol import Symbol
    wrt = list(symbol.list_arguments() if wrt is None else wrt)
    grads, _ = build_gradients(symbol.entries, wrt)
    entries = []
    for name in wrt:
        entry = grads[name]
        if entry is None:
            var = next(n for n in topo_order(symbol.entries) if n.op is None and n.name == name)
            entry = apply(ZerosLike, [(var, 0)], "%s_grad" % name)
        entries.append(entry)
    return Symbol(entries)

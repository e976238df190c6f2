"""Build the backward graph: walk the forward nodes in reverse order, ask each op for its input
gradients as new graph nodes, and sum gradients that meet (``add_n``). Works on graph entries
``(node, output)``; the ops it adds (``add_n``, ``zeros_like``) are found through the op registry.

Only nodes on a path to a requested argument get gradients; the executor later runs only the
backward nodes that the requested gradients depend on.
"""
from ..errors import ConfigError
from .graph import Node, topo_order
from .op import apply, op_class


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
    name = "%s_grad_sum" % node.output_name(index)
    return apply(op_class("add_n"), grads, name, num_args=len(grads))


def gradient_entries(heads, wrt):
    """One gradient entry of ``heads`` per variable name in ``wrt`` (``zeros_like`` of the variable
    where the heads do not depend on it)."""
    grads, _ = build_gradients(heads, wrt)
    variables = {n.name: n for n in topo_order(heads) if n.op is None}
    return [grads[name] if grads[name] is not None
            else apply(op_class("zeros_like"), [(variables[name], 0)], "%s_grad" % name) for name in wrt]

"""Graph nodes, traversal and automatic names.

A node is a variable (``op is None``) or an op application; an *entry* is ``(node, output_index)``.
Automatic names follow MXNet (``fullyconnected0``, ``activation1``) but the counter is derived from
the graph being built, not from a process-wide name manager: an unnamed op gets the next free index
among the nodes it is built on, and when two graphs built separately are joined (``Concat``,
``Group``, ``a + b``) clashing automatic names are renumbered, together with the arguments the op
created for itself (``fullyconnected1_weight``). Building the same network twice therefore gives the
same names, whatever was built before.
"""
import re

_AUTO = re.compile(r"^(.*?)(\d+)$")


class Node:
    """One vertex of a symbol graph."""

    __slots__ = ("op", "name", "inputs", "attrs", "auto_hint", "owner", "__weakref__")

    def __init__(self, op, name, inputs=(), attrs=None, auto_hint=None, owner=None):
        self.op = op
        self.name = name
        self.inputs = list(inputs)
        self.attrs = dict(attrs or {})
        self.auto_hint = auto_hint      # set when the name was chosen automatically
        self.owner = owner              # for arguments an op created itself (fc1_weight -> fc1)
        if op is not None:
            op.node = self

    @property
    def num_outputs(self):
        return 1 if self.op is None else self.op.num_outputs

    @property
    def num_visible(self):
        return 1 if self.op is None else self.op.visible_outputs

    def output_name(self, index):
        if self.op is None:
            return self.name
        names = self.op.output_names
        suffix = names[index] if index < len(names) else "output%d" % index
        return "%s_%s" % (self.name, suffix)

    def __repr__(self):
        return "<Node %s %s>" % (self.op.name if self.op else "Variable", self.name)


def topo_order(entries):
    """Nodes reachable from ``entries`` in depth-first post-order (inputs in argument order first)."""
    order, seen = [], set()
    for node, _ in entries:
        if id(node) in seen:
            continue
        stack = [(node, 0)]
        seen.add(id(node))
        while stack:
            current, i = stack.pop()
            if i < len(current.inputs):
                stack.append((current, i + 1))
                child = current.inputs[i][0]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(current)
    return order


def auto_name(hint, nodes):
    """The next free ``hint<k>`` among ``nodes`` (MXNet's counter, local to this graph)."""
    taken = {n.name for n in nodes}
    used = [_index(n.name, hint) for n in nodes if n.auto_hint == hint]
    k = max([u for u in used if u is not None], default=-1) + 1
    while "%s%d" % (hint, k) in taken:
        k += 1
    return "%s%d" % (hint, k)


def _index(name, hint):
    match = _AUTO.match(name)
    if match and match.group(1) == hint:
        return int(match.group(2))
    return None


def resolve_clashes(entries):
    """Renumber automatically named nodes whose names clash after joining graphs."""
    nodes = topo_order(entries)
    seen = {}
    for node in nodes:
        other = seen.get(node.name)
        if other is None or other is node:
            seen[node.name] = node
            continue
        if node.auto_hint is not None and node.owner is None:
            _rename(node, auto_name(node.auto_hint, nodes), nodes)
            seen[node.name] = node


def _rename(node, new_name, nodes):
    old = node.name
    node.name = new_name
    for other in nodes:
        if other.owner is node and other.name.startswith(old + "_"):
            other.name = new_name + other.name[len(old):]


def argument_names(entries):
    """Names of the variables under ``entries``, depth-first, inputs in each op's argument order."""
    return [n.name for n in topo_order(entries) if n.op is None]


def aux_name(node, j):
    """The name of auxiliary state ``j`` of op node ``node`` ('bn1_moving_mean')."""
    return "%s_%s" % (node.name, node.op.aux_names()[j])


def aux_entries(entries):
    """``[(node, j)]`` for every auxiliary state under ``entries``, in node order."""
    return [(n, j) for n in topo_order(entries) if n.op is not None for j in range(len(n.op.aux_names()))]


def aux_state_names(entries):
    """Names of the auxiliary states under ``entries`` ('bn1_moving_mean', 'bn1_moving_var')."""
    return [aux_name(n, j) for n, j in aux_entries(entries)]


def output_names(entries):
    """The output name of each entry ('fc1_output'; a variable's own name)."""
    return [node.output_name(i) for node, i in entries]

"""MXNet-style JSON: {"nodes": [...], "arg_nodes": [...], "node_row_ptr": [...], "heads": [...]}.

Each node is {"op": name or "null", "name", "attrs": {strings}, "inputs": [[node, output, 0], ...]};
op parameters and user attributes share ``attrs`` (user attributes keep their ``__key__`` form).
"""
import json

from ..errors import ConfigError
from .graph import Node, topo_order
from .op import op_class

FORMAT_VERSION = 10600


def to_json(entries):
    """The JSON text of the graph whose outputs are ``entries``."""
    nodes = topo_order(entries)
    index = {id(n): i for i, n in enumerate(nodes)}
    out, row_ptr = [], [0]
    for node in nodes:
        attrs = dict(node.op.param_strings()) if node.op is not None else {}
        attrs.update(node.attrs)
        item = {"op": node.op.name if node.op is not None else "null", "name": node.name,
                "inputs": [[index[id(src)], i, 0] for src, i in node.inputs]}
        if attrs:
            item["attrs"] = attrs
        if node.owner is not None and id(node.owner) in index:
            item["owner"] = index[id(node.owner)]
        out.append(item)
        row_ptr.append(row_ptr[-1] + node.num_outputs)
    doc = {"nodes": out, "arg_nodes": [i for i, n in enumerate(nodes) if n.op is None],
           "node_row_ptr": row_ptr, "heads": [[index[id(n)], i, 0] for n, i in entries],
           "attrs": {"sparkps_version": ["int", FORMAT_VERSION]}}
    return json.dumps(doc, indent=2)


def parse_json(text):
    """The output entries of the graph in JSON ``text``. Unknown ops raise ConfigError naming them."""
    try:
        doc = json.loads(text)
        items, heads = doc["nodes"], doc["heads"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError("not a symbol JSON document: %s" % exc) from exc
    nodes = []
    for k, item in enumerate(items):
        nodes.append(_node(item, nodes, k))
    for item, node in zip(items, nodes):
        owner = item.get("owner")
        if owner is not None:
            node.owner = nodes[owner]
    try:
        entries = [(nodes[h[0]], int(h[1])) for h in heads]
    except (IndexError, TypeError) as exc:
        raise ConfigError("symbol JSON: bad heads %r" % (heads,)) from exc
    return entries


def _node(item, nodes, k):
    try:
        op_name, name = item["op"], item["name"]
        inputs = [(nodes[i[0]], int(i[1])) for i in item.get("inputs", [])]
    except (KeyError, IndexError, TypeError) as exc:
        raise ConfigError("symbol JSON: node %d is malformed (%s)" % (k, exc)) from exc
    attrs = dict(item.get("attrs", item.get("attr", item.get("param", {}))) or {})
    if op_name == "null":
        return Node(None, name, attrs=attrs)
    cls = op_class(op_name)
    user = {a: v for a, v in attrs.items() if a not in cls.spec}
    params = {a: v for a, v in attrs.items() if a in cls.spec}
    try:
        op = cls(**params)
    except ConfigError as exc:
        raise ConfigError("symbol JSON: node '%s': %s" % (name, exc)) from exc
    if len(inputs) != len(op.arguments()):
        raise ConfigError("symbol JSON: %s '%s' has %d inputs, expected %d (%s)"
                          % (op_name, name, len(inputs), len(op.arguments()), ", ".join(op.arguments())))
    return Node(op, name, inputs, attrs=user)

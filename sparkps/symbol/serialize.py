"""MXNet's symbol JSON: {"nodes": [...], "arg_nodes": [...], "node_row_ptr": [...], "heads": [...],
"attrs": {"mxnet_version": ["int", 10901]}}.

Each node is {"op": name or "null", "name", "attrs": {strings}, "inputs": [[node, output, 0], ...]}.
Written files hold only the fields MXNet's reader knows: op parameters that differ from their
defaults, user attributes in their ``__key__`` form, and, as MXNet lists them, the auxiliary states
(BatchNorm's moving mean and variance) as variable inputs after the arguments.

Files from MXNet 0.8 to 1.9 load with MXNet's upgrade rules (src/nnvm/legacy_json_util.cc): 0.8
nodes carry ``param`` and ``attr`` instead of ``attrs`` and two-element entries; files before 0.9
omit inputs (they become variables named '<node>_<input>' carrying the op's attributes); files from
0.9 on list the auxiliary states as inputs (dropped here: they are the op's own state); files before
0.9.4 lack the initialiser an op gives its input variables (PReLU's gamma: Constant 0.25); files
before 0.9.5 write argmax/argmin over all axes as ``axis=-1``; files before 1.9.1 may carry the
legacy keys ``lr_mult``, ``wd_mult``, ``ctx_group``, ... (moved to ``__lr_mult__`` on the node, or,
as '<input>_lr_mult' on an op, to that input's variable).
"""
import json

from ..errors import ConfigError
from .graph import Node, aux_name, topo_order
from .op import op_class

MXNET_VERSION = 10901                     # the format level written (MXNet 1.9.1)
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")


# ---- writing -------------------------------------------------------------------------------------
def to_json(entries):
    """The JSON text of the graph whose outputs are ``entries``, readable by MXNet 1.x."""
    rows, index = [], {}

    def add(item, key, outputs):
        index[key] = len(rows)
        rows.append((item, outputs))

    for node in topo_order(entries):
        if node.op is None:
            add(_item("null", node.name, dict(node.attrs), []), id(node), 1)
            continue
        inputs = [[index[id(src)], i, 0] for src, i in node.inputs]
        for j in range(len(node.op.aux_names())):
            add(_item("null", aux_name(node, j), {}, []), (id(node), j), 1)
            inputs.append([index[(id(node), j)], 0, 0])
        attrs = dict(node.op.changed_param_strings())
        attrs.update(node.attrs)
        add(_item(node.op.name, node.name, attrs, inputs), id(node), node.op.num_outputs)
    row_ptr = [0]
    for _, outputs in rows:
        row_ptr.append(row_ptr[-1] + outputs)
    doc = {"nodes": [item for item, _ in rows],
           "arg_nodes": [k for k, (item, _) in enumerate(rows) if item["op"] == "null"],
           "node_row_ptr": row_ptr, "heads": [[index[id(n)], i, 0] for n, i in entries],
           "attrs": {"mxnet_version": ["int", MXNET_VERSION]}}
    return json.dumps(doc, indent=2)


def _item(op, name, attrs, inputs):
    item = {"op": op, "name": name}
    if attrs:
        item["attrs"] = {str(k): str(v) for k, v in attrs.items()}
    item["inputs"] = inputs
    return item


# ---- reading -------------------------------------------------------------------------------------
def parse_json(text):
    """The output entries of the graph in JSON ``text`` (sparkps or MXNet 0.8-1.9). Unknown ops and
    malformed nodes raise ConfigError naming the node."""
    try:
        doc = json.loads(text)
        items, heads = doc["nodes"], doc["heads"]
        version = _file_version(doc.get("attrs") or {})
        np_shape = _is_np_shape(doc.get("attrs") or {})
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ConfigError("not a symbol JSON document: %s" % exc) from exc
    nodes = []
    for k, item in enumerate(items):
        nodes.append(_node(item, nodes, k, version))
        if np_shape and nodes[-1].op is None and "__shape__" in nodes[-1].attrs:
            nodes[-1].attrs["__shape__"] = _legacy_shape(nodes[-1])
    try:
        return [(nodes[h[0]], int(h[1])) for h in heads]
    except (IndexError, TypeError) as exc:
        raise ConfigError("symbol JSON: bad heads %r" % (heads,)) from exc


def _file_version(attrs):
    """The MXNet version that wrote the file: 0.8.0 when none is recorded (as MXNet assumes);
    files written by earlier sparkps releases (``sparkps_version``) are read as current."""
    if "mxnet_version" in attrs:
        return int(attrs["mxnet_version"][1])
    if "sparkps_version" in attrs:
        return MXNET_VERSION
    return 800


def _is_np_shape(attrs):
    """True for a file written under MXNet's numpy shape semantics (``"is_np_shape": ["int", 1]``, MXNet >= 1.6
    with ``npx.set_np()``): there -1 is an unknown dimension and 0 a dimension of size zero."""
    flag = attrs.get("is_np_shape")
    return bool(flag) and int(flag[1] if isinstance(flag, (list, tuple)) else flag) != 0


def _legacy_shape(var):
    """A numpy-semantics ``__shape__`` in sparkps's (MXNet's legacy) terms: -1 (unknown) becomes 0; a zero-size
    dimension is a ConfigError naming the variable (sparkps has no zero-size arrays in graphs)."""
    from .params import to_shape
    shape = to_shape(var.attrs["__shape__"])
    if 0 in shape:
        raise ConfigError("symbol JSON: variable '%s' has shape %s with a zero-size dimension (the file uses numpy "
                          "shape semantics, is_np_shape=1; sparkps's unknown dimension is -1 there, 0 here)"
                          % (var.name, shape))
    return str(tuple(0 if d == -1 else d for d in shape))


def _node(item, nodes, k, version):
    try:
        op_name, name = item["op"], item["name"]
        inputs = [(nodes[i[0]], int(i[1])) for i in item.get("inputs", [])]
    except (KeyError, IndexError, TypeError) as exc:
        raise ConfigError("symbol JSON: node %d is malformed (%s)" % (k, exc)) from exc
    attrs = {}
    for field in ("param", "attr", "attrs"):        # 0.8 splits parameters (param) from attributes (attr)
        attrs.update({str(a): str(v) for a, v in (item.get(field) or {}).items()})
    if op_name == "null":
        if version < MXNET_VERSION:
            attrs = _hidden_keys_of_variable(attrs)
        return Node(None, name, attrs=attrs)
    if version < 905 and op_name in ("argmax", "argmin") and attrs.get("axis") == "-1":
        del attrs["axis"]                           # UpgradeJSON_000904_000905: -1 meant "all axes" then
    cls = op_class(op_name)
    params = {a: v for a, v in attrs.items() if a in cls.spec}
    user = {a: v for a, v in attrs.items() if a not in cls.spec}
    try:
        op = cls(**params)
    except ConfigError as exc:
        raise ConfigError("symbol JSON: node '%s': %s" % (name, exc)) from exc
    arguments, aux = op.arguments(), op.aux_names()
    created = []
    if len(inputs) == len(arguments) + len(aux) and aux:
        inputs = inputs[:len(arguments)]            # MXNet >= 0.9 lists the auxiliary states as inputs
    elif len(inputs) < len(arguments) and version < 900:
        created = [Node(None, "%s_%s" % (name, a)) for a in arguments[len(inputs):]]
        inputs += [(var, 0) for var in created]
    if len(inputs) != len(arguments):
        raise ConfigError("symbol JSON: %s '%s' has %d inputs, expected %d (%s)"
                          % (op_name, name, len(inputs), len(arguments), ", ".join(arguments)))
    if version < MXNET_VERSION:
        user = _hidden_keys_of_op(user, arguments, inputs)
    for var in created:                             # UpgradeJSON_000800_000900: a made-up input variable
        var.attrs = dict(params, **user, **var.attrs)   # takes the op's attributes ('<input>_lr_mult' wins)
    if version < 904:
        _input_defaults(op, arguments, inputs)
    return Node(op, name, inputs, attrs=user)


def _input_defaults(op, arguments, inputs):
    """UpgradeJSON_000903_000904: files before 0.9.4 lack the attributes an op gives its input variables
    when composed (PReLU's gamma initialiser); add them where the variable has none of its own."""
    for arg, (src, _) in zip(arguments, inputs):
        if src.op is None:
            for key, value in op.input_attrs.get(arg, {}).items():
                src.attrs.setdefault(key, value)


def _hidden_keys_of_variable(attrs):
    out = {}
    for key, value in attrs.items():
        out["__%s__" % key if key in HIDDEN_KEYS else key] = value
    return out


def _hidden_keys_of_op(attrs, arguments, inputs):
    """'lr_mult' -> '__lr_mult__' on the op; '<input>_lr_mult' -> '__lr_mult__' on that input's
    variable (kept as it is when the input is not a variable), as MXNet's UpgradeJSON_FixParsing."""
    out = {}
    for key, value in attrs.items():
        hidden = next((h for h in HIDDEN_KEYS if key == h or key.endswith("_" + h)), None)
        if hidden is None:
            out[key] = value
        elif key == hidden:
            out["__%s__" % hidden] = value
        else:
            arg = key[:-len(hidden) - 1]
            if arg in arguments and inputs[arguments.index(arg)][0].op is None:
                inputs[arguments.index(arg)][0].attrs["__%s__" % hidden] = value
            else:
                out[key] = value
    return out

"""Symbol: a handle on one or more outputs of a graph, with MXNet's methods.

    data = Variable('data')
    fc1 = FullyConnected(data, num_hidden=128, name='fc1')
    net = SoftmaxOutput(Activation(fc1, act_type='relu'), name='softmax')
    net.list_arguments()   # ['data', 'fc1_weight', 'fc1_bias', 'softmax_label']
    exe = net.simple_bind('cpu', data=(128, 784))
"""
import copy
from numbers import Number

from ..errors import ConfigError
from .attribute import HIDDEN_KEYS, attr_strings, lookup, stored_key
from .autodiff import gradient_entries
from .binding import bind, simple_bind
from .dtypes import infer_entry_types, mxnet_type_code
from .graph import Node, argument_names, auto_name, aux_state_names, output_names, resolve_clashes, topo_order
from .methods import SymbolMethods
from .op import op_class
from .params import render
from .serialize import parse_json, to_json
from .shape import complete, infer_entry_shapes


class Symbol(SymbolMethods):
    """One or more graph outputs (entries). Immutable from the user's side."""

    __slots__ = ("_entries", "__weakref__")

    def __init__(self, entries):
        self._entries = list(entries)

    # ---- introspection -------------------------------------------------------------------------
    @property
    def name(self):
        """The node name for a single-output symbol, else None (as MXNet)."""
        return self._entries[0][0].name if len(self._entries) == 1 else None

    @property
    def entries(self):
        return list(self._entries)

    def _nodes(self):
        return topo_order(self._entries)

    def list_arguments(self):
        """Argument (variable) names, depth-first, inputs in each op's argument order."""
        return argument_names(self._entries)

    def list_outputs(self):
        """Output names, e.g. ['fc1_output', 'softmax_output']."""
        return output_names(self._entries)

    def list_auxiliary_states(self):
        """Auxiliary state names, e.g. ['bn1_moving_mean', 'bn1_moving_var']."""
        return aux_state_names(self._entries)

    def list_inputs(self):
        return self.list_arguments()

    def get_internals(self):
        """A symbol grouping every visible output of every node (variables included)."""
        return Symbol([(n, i) for n in self._nodes() for i in range(n.num_visible)])

    def get_children(self):
        """The inputs of this single-output symbol's node, grouped; None for a variable."""
        node = self._entries[0][0]
        return Symbol(node.inputs) if node.inputs else None

    def __getitem__(self, key):
        if isinstance(key, int):
            return Symbol([self._entries[key]])
        names = self.list_outputs()
        if key in names:
            return Symbol([self._entries[names.index(key)]])
        for node, i in self._entries:
            if node.op is None and node.name == key:
                return Symbol([(node, i)])
        raise ConfigError("no output named %r (outputs: %s)" % (key, ", ".join(names)))

    def __iter__(self):
        return (Symbol([e]) for e in self._entries)

    def __len__(self):
        return len(self._entries)

    def __reduce__(self):
        """Pickled (and copied) as its JSON text, as MXNet's symbols are."""
        return load_json, (self.tojson(),)

    def eval(self, ctx="cpu", **inputs):
        """Bind to the inputs' shapes, run one inference forward pass, return the outputs."""
        exe = self.simple_bind(ctx, grad_req="null", **{k: tuple(v.shape) for k, v in inputs.items()})
        return exe.forward(is_train=False, **inputs)

    def __bool__(self):
        raise ConfigError("a Symbol has no truth value (it is a graph, not a result); bind and run it")

    def __repr__(self):
        if len(self._entries) == 1:
            return "<Symbol %s>" % self.name
        return "<Symbol group [%s]>" % ", ".join(self.list_outputs())

    def attr(self, key):
        """The attribute ``key`` of this single node (user attributes, then op parameters) or None;
        MXNet's hidden keys are found under either name ('lr_mult' or '__lr_mult__')."""
        return lookup(self.list_attr(), key)

    def list_attr(self):
        """Attributes of this symbol's node as strings (op parameters included)."""
        node = self._entries[0][0]
        attrs = dict(node.op.param_strings()) if node.op is not None else {}
        attrs.update(node.attrs)
        return attrs

    def attr_dict(self):
        """{node name: attributes} for every node that has some."""
        out = {}
        for node in self._nodes():
            attrs = Symbol([(node, 0)]).list_attr()
            if attrs:
                out[node.name] = attrs
        return out

    def _set_attr(self, **kwargs):
        self._entries[0][0].attrs.update({stored_key(k): str(v) for k, v in kwargs.items()})

    # ---- shapes ------------------------------------------------------------------------------
    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes) from some input shapes, positional in
        list_arguments() order or by name; a 0 in a shape is an unknown dimension, completed from
        the other inputs and outputs as MXNet does. (None, None, None) when the given shapes do not
        determine them all (as MXNet). Mismatches raise ShapeError naming the op and the input."""
        arg, out, aux = self.infer_shape_partial(*args, **kwargs)
        if not all(complete(s) for s in arg + out + aux):
            return None, None, None
        return arg, out, aux

    def infer_shape_partial(self, *args, **kwargs):
        """Like infer_shape, with None for each shape nothing is known of and 0 for each
        dimension that cannot be determined."""
        return infer_entry_shapes(self._entries, self._known_shapes(args, kwargs))

    def infer_type(self, *args, **kwargs):
        """(arg_types, out_types, aux_types) as numpy dtypes from some argument types, positional in
        list_arguments() order or by name; (None, None, None) when they do not determine them all."""
        arg, out, aux = self.infer_type_partial(*args, **kwargs)
        if any(t is None for t in arg + out + aux):
            return None, None, None
        return arg, out, aux

    def infer_type_partial(self, *args, **kwargs):
        """Like infer_type, with None for each type that cannot be determined."""
        names = self.list_arguments()
        if len(args) > len(names):
            raise ConfigError("infer_type got %d positional types for %d arguments" % (len(args), len(names)))
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise ConfigError("infer_type: %s not an argument of this symbol (arguments: %s)"
                              % (", ".join(repr(u) for u in unknown), ", ".join(names)))
        known = {n: t for n, t in zip(names, args) if t is not None}
        known.update({k: v for k, v in kwargs.items() if v is not None})
        return infer_entry_types(self._entries, known)

    def _known_shapes(self, args, kwargs):
        names = self.list_arguments()
        if len(args) > len(names):
            raise ConfigError("infer_shape got %d positional shapes for %d arguments" % (len(args), len(names)))
        known = {n: s for n, s in zip(names, args) if s is not None}
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise ConfigError("infer_shape: %s not an argument of this symbol (arguments: %s)"
                              % (", ".join(repr(u) for u in unknown), ", ".join(names)))
        known.update({k: tuple(v) for k, v in kwargs.items() if v is not None})
        return known

    # ---- serialisation, binding, gradients (implemented in their own modules) ----------------
    def tojson(self):
        """MXNet-style JSON text of the graph (nodes, arg_nodes, node_row_ptr, heads, attrs)."""
        return to_json(self._entries)

    def save(self, path):
        """Write tojson() to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.tojson())

    def backward_graph(self, wrt=None):
        """The gradient graph: a Group whose outputs are d(heads)/d(arg) for each name in ``wrt``
        (default: every argument), built from the ops' gradient nodes ('fc1_backward_weight', ...)
        and pruned to what those outputs need. Its extra arguments '<output>_head_grad' are the
        gradients flowing into this symbol's outputs (loss heads ignore them)."""
        wrt = self.list_arguments() if wrt is None else list(wrt)
        return Symbol(gradient_entries(self._entries, wrt))

    def simple_bind(self, ctx="cpu", grad_req="write", type_dict=None, dtype="float32", **shapes):
        """Allocate every array from the given input shapes and return an Executor."""
        return simple_bind(self._entries, ctx, grad_req, type_dict, dtype, shapes)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None):
        """An Executor over the given arrays (used in place, not copied when already on ctx)."""
        return bind(self._entries, ctx, args, args_grad, grad_req, aux_states)

    # ---- composition and arithmetic ----------------------------------------------------------
    def __call__(self, *args, name=None, **kwargs):
        """A copy of this graph with arguments replaced by Symbols: positional ones in
        list_arguments() order, keyword ones by name (MXNet's composition). ``name`` renames the
        single output's node."""
        names = self.list_arguments()
        if len(args) > len(names):
            raise ConfigError("compose: %d positional symbols for %d arguments" % (len(args), len(names)))
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise ConfigError("compose: %s not an argument of this symbol (arguments: %s)"
                              % (", ".join(map(repr, unknown)), ", ".join(names)))
        given = dict(zip(names, args), **kwargs)
        subs = {k: single_entry(v, "compose", k) for k, v in given.items()}
        entries = compose(self._entries, subs)
        if name is not None:
            if len(entries) != 1 or entries[0][0].op is None:
                raise ConfigError("compose: name= needs a symbol with one op output")
            entries[0][0].name = name
        return Symbol(entries)

    def _apply(self, op_name, args, kwargs, hint=None):
        return apply_op(op_class(op_name), args, kwargs, hint)

    def _binary(self, other, op_name, scalar_name):
        if isinstance(other, Symbol):
            return create(op_class(op_name), [self, other], {}, None, None)
        if isinstance(other, Number):
            return create(op_class(scalar_name), [self], {"scalar": float(other)}, None, None)
        return NotImplemented

    def __add__(self, other):
        return self._binary(other, "_Plus", "_PlusScalar")

    __radd__ = __add__

    def __sub__(self, other):
        return self._binary(other, "_Minus", "_MinusScalar")

    def __rsub__(self, other):
        return self._binary(other, None, "_RMinusScalar")

    def __mul__(self, other):
        return self._binary(other, "_Mul", "_MulScalar")

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self._binary(other, "_Div", "_DivScalar")

    def __rtruediv__(self, other):
        return self._binary(other, None, "_RDivScalar")

    def __neg__(self):
        return self._binary(-1.0, None, "_MulScalar")


_INHERITED = ("__lr_mult__", "__wd_mult__", "__ctx_group__")


def single_entry(value, op_name, arg):
    """The one entry of a single-output symbol given as op input ``arg``."""
    if not isinstance(value, Symbol):
        raise ConfigError("%s: input %r must be a Symbol, got %s" % (op_name, arg, type(value).__name__))
    if len(value._entries) != 1:
        raise ConfigError("%s: input %r has %d outputs; pick one with [i]"
                          % (op_name, arg, len(value._entries)))
    return value._entries[0]


def apply_op(cls, args, kwargs, hint=None):
    """MXNet's calling convention for op functions: ``f(*inputs_then_params, name=None, attr=None,
    **inputs_or_params)``. Leading positional Symbols (or None) are inputs; the positional values
    after them are parameters in the op's declared order (``x.sum(1)`` is ``sum(x, axis=1)``)."""
    kwargs = dict(kwargs)
    name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
    inputs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
    params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol) and k not in HIDDEN_KEYS}
    hidden = {k: str(v) for k, v in kwargs.items() if k in HIDDEN_KEYS and k not in cls.spec}
    if hidden:                                  # FullyConnected(..., lr_mult=0.1) is an attribute, as MXNet
        attr = dict(attr or {}, **hidden)
    args = list(args)
    cut = 0
    while cut < len(args) and (args[cut] is None or isinstance(args[cut], Symbol)):
        cut += 1
    order = [k for k in cls.spec if k not in params]
    if len(args) - cut > len(order):
        raise ConfigError("%s: too many positional parameters %r (parameters: %s)"
                          % (cls.name, args[cut:], ", ".join(cls.spec) or "none"))
    params.update(zip(order, args[cut:]))
    return create(cls, args[:cut], params, name, attr, inputs, hint)


def compose(entries, subs):
    """Copies of the nodes under ``entries`` with the variables named in ``subs`` replaced by the
    entries given there; returns the copied ``entries``."""
    copies = {}
    for node in topo_order(entries):
        if node.op is None:
            copies[id(node)] = None if node.name in subs else Node(None, node.name, attrs=node.attrs)
            continue
        op = copy.copy(node.op)
        op.params = dict(node.op.params)
        copies[id(node)] = Node(op, node.name, [_copied(e, copies, subs) for e in node.inputs],
                                attrs=node.attrs, auto_hint=node.auto_hint)
    return [_copied(e, copies, subs) for e in entries]


def _copied(entry, copies, subs):
    node, index = entry
    if node.op is None and node.name in subs:
        return subs[node.name]
    return (copies[id(node)], index)


def create(cls, args, params, name, attr, kwargs_inputs=None, hint=None):
    """Apply op class ``cls`` to symbols: positional ``args`` then ``kwargs_inputs`` by argument name.
    Missing arguments become variables named '<name>_<argument>' (fc1_weight, softmax_label)."""
    if cls.variadic:
        params = dict(params, num_args=params.get("num_args", len(args)))
    op = cls(**params)
    names = op.arguments()
    while len(args) > len(names) and args[-1] is None:   # Convolution(x, w, None, no_bias=True), as MXNet
        args = args[:-1]
    given = dict(zip(names, args))
    if len(args) > len(names):
        raise ConfigError("%s takes %d inputs (%s), got %d" % (cls.name, len(names), ", ".join(names), len(args)))
    for key, value in (kwargs_inputs or {}).items():
        if key not in names:
            raise ConfigError("%s has no input %r (inputs: %s)" % (cls.name, key, ", ".join(names)))
        if key in given:
            raise ConfigError("%s: input %r given twice" % (cls.name, key))
        given[key] = value
    entries = {a: single_entry(v, cls.name, a) for a, v in given.items() if v is not None}
    if name is None:
        hint = hint or cls.hint
        name = auto_name(hint, topo_order(list(entries.values())))
    else:
        hint = None
    node = Node(op, name, attrs=_attr_strings(attr), auto_hint=hint)
    inherited = {k: v for k, v in node.attrs.items() if k in _INHERITED}   # as MXNet's compose
    extra = op.input_attrs
    node.inputs = [entries[a] if a in entries else
                   (Node(None, "%s_%s" % (name, a), attrs=dict(extra.get(a, {}), **inherited), owner=node), 0)
                   for a in names]
    resolve_clashes([(node, 0)])
    return Symbol([(node, i) for i in range(op.visible_outputs)])


def _attr_strings(attr):
    return attr_strings({k: v if isinstance(v, str) else str(v) for k, v in (attr or {}).items()})


def Variable(name, shape=None, attr=None, lr_mult=None, wd_mult=None, dtype=None, init=None, **kwargs):
    """A named input or parameter, as ``mx.sym.Variable``; ``shape`` seeds shape inference."""
    if not isinstance(name, str) or not name:
        raise ConfigError("Variable needs a non-empty string name, got %r" % (name,))
    attrs = _attr_strings(attr)
    attrs.update({stored_key(k): str(v) for k, v in kwargs.items()})
    dtype = None if dtype is None else mxnet_type_code(dtype)          # stored as MXNet's code ('0': float32)
    for key, value in (("__shape__", shape), ("__lr_mult__", lr_mult), ("__wd_mult__", wd_mult),
                       ("__dtype__", dtype), ("__init__", init)):
        if value is not None:
            attrs[key] = render(tuple(value)) if key == "__shape__" else str(value)
    return Symbol([(Node(None, name, attrs=attrs), 0)])


var = Variable


def Group(symbols):
    """One symbol with the outputs of every symbol in ``symbols``, in order."""
    entries = []
    for s in symbols:
        if not isinstance(s, Symbol):
            raise ConfigError("Group takes Symbols, got %s" % type(s).__name__)
        entries.extend(s._entries)
    if not entries:
        raise ConfigError("Group needs at least one symbol")
    resolve_clashes(entries)
    return Symbol(entries)


def load_json(text):
    """A Symbol from JSON text written by ``tojson()`` or by MXNet. Unknown ops raise ConfigError."""
    return Symbol(parse_json(text))


def load(path):
    """A Symbol from a JSON file written by ``Symbol.save()`` or MXNet's ``save``."""
    with open(path, encoding="utf-8") as f:
        return load_json(f.read())

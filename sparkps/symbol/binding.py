"""simple_bind and bind: turn shapes or user arrays into the dictionaries an Executor runs on.

Both work on a graph's output entries ``heads``; ``Symbol.simple_bind`` and ``Symbol.bind`` call them."""
import numpy as np

from .. import backend
from ..errors import ConfigError, ShapeError
from ..param_group import ParameterGroup
from .dtypes import infer_entry_types
from .executor import Executor
from .graph import argument_names, aux_state_names, topo_order
from .shape import complete, infer_entry_shapes

GRAD_REQS = ("write", "add", "null")


def normalize_grad_req(grad_req, names):
    """{argument: 'write'|'add'|'null'} from a string, a list (in argument order) or a dict."""
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise ConfigError("grad_req list has %d entries for %d arguments" % (len(grad_req), len(names)))
        reqs = dict(zip(names, grad_req))
    elif isinstance(grad_req, dict):
        unknown = sorted(set(grad_req) - set(names))
        if unknown:
            raise ConfigError("grad_req names %s, not arguments (arguments: %s)"
                              % (", ".join(map(repr, unknown)), ", ".join(names)))
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        raise ConfigError("grad_req must be a string, list or dict, got %r" % (grad_req,))
    for name, req in reqs.items():
        if req not in GRAD_REQS:
            raise ConfigError("grad_req %r for '%s': use 'write', 'add' or 'null'" % (req, name))
    return reqs


def _check_unique(heads):
    names = argument_names(heads) + aux_state_names(heads)
    seen, dup = set(), []
    for n in names:
        if n in seen:
            dup.append(n)
        seen.add(n)
    if dup:
        raise ConfigError("the symbol has several arguments named %s; give the ops distinct names"
                          % ", ".join(repr(d) for d in sorted(set(dup))))


def _flat_views(xp, specs):
    """``([(name, array)], group)`` for ``specs`` ``[(name, shape, dtype)]``: zero-filled arrays of one
    ParameterGroup (one flat buffer, so all parameters or all gradients can be sent or received as one block)
    when every dtype is the same; separate arrays and no group otherwise."""
    if not specs or len({d for _, _, d in specs}) != 1:
        return [(n, xp.zeros(s, dtype=d)) for n, s, d in specs], None
    group = ParameterGroup.allocate(xp, [(n, s) for n, s, _ in specs], specs[0][2])
    return list(zip(group.names, group)), group


def simple_bind(heads, ctx, grad_req, type_dict, dtype, shapes):
    """Allocate arguments (inputs named in ``shapes`` start as NaN until given), gradients and aux
    states (moving variances start at one) and bind them.  The other arguments (parameters) are the arrays
    of one ParameterGroup in argument order (``exe.arg_group``), and so are their gradients
    (``exe.grad_group``)."""
    _check_unique(heads)
    ctx = backend.Context.parse(ctx)
    xp = backend.get_array_module(ctx)
    names = argument_names(heads)
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ConfigError("simple_bind: %s not an argument of this symbol (arguments: %s)"
                          % (", ".join(repr(u) for u in unknown), ", ".join(names)))
    arg_shapes, _, aux_shapes = infer_entry_shapes(heads, {k: tuple(v) for k, v in shapes.items()})
    missing = [n for n, s in zip(names, arg_shapes) if not complete(s)]
    if missing:
        raise ShapeError("simple_bind: cannot infer the shapes of %s from %s; pass them as keyword shapes"
                         % (", ".join(repr(m) for m in missing), shapes))
    dtype = np.dtype(dtype)
    types, aux_types = _bind_types(heads, names, shapes, type_dict, dtype)
    params = [n for n in names if n not in shapes]  # weights, biases...: laid out in one flat buffer
    views, arg_group = _flat_views(xp, [(n, s, types[n]) for n, s in zip(names, arg_shapes) if n in params])
    args = dict(views)
    args.update((n, xp.zeros(s, dtype=types[n])) for n, s in zip(names, arg_shapes) if n not in params)
    args = {n: args[n] for n in names}
    for name in shapes:
        if args[name].dtype.kind in "fc":            # integer inputs (ids) cannot hold the NaN "not given yet"
            args[name].fill(np.nan)
    reqs = normalize_grad_req(grad_req, names)
    views, grad_group = _flat_views(xp, [(n, args[n].shape, types[n]) for n in params if reqs[n] != "null"])
    grads = dict(views)
    grads.update((n, xp.zeros(args[n].shape, dtype=types[n])) for n in names
                 if reqs[n] != "null" and n not in grads)
    aux = {}
    for name, shape, aux_type in zip(aux_state_names(heads), aux_shapes, aux_types):
        aux[name] = (xp.ones if name.endswith("_var") else xp.zeros)(shape, dtype=aux_type)
    return Executor(heads, ctx, args, grads, reqs, aux, dtype, unverified=list(shapes),
                    groups=(arg_group, grad_group))


def _bind_types(heads, names, inputs, type_dict, dtype):
    """Argument types (by name) and aux types (in order) as MXNet's simple_bind finds them: the types in
    ``type_dict`` (none given: ``dtype`` for the ``inputs`` named by shape), the rest by ``infer_type``
    (Cast, Embedding's ids, a variable's ``__dtype__``), ``dtype`` where nothing determines them."""
    unknown = sorted(set(type_dict or {}) - set(names))
    if unknown:
        raise ConfigError("simple_bind: type_dict names %s, not arguments of this symbol (arguments: %s)"
                          % (", ".join(repr(u) for u in unknown), ", ".join(names)))
    if type_dict:
        known = dict(type_dict)
    else:                                      # as MXNet: a variable's own __dtype__ is kept
        attrs = {n.name: n.attrs for n in topo_order(heads) if n.op is None}
        known = {n: dtype for n in inputs if "__dtype__" not in attrs[n]}
    arg_types, _, aux_types = infer_entry_types(heads, known)
    types = {n: np.dtype(t) if t is not None else dtype for n, t in zip(names, arg_types)}
    return types, [np.dtype(t) if t is not None else dtype for t in aux_types]


def _as_dict(values, names, what, allow_none=False):
    if values is None:
        return {}
    if isinstance(values, dict):
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ConfigError("bind: %s %s not in %s" % (what, ", ".join(map(repr, unknown)), ", ".join(names)))
        return dict(values)
    values = list(values)
    if len(values) != len(names):
        raise ConfigError("bind: %d %s for %d names (%s)" % (len(values), what, len(names), ", ".join(names)))
    return {n: v for n, v in zip(names, values) if v is not None or allow_none}


def _on_device(xp, array, name):
    if isinstance(array, xp.ndarray) and array.flags.c_contiguous:
        return array
    if array is None:
        raise ConfigError("bind: no array given for '%s'" % name)
    return xp.ascontiguousarray(xp.asarray(backend.asnumpy(array) if xp is not np else array))


def bind(heads, ctx, args, args_grad=None, grad_req="write", aux_states=None):
    """Bind user arrays (used in place when already contiguous arrays of ctx's backend)."""
    _check_unique(heads)
    ctx = backend.Context.parse(ctx)
    xp = backend.get_array_module(ctx)
    names, aux_names = argument_names(heads), aux_state_names(heads)
    args = _as_dict(args, names, "args")
    missing = [n for n in names if n not in args]
    if missing:
        raise ConfigError("bind: no array for argument(s) %s" % ", ".join(map(repr, missing)))
    args = {n: _on_device(xp, args[n], n) for n in names}
    grads = {n: _on_device(xp, g, n) for n, g in _as_dict(args_grad, names, "args_grad").items()}
    reqs = normalize_grad_req(grad_req if args_grad is not None else "null", names)
    for name in names:
        if reqs[name] != "null" and name not in grads:
            reqs[name] = "null"
    aux = {n: _on_device(xp, a, n) for n, a in _as_dict(aux_states, aux_names, "aux_states").items()}
    missing_aux = [n for n in aux_names if n not in aux]
    if missing_aux:
        raise ConfigError("bind: no array for auxiliary state(s) %s" % ", ".join(map(repr, missing_aux)))
    for name, grad in grads.items():
        if grad.shape != args[name].shape:
            raise ShapeError("bind: gradient of '%s' has shape %s, the argument has %s"
                             % (name, grad.shape, args[name].shape))
    dtype = np.result_type(*[a.dtype for a in args.values()]) if args else np.float32
    return Executor(heads, ctx, args, grads, reqs, aux, dtype)

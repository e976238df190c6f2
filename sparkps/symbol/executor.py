"""Executor: runs a bound symbol's forward graph and its explicit backward graph.

At bind time the executor builds the backward graph for the arguments whose grad_req is not
'null', keeps only the backward nodes those gradients depend on, infers every shape and every type
(each intermediate array has its own dtype), plans memory once, and turns each node into a prepared call
over fixed arrays. A training step is then two loops over those calls: no graph walking and no allocation
of parameter-sized arrays per step.

    exe = net.simple_bind('cpu', data=(128, 784))
    exe.forward(is_train=True, data=x, softmax_label=y)
    exe.backward()
    exe.grad_dict['fc1_weight']

Nothing here blocks beyond the array computations themselves (on a gpu context CuPy may queue them).
"""
from functools import partial

import numpy as np

from .. import backend
from ..errors import ConfigError, ShapeError
from .autodiff import build_gradients
from .dtypes import plan_entry_types
from .graph import argument_names, aux_state_names, output_names, topo_order
from .input_checks import InputChecks, host_finite
from .memory import MemoryPlan
from .shape import complete, infer_graph_shapes


class Runtime:
    """What ops see at run time besides their arrays."""

    __slots__ = ("xp", "is_train", "rng", "ctx", "host_inputs")

    def __init__(self, ctx, xp, seed=None):
        self.ctx, self.xp, self.is_train = ctx, xp, False
        self.rng = backend.make_rng(ctx, seed)
        # On a gpu context: the host (numpy) arrays this forward pass was fed, by argument name. They were checked
        # for NaN/inf on the host, and ops check their values (labels, ids) there too (``host_copy``).
        self.host_inputs = {}

    def host_copy(self, op, index, array):
        """Input ``index`` of ``op`` as fed from the host this pass, when it was (a gpu context; same size), else
        ``array``: a check of its values then never waits for the device."""
        if self.host_inputs:
            host = self.host_inputs.get(op.input_name(index))
            if host is not None and host.size == array.size:
                return host
        return array


class Executor(InputChecks):
    """A graph (its output entries ``heads``) bound to arrays on one context. Made by
    ``Symbol.simple_bind`` / ``Symbol.bind``."""

    def __init__(self, heads, ctx, args, grads, grad_req, aux, dtype, unverified=(), groups=(None, None)):
        # The ParameterGroups simple_bind laid the parameters and their gradients out in (None from bind).
        self.arg_group, self.grad_group = groups
        self.ctx = ctx
        self.xp = backend.get_array_module(ctx)
        self._rt = Runtime(ctx, self.xp)
        self._dtype = np.dtype(dtype)
        self._heads = list(heads)
        self._arg_names = argument_names(self._heads)
        self._aux_names = aux_state_names(self._heads)
        self._output_names = output_names(self._heads)
        self.arg_dict, self.aux_dict = args, aux
        self.grad_req = grad_req
        self.grad_dict = {k: v for k, v in grads.items() if grad_req.get(k, "null") != "null"}
        self._build()
        self._unverified = set(unverified)
        self._custom_head_grads = False
        self._finite_checks = {}

    # ---- building -------------------------------------------------------------------------------
    def _build(self):
        wrt = [n for n in self._arg_names if self.grad_req.get(n, "null") != "null"]
        self.forward_nodes = [n for n in topo_order(self._heads) if n.op is not None]
        grads, self._head_grad_nodes = build_gradients(self._heads, wrt) if wrt else ({}, [])
        targets = [g for g in grads.values() if g is not None]
        in_forward = set(map(id, self.forward_nodes))
        self.backward_nodes = [n for n in topo_order(targets) if n.op is not None and id(n) not in in_forward]
        shapes = self._shapes(targets)
        sequence = self.forward_nodes + self.backward_nodes
        self._forward_inputs = self._inputs_read_by_forward()
        self._types = self._entry_types(sequence)
        bound, pinned, extra = self._bound_arrays(grads, shapes)
        self._memory = MemoryPlan(sequence, shapes, self._types, self.xp, bound, pinned=self._heads)
        self._arrays = self._memory.arrays
        self.outputs = [self._arrays[e] for e in self._heads]
        self._deferred_checks = self._inputs_checked_downstream()
        self._node_steps = [(node, self._step(node, shapes), self._downstream_checks(node))
                            for node in self.forward_nodes]
        self._monitor = None
        self._forward_steps = self._assemble_forward()
        self._backward_steps = [self._step(n, shapes) for n in self.backward_nodes] + extra(self._arrays)

    def _shapes(self, targets):
        known = {name: tuple(a.shape) for name, a in self.arg_dict.items()}
        aux_known = {name: tuple(a.shape) for name, a in self.aux_dict.items()}
        nodes = topo_order(self._heads)
        shapes, _ = infer_graph_shapes(nodes, known, aux_known)
        for (node, i), placeholder in zip(self._heads, self._head_grad_nodes):
            known[placeholder.name] = shapes[(node, i)]
        shapes, _ = infer_graph_shapes(topo_order(self._heads + targets), known, aux_known)
        unknown = sorted({n.name for (n, _), s in shapes.items() if not complete(s)})
        if unknown:
            raise ShapeError("cannot infer the shapes of %s" % ", ".join(unknown))
        return shapes

    def _entry_types(self, sequence):
        """The dtype of every intermediate entry: inferred from the arrays the forward pass reads (labels,
        read only by the backward pass, may have any type) and the heads' types for their gradients."""
        variables = [n for n in topo_order(self._heads) if n.op is None]
        known = {n.name: self.arg_dict[n.name].dtype for n in variables if n.name in self._forward_inputs}
        types = plan_entry_types(variables, self.forward_nodes, known, self._dtype)
        known.update((p.name, types.get(h, self._dtype)) for p, h in zip(self._head_grad_nodes, self._heads))
        return plan_entry_types(variables + self._head_grad_nodes, sequence, known, self._dtype)

    def _bound_arrays(self, grads, shapes):
        """Arrays fixed before planning, and a function giving the gradient steps that copy/add."""
        bound = {}
        for node in topo_order(self._heads):
            if node.op is None:
                bound[(node, 0)] = self.arg_dict[node.name]
        self.head_grad_arrays = []
        for placeholder, head in zip(self._head_grad_nodes, self._heads):
            array = self.xp.ones(shapes[head], dtype=self._types.get(head, self._dtype))
            bound[(placeholder, 0)] = array
            self.head_grad_arrays.append(array)
        produced = {(n, i) for n in self.backward_nodes for i in range(n.num_outputs)}
        later = []
        for name, entry in grads.items():
            grad, req = self.grad_dict[name], self.grad_req[name]
            if entry is None:
                if req == "write":
                    grad.fill(0)
            elif req == "write" and entry in produced and entry not in bound:
                bound[entry] = grad
            else:
                later.append((grad, entry, req))

        def extra(arrays):
            xp = self.xp
            return [partial(xp.add, grad, arrays[e], out=grad) if req == "add" else
                    partial(xp.copyto, grad, arrays[e]) for grad, e, req in later]
        return bound, list(bound), extra

    def _assemble_forward(self):
        """The flat list of forward calls: each node's step, its deferred input checks, and the
        monitor callback on its outputs when one is set."""
        steps = []
        for node, step, checks in self._node_steps:
            steps.append(step)
            steps.extend(checks)
            if self._monitor is not None:
                steps.append(partial(self._report, node))
        return steps

    def _report(self, node):
        callback, monitor_all = self._monitor
        if monitor_all:
            for pos, entry in enumerate(node.inputs):
                callback("%s_%s" % (node.name, node.op.arguments()[pos]), self._arrays[entry])
        for i in range(node.num_visible):
            callback(node.output_name(i), self._arrays[(node, i)])

    def set_monitor_callback(self, callback, monitor_all=False):
        """Call ``callback(name, array)`` after each op of every forward pass with its outputs
        ('fc1_output'), and with its inputs too ('fc1_data') when ``monitor_all``. None removes it."""
        self._monitor = None if callback is None else (callback, bool(monitor_all))
        self._forward_steps = self._assemble_forward()

    def _step(self, node, shapes):
        arrays, op = self._arrays, node.op
        ins = [arrays[e] for e in node.inputs]
        outs = [arrays[(node, i)] for i in range(op.num_outputs)]
        aux = [self.aux_dict["%s_%s" % (node.name, a)] for a in op.aux_names()]
        in_shapes = [shapes[e] for e in node.inputs]
        out_shapes = [shapes[(node, i)] for i in range(op.num_outputs)]
        for shape, dtype in op.scratch_shapes(in_shapes, out_shapes):
            aux.append(self.xp.zeros(shape, dtype=dtype or self._types.get((node, 0), self._dtype)))
        return op.compile(self._rt, ins, outs, aux)

    # ---- running -----------------------------------------------------------------------------
    def forward(self, is_train=False, **inputs):
        """Copy ``inputs`` into arg_dict (shapes must match exactly; NaN/inf raise DataError), run
        the forward graph, return ``outputs``. In training, batch statistics and dropout apply."""
        self._rt.host_inputs.clear()
        for name, value in inputs.items():
            self._feed(name, value)
        if self._unverified:
            self._check_given(is_train)
        if self.ctx.device_type == "gpu":
            self.ctx.enter()
        self._rt.is_train = bool(is_train)
        # Overflow in exp and inf * 0 are expected in a network (and a NaN input is reported by name
        # below), so numpy's floating-point warnings are silenced for the pass, as MXNet has none.
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for step in self._forward_steps:
                step()
        return self.outputs

    def backward(self, out_grads=None, is_train=None):
        """Run the backward graph into grad_dict. ``out_grads`` (one array or a list, one per output)
        is the gradient flowing into the outputs; loss heads ignore it; default ones. ``is_train``
        (default: the mode of the last forward) False differentiates the inference-mode forward
        (BatchNorm with its moving statistics)."""
        if is_train is not None:
            self._rt.is_train = bool(is_train)
        if out_grads is not None:
            self._set_head_grads(out_grads)
        elif self._custom_head_grads:
            for array in self.head_grad_arrays:
                array.fill(1)
            self._custom_head_grads = False
        if self.ctx.device_type == "gpu":
            self.ctx.enter()
        for step in self._backward_steps:
            step()

    def _set_head_grads(self, out_grads):
        if not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        if not self.head_grad_arrays and len(out_grads) == len(self._heads):
            return                                     # nothing to differentiate (every grad_req 'null')
        if len(out_grads) != len(self.head_grad_arrays):
            raise ConfigError("backward got %d out_grads for %d outputs" % (len(out_grads), len(self._heads)))
        for name, array, value in zip(self._output_names, self.head_grad_arrays, out_grads):
            if tuple(value.shape) != array.shape:
                raise ShapeError("out_grad for '%s' has shape %s, the output has %s"
                                 % (name, tuple(value.shape), array.shape))
            backend.copy_into(array, value)
        self._custom_head_grads = True

    def _feed(self, name, value):
        target = self.arg_dict.get(name)
        if target is None:
            raise ConfigError("forward: %r is not an argument of this executor (arguments: %s)"
                              % (name, ", ".join(self._arg_names)))
        shape = getattr(value, "shape", None)
        if shape is None:
            shape = np.shape(value)
        if shape != target.shape:
            raise ShapeError("forward: input '%s' has shape %s but the executor was bound with %s"
                             % (name, tuple(shape), target.shape))
        if type(value) is np.ndarray and type(target) is np.ndarray:
            np.copyto(target, value, casting="unsafe")
        elif type(value) is np.ndarray:
            # A host batch bound for the device: checked here, on the host, so that the step never waits for the
            # device to answer whether its input was finite (a wait per step serialises the host and the device).
            if value.dtype.kind == "f" and not host_finite(value):
                self._raise_nonfinite(name, value)
            backend.copy_into(target, value)
            self._rt.host_inputs[name] = value
            self._unverified.discard(name)
            return
        else:
            backend.copy_into(target, value)
        if name not in self._deferred_checks and not self._finite(name):
            self._raise_nonfinite(name)
        self._unverified.discard(name)

    # ---- MXNet accessors ---------------------------------------------------------------------
    @property
    def arg_arrays(self):
        return [self.arg_dict[n] for n in self._arg_names]

    @property
    def grad_arrays(self):
        return [self.grad_dict.get(n) for n in self._arg_names]

    @property
    def aux_arrays(self):
        return [self.aux_dict[n] for n in self._aux_names]

    @property
    def output_dict(self):
        return dict(zip(self._output_names, self.outputs))

    @property
    def num_buffers(self):
        """Intermediate arrays allocated by the memory plan (fixed for the executor's life)."""
        return self._memory.num_buffers

    def seed(self, seed):
        """Reseed this executor's random generator (Dropout masks)."""
        self._rt.rng = backend.make_rng(self.ctx, seed)

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy parameter values in (shapes must match); unknown names raise unless allowed."""
        for params, target, kind in ((arg_params, self.arg_dict, "argument"),
                                     (aux_params or {}, self.aux_dict, "auxiliary state")):
            for name, value in params.items():
                if name not in target:
                    if allow_extra_params:
                        continue
                    raise ConfigError("copy_params_from: %r is not an %s of this executor" % (name, kind))
                if tuple(value.shape) != target[name].shape:
                    raise ShapeError("copy_params_from: %s '%s' has shape %s, expected %s"
                                     % (kind, name, tuple(value.shape), target[name].shape))
                backend.copy_into(target[name], value)
                self._unverified.discard(name)

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes (``kwargs``: name -> shape) sharing every array
        whose shape does not change (parameters, their gradients, aux states). Another argument
        changing shape needs ``partial_shaping``; an array growing needs ``allow_up_sizing``."""
        nodes = topo_order(self._heads)
        unknown = sorted(set(kwargs) - set(self._arg_names))
        if unknown:
            raise ConfigError("reshape: %s not an argument (arguments: %s)"
                              % (", ".join(map(repr, unknown)), ", ".join(self._arg_names)))
        known = {n: tuple(s) for n, s in kwargs.items()}
        shapes, aux_shapes = infer_graph_shapes(nodes, known)
        new_arg = {n.name: shapes[(n, 0)] for n in nodes if n.op is None}
        args, grads = {}, {}
        for name in self._arg_names:
            old, shape = self.arg_dict[name], new_arg[name]
            if not complete(shape):
                raise ShapeError("reshape: cannot infer the shape of '%s' from %s" % (name, kwargs))
            args[name] = self._resized(old, shape, name, name in kwargs, partial_shaping, allow_up_sizing)
            if name in self.grad_dict:
                grads[name] = self._resized(self.grad_dict[name], shape, name, True, True, allow_up_sizing)
        aux = {}
        for (node, j), shape in aux_shapes.items():
            name = "%s_%s" % (node.name, node.op.aux_names()[j])
            aux[name] = self._resized(self.aux_dict[name], shape, name, True, partial_shaping, allow_up_sizing)
        return Executor(self._heads, self.ctx, args, grads, dict(self.grad_req), aux, self._dtype,
                        unverified=[n for n in kwargs if args[n] is not self.arg_dict[n]])

    def _resized(self, old, shape, name, asked, partial_shaping, allow_up_sizing):
        shape = tuple(shape)
        if shape == old.shape:
            return old
        if not asked and not partial_shaping:
            raise ShapeError("reshape: the shape of '%s' changes from %s to %s; pass partial_shaping=True"
                             % (name, old.shape, shape))
        size = int(np.prod(shape))
        if size > old.size and not allow_up_sizing:
            raise ShapeError("reshape: '%s' grows from %s to %s; pass allow_up_sizing=True (or bind the "
                             "larger shape first)" % (name, old.shape, shape))
        if size <= old.size and old.flags.c_contiguous:
            return old.reshape(-1)[:size].reshape(shape)     # a smaller array shares the old memory, as MXNet
        return self.xp.zeros(shape, dtype=old.dtype)

    def debug_str(self):
        """The execution plan, one node per line."""
        lines = ["forward:"] + ["  %s %s" % (n.op.name, n.name) for n in self.forward_nodes]
        lines += ["backward:"] + ["  %s %s" % (n.op.name, n.name) for n in self.backward_nodes]
        return "\n".join(lines)

"""The Op base class and the table of registered ops (by their MXNet name).

One subclass per op. An op instance belongs to exactly one graph node and holds that node's parsed
parameters. It declares:

* ``arguments()`` / ``aux_names()``: the names of its inputs and auxiliary states (MXNet order);
* ``infer_shape(in_shapes)``: complete what it can, ``None`` for unknown shapes;
* ``forward(rt, ins, outs, aux)``: compute into the preallocated ``outs`` (numpy ``out=`` style);
  ``rt`` carries ``xp`` (numpy or cupy), ``is_train`` and ``rng``;
* ``gradient(node, out_grads)``: the input gradients as *other graph nodes* (entries), or None.
"""
from functools import partial

from ..errors import ConfigError, ShapeError
from .params import REQUIRED, parse_params, render

OPS = {}


def register(cls):
    """Class decorator: make ``cls`` loadable from JSON under ``cls.name`` (and its aliases)."""
    for key in (cls.name,) + tuple(cls.aliases):
        OPS[key] = cls
    return cls


def op_class(name):
    """The Op class registered as ``name``; ConfigError naming it when there is none."""
    try:
        return OPS[name]
    except KeyError:
        raise ConfigError("unknown op %r (not a sparkps.symbol op)" % (name,)) from None


class Op:
    """Base class of every op. Subclasses set the class attributes and override the methods."""

    name = None               # the op name in JSON, e.g. 'FullyConnected'
    hint = None               # prefix of automatic node names, e.g. 'fullyconnected'
    aliases = ()
    spec = {}                 # parameter name -> (parser, default or REQUIRED)
    num_outputs = 1
    num_visible = None        # outputs a user sees; the rest are saved for the backward pass
    output_names = ("output",)
    is_loss = False           # supplies its own head gradient
    label_inputs = ()         # input positions read only by the backward pass
    own_type_inputs = ()      # input positions (indices, conditions) whose type need not be the op's
    elementwise = False       # inputs and outputs share one shape (partial shapes unify)
    partial_shapes = False    # infer_shape accepts shapes with unknown (0) dimensions
    variadic = False          # takes any number of inputs: ``num_args`` defaults to the inputs given
    input_attrs = {}          # argument name -> attributes its automatic input variable gets (PReLU's gamma init)
    propagates_nonfinite = ()  # input positions whose NaN/inf makes only the matching output rows non-finite
    node = None

    def __init__(self, **params):
        self.params = parse_params(self.name, self.spec, params)
        self.__dict__.update(self.params)
        self.setup()

    def setup(self):
        """Hook for subclasses that derive fields from their parameters."""

    @property
    def visible_outputs(self):
        return self.num_outputs if self.num_visible is None else self.num_visible

    def arguments(self):
        return ["data"]

    def aux_names(self):
        return []

    def param_strings(self):
        """Every parameter as MXNet's string form."""
        return {k: render(v) for k, v in self.params.items()}

    def changed_param_strings(self):
        """The parameters that differ from their defaults (required ones always), as strings: what
        a symbol file records, as MXNet writes only the parameters a user gave."""
        return {k: render(v) for k, v in self.params.items()
                if self.spec[k][1] is REQUIRED or self.spec[k][1] != v}

    def infer_shape(self, in_shapes):
        """Default: one input, output of the same shape."""
        return in_shapes, [in_shapes[0]], []

    def infer_type(self, in_types, out_types):
        """(input, output, aux types) from the known ones (None = unknown): by default all share the
        one type any of them has (MXNet's ElemwiseType), so inputs of two types are a conflict the caller
        reports by name. A label (read only by the backward pass) or an index may keep a type of its own."""
        apart = tuple(self.label_inputs) + tuple(self.own_type_inputs)
        values = [t for i, t in enumerate(in_types) if i not in apart] + list(out_types)
        known = next((t for t in values + list(in_types) if t is not None), None)
        if known is None:
            return in_types, out_types, []
        return ([t if t is not None and i in apart else known for i, t in enumerate(in_types)],
                [known] * self.num_outputs, [known] * len(self.aux_names()))

    def refine_inputs(self, in_shapes, out_shapes):
        """Input shapes completed from known output shapes (backward inference); default: as is."""
        return in_shapes

    def forward(self, rt, ins, outs, aux):
        raise NotImplementedError(self.name)

    def compile(self, rt, ins, outs, aux):
        """A no-argument callable that runs this op over these fixed arrays. Called once per bind;
        hot ops override it to precompute views (transposes, reshapes) and bind the ufuncs."""
        return partial(self.forward, rt, ins, outs, aux)

    def gradient(self, node, out_grads):
        raise ConfigError("%s '%s' has no gradient" % (self.name, self.node_name))

    def scratch_shapes(self, in_shapes, out_shapes):
        """Per-node work buffers as (shape, dtype or None for the type of the node's first output); the executor
        allocates them once per bind and passes them after the aux states in ``aux``."""
        return []

    @property
    def node_name(self):
        return self.node.name if self.node is not None else self.name

    def input_name(self, i):
        """The name of input ``i`` as a user knows it (the variable's name or the producing output)."""
        node, index = self.node.inputs[i]
        return node.name if node.op is None else node.output_name(index)

    def shape_error(self, message, *args):
        return ShapeError("%s '%s': %s" % (self.name, self.node_name, message % args))


class BackwardOp(Op):
    """An op that only appears in backward graphs; shapes flow strictly from inputs to outputs."""

    def infer_shape(self, in_shapes):
        return in_shapes, self.output_shapes(in_shapes), []

    def output_shapes(self, in_shapes):
        return [in_shapes[0]]

    def infer_type(self, in_types, out_types):
        """A gradient has the type of the gradient flowing in (input 0, else the first known input); the
        other inputs (forward values, integer ids, labels) keep their own types."""
        known = next((t for t in in_types if t is not None), None) if in_types[0] is None else in_types[0]
        return in_types, [known] * self.num_outputs, []

    def arguments(self):
        return ["in%d" % i for i in range(self.num_inputs)]

    num_inputs = 1


def apply(cls, inputs, name, **params):
    """Entry 0 of a new node applying op ``cls`` to entries ``inputs`` (used to build gradients)."""
    from .graph import Node
    return (Node(cls(**params), name, inputs), 0)


def grad_name(node, what):
    """Name of a backward node: '<node>_backward_<what>'."""
    return "%s_backward_%s" % (node.name, what)

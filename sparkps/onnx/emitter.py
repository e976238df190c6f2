"""What an export writes, before it becomes ONNX protobuf: nodes as (op_type, inputs, outputs, attributes),
initializers as numpy arrays and the graph's inputs. The translations (``sparkps.onnx.translations``) emit
into it; ``sparkps.onnx.export`` turns it into an ``onnx.ModelProto``. Blocks on nothing.
"""
import numpy as np

from sparkps.symbol.graph import aux_name


class Emitter:
    """The ONNX graph being written for one GraphWalk ``walk`` (``sparkps.onnx.graph_walk``)."""

    def __init__(self, walk):
        self.walk = walk
        self.nodes = []             # (op_type, [input names], [output names], {attribute: value})
        self.initializers = {}      # name -> numpy array
        self.inputs = {}            # name -> (shape, numpy dtype)
        self._taken = {n.name for n in walk.nodes}
        self._count = 0
        self._prefixes = self._node_prefixes(walk.nodes)

    @staticmethod
    def _node_prefixes(nodes):
        """{id(node): the name its outputs are written under}: its own name, with '__k' added when an earlier
        node of the graph has the same name (two separately built nodes may share one, as an ONNX graph's
        outputs may not)."""
        prefixes, seen = {}, {}
        for node in nodes:
            if node.op is None:
                continue
            count = seen.get(node.name, 0)
            seen[node.name] = count + 1
            prefixes[id(node)] = node.name if count == 0 else "%s__dup%d" % (node.name, count)
        return prefixes

    def output(self, node, index=0):
        """The tensor name of output ``index`` of op node ``node`` ('fc1_output', as sparkps names it)."""
        name = node.output_name(index)
        prefix = self._prefixes[id(node)]
        return name if prefix == node.name else prefix + name[len(node.name):]

    def add(self, op_type, inputs, outputs, **attrs):
        """Append one ONNX node; returns its first output name."""
        self.nodes.append((op_type, list(inputs), list(outputs), attrs))
        return outputs[0]

    def temp(self, hint):
        """A fresh tensor name for an intermediate value of node ``hint``."""
        while True:
            self._count += 1
            name = "%s__%d" % (hint, self._count)
            if name not in self._taken:
                self._taken.add(name)
                return name

    def op(self, op_type, inputs, hint, **attrs):
        """Append one single-output node writing a fresh tensor; returns that tensor's name."""
        return self.add(op_type, inputs, [self.temp(hint)], **attrs)

    def const(self, hint, value, dtype=None):
        """An initializer holding ``value`` (float32 unless ``dtype``); returns its name."""
        name = self.temp(hint)
        self.initializers[name] = np.asarray(value, dtype=dtype or np.float32)
        return name

    def axes(self, hint, axes):
        return self.const(hint + "_axes", list(axes), np.int64)

    def param(self, name, value=None):
        """The initializer of parameter ``name`` (its value from params, or ``value`` when given), floating
        values as float32 (the type of the graph's inputs)."""
        if name not in self.initializers:
            array = np.asarray(self.walk.param(name) if value is None else value)
            self.initializers[name] = array.astype(np.float32) if array.dtype.kind == "f" else array
        return name

    def entry(self, entry):
        """The tensor name of sparkps entry (node, output): a variable becomes a data input or a parameter
        initializer on first use; an op output is named as sparkps names it ('fc1_output')."""
        node, index = entry
        if node.op is not None:
            return self.output(node, index)
        role = self.walk.role(node)
        if role == "input":
            if node.name not in self.inputs:
                self.inputs[node.name] = (self.walk.input_shapes[node.name], np.float32)
            return node.name
        return self.param(node.name)

    def aux(self, node, j):
        """The initializer of auxiliary state ``j`` of ``node`` (BatchNorm's moving mean and variance)."""
        return self.param(aux_name(node, j))

    def table_input(self, item, batch):
        """The graph input of a TableInput: (batch, dim) rows looked up by the serving side."""
        self.inputs.setdefault(item.name, ((batch, item.dim), np.float32))
        return item.name

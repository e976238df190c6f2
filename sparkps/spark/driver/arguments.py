"""SparkTrainer's argument checks, run when it is built so that a bad setting fails on the driver, naming it,
before any Spark job: the network against its inputs (``input_shape`` or named, typed inputs), the strategy
against the network's sparse tables, and the restart settings.

    num_classes, data_dtype = check_network(trainer)
    checkpoint_steps, max_restarts = checked_restarts(checkpoint_steps, max_restarts)
"""
from sparkps.errors import ConfigError, ShapeError
from sparkps.kvstore.strategies import check_tables


def check_network(trainer):
    """``(num_classes, data_dtype)`` of ``trainer``'s network (a SparkTrainer's symbol_json, data_name,
    label_name, batch_size, input_shape, inputs and kvstore); ConfigError when the symbol lacks the inputs,
    does not take ``input_shape``, or holds sparse tables the strategy cannot train. ``num_classes`` is None
    unless the network is a softmax classifier; ``data_dtype`` is int64 for the ids of a hashed table."""
    from sparkps import symbol as sym
    from sparkps.symbol.ops.embedding import sparse_tables
    net = sym.load_json(trainer.symbol_json)
    check_tables(trainer.kvstore, sparse_tables(net))
    if trainer.inputs is not None:
        check_inputs(net, trainer.inputs, trainer.label_name, trainer.batch_size)
        return None, "float32"      # named inputs: each keeps its own type (sparkps.spark.common.typed_inputs)
    missing = [n for n in (trainer.data_name, trainer.label_name) if n not in net.list_arguments()]
    if missing:
        raise ConfigError("the network has no input(s) %s; its arguments are %s (set data_name / "
                          "label_name)" % (missing, net.list_arguments()))
    try:
        _, out_shapes, _ = net.infer_shape(**{trainer.data_name: (trainer.batch_size,) + trainer.input_shape})
    except ShapeError as exc:
        raise ConfigError("input_shape %s does not fit the network: %s" % (trainer.input_shape, exc)) from None
    first = tuple(out_shapes[0]) if out_shapes else ()
    classifier = "softmax" in str(net.list_outputs()[0]).lower() if net.list_outputs() else False
    num_classes = int(first[1]) if classifier and len(first) == 2 and first[1] >= 2 else None
    from sparkps.spark.common.sparse_inputs import data_dtype
    return num_classes, data_dtype(net, trainer.data_name).name


def check_inputs(net, inputs, label_name, batch_size):
    """The named inputs (a TypedInputs) and the label are the network's, and their widths fit it."""
    from sparkps.symbol.ops.embedding import sparse_tables
    shapes = inputs.shapes(batch_size)
    missing = [n for n in list(shapes) + [label_name] if n not in net.list_arguments()]
    if missing:
        raise ConfigError("inputs %s do not fit the network's arguments %s (missing: %s)"
                          % (inputs.to_list(), net.list_arguments(), missing))
    tables = sparse_tables(net)
    try:
        net.infer_shape(**shapes, **{t: (1, spec.dim) for t, spec in tables.items()})
    except ShapeError as exc:
        raise ConfigError("inputs %s do not fit the network: %s" % (inputs.to_list(), exc)) from None


def message_limit(trainer, num_servers):
    """The largest frame a node of this job may receive, with a margin (``comm.settings.message_size_limit``):
    the dense parameters cut into ``num_servers`` ranges, or a batch's rows of the widest sparse table. Every
    node of the fit sets it on its sockets (``zmq.MAXMSGSIZE``), so a stranger's larger frames are dropped
    before they are allocated."""
    from sparkps import symbol as sym
    from sparkps.worker.frame_limit import model_message_limit
    net = sym.load_json(trainer.symbol_json)
    if trainer.inputs is not None:
        shapes = trainer.inputs.shapes(trainer.batch_size)
    else:
        shapes = {trainer.data_name: (trainer.batch_size,) + tuple(trainer.input_shape)}
    return model_message_limit(net, shapes, num_servers, exclude={trainer.label_name})


def checked_restarts(checkpoint_steps, max_restarts):
    """``(checkpoint_steps, max_restarts)`` as ints; ConfigError naming the bad one."""
    if checkpoint_steps is not None and (isinstance(checkpoint_steps, bool) or int(checkpoint_steps) < 1):
        raise ConfigError("checkpoint_steps must be an int >= 1 (or None: epoch ends only), got %r"
                          % (checkpoint_steps,))
    if isinstance(max_restarts, bool) or int(max_restarts) < 0:
        raise ConfigError("max_restarts must be an int >= 0, got %r" % (max_restarts,))
    return (None if checkpoint_steps is None else int(checkpoint_steps)), int(max_restarts)


def network_name(symbol_json):
    """A short name for the Spark UI: the output node's name, e.g. 'softmax'."""
    from sparkps import symbol as sym
    outputs = sym.load_json(symbol_json).list_outputs()
    return outputs[0].rsplit("_output", 1)[0] if outputs else "network"


def argument_names(symbol_json):
    """The network's argument names, in order (what an optimizer's param_idx2name maps)."""
    from sparkps import symbol as sym
    return sym.load_json(symbol_json).list_arguments()

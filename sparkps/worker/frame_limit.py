"""The largest frame a node of a job may receive, from the model it trains: the dense parameters cut into the
servers' ranges, or a batch's rows of the widest sparse table, with a margin (``comm.settings.message_size_limit``).
Spark fits (``spark/driver/arguments.message_limit``) and ``sparkps launch`` size every node's limit with it, so a
stranger's frames above what the model needs are refused before they are allocated. Nothing here blocks.
"""
import numpy as np

from sparkps.comm.settings import message_size_limit
from sparkps.symbol.ops.embedding import sparse_tables


def model_message_limit(net, shapes, num_servers, exclude=()):
    """The frame limit (bytes) of a job training the Symbol ``net`` with data ``shapes`` ({input name: shape with
    the batch first}) on ``num_servers`` servers; arguments in ``exclude`` (labels) and the data are not
    parameters. ShapeError when the shapes do not fit the network."""
    tables = sparse_tables(net)
    arg_shapes, _, _ = net.infer_shape(**shapes, **{t: (1, spec.dim) for t, spec in tables.items()})
    inputs = set(shapes) | set(tables) | set(exclude)
    dense = sum(int(np.prod(shape)) for name, shape in zip(net.list_arguments(), arg_shapes or ())
                if name not in inputs and shape is not None)
    ids = sum(int(np.prod(shapes[field])) for spec in tables.values() for field in spec.fields if field in shapes)
    widest = max((spec.dim for spec in tables.values()), default=0)
    return message_size_limit(dense_elements=dense, num_servers=num_servers, sparse_rows=ids, row_dim=widest)


def symbol_file_message_limit(path, batch_size, num_features, num_servers):
    """:func:`model_message_limit` of the network in the JSON file ``path`` fed ``(batch_size, num_features)``
    rows as ``data`` (what ``sparkps worker train`` feeds it); arguments named ``*label`` are not parameters."""
    from sparkps.symbol import load_json
    with open(path, encoding="utf-8") as handle:
        net = load_json(handle.read())
    labels = [name for name in net.list_arguments() if name.endswith("label")]
    return model_message_limit(net, {"data": (int(batch_size), int(num_features))}, num_servers, exclude=labels)

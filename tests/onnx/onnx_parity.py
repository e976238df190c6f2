"""Shared by the ONNX tests: bind a sparkps network with seeded parameters, run its forward pass, and run the
exported model in ONNX Runtime on the same values (a CTR network's table rows gathered by the same ids)."""
import numpy as np

from sparkps.symbol.ops.embedding import HashEmbedding, sparse_tables

TABLE_ROWS = 12


def bind_seeded(net, input_shapes, seed=0):
    """(executor, params): every argument that is not a data input or a label drawn from N(0, 0.5^2) by a
    numpy Generator of ``seed``; a sparse table bound as a dense matrix of its ``input_dim`` rows (TABLE_ROWS
    for a hashed table)."""
    tables = {name: (config.input_dim or TABLE_ROWS, config.dim) for name, config in sparse_tables(net).items()}
    shapes = dict(input_shapes, **tables)
    labels = [n for n in net.list_arguments() if n.endswith("_label")]
    exe = net.simple_bind(grad_req="null", **shapes, **{n: (next(iter(input_shapes.values()))[0],) for n in labels})
    rng = np.random.default_rng(seed)
    params = {}
    for name, array in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        if name in input_shapes or name in labels:
            continue
        value = rng.normal(0, 0.5, array.shape).astype(np.float32)
        if name.endswith("moving_var"):
            value = np.abs(value) + 0.5
        array[...] = value
        params[name] = value
    return exe, params


def table_feeds(net, params, ids, fields):
    """{graph input: rows} of every cut table read: table[ids] per field, a multi-valued field's present rows
    (ids >= 0) pooled as the model pools them."""
    feeds = {}
    for node in (n for n in _nodes(net) if n.op is not None and n.op.name in ("_contrib_HashEmbedding",
                                                                             "_contrib_FusedEmbedding", "Embedding")):
        (ids_node, _), (table_node, _) = node.inputs
        table, positions = params[table_node.name], ids[ids_node.name].astype(np.int64)
        names = fields.get(ids_node.name) or ["%s%d" % (ids_node.name, k) for k in range(positions.shape[1])]
        pooling = node.op.pooling if isinstance(node.op, HashEmbedding) else "none"
        if pooling in ("none", "fields"):     # 'fields': one row per field, summed by the graph
            for k, field in enumerate(names):
                feeds["%s:%s" % (table_node.name, field)] = table[positions[:, k]]
            continue
        present = positions >= 0
        rows = (table[np.where(present, positions, 0)] * present[..., None]).sum(axis=1)
        if pooling == "mean":
            rows = rows / np.maximum(present.sum(axis=1), 1)[:, None]
        feeds["%s:%s" % (table_node.name, names[0])] = rows.astype(np.float32)
    return feeds


def _nodes(net):
    from sparkps.symbol.graph import topo_order
    return topo_order(net.entries)


def run_onnx(path, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    assert wanted <= set(feeds), sorted(wanted - set(feeds))
    return session.run(None, {k: np.ascontiguousarray(v, np.float32) for k, v in feeds.items() if k in wanted})

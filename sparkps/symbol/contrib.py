"""``sym.contrib``: MXNet's contrib names for the sparse embeddings.

    ids = sym.Variable('user_ids')                        # (batch, ids per sample), 64-bit ids when training
    emb = sym.contrib.HashEmbedding(ids, output_dim=8, table='user', pooling='mean', padding_id=0)
    emb = sym.contrib.SparseEmbedding(sym.Variable('item'), input_dim=1000, output_dim=8, name='item_emb')
"""
from .op import op_class
from .symbol import Symbol, Variable, create


def _apply(op_name, args, name, attr, kwargs):
    inputs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
    params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}
    return create(op_class(op_name), list(args), params, name, attr, inputs)


def SparseEmbedding(*args, name=None, attr=None, **kwargs):
    """MXNet's ``contrib.SparseEmbedding(data, weight, input_dim, output_dim)``: an Embedding whose weight
    gradient is row-sparse (see ``ops.embedding``)."""
    return _apply("_contrib_SparseEmbedding", args, name, attr, kwargs)


def HashEmbedding(*args, table=None, weight=None, name=None, attr=None, **kwargs):
    """An embedding over an unbounded table of 64-bit ids (see ``ops.embedding.HashEmbedding``). ``table``
    names the weight variable (default '<name>_weight'); to share one table between fields pass them the same
    ``weight`` Variable."""
    if weight is None and table:
        weight = Variable(table)
    if weight is not None:
        kwargs["weight"] = weight
        table = table or weight.name
    return _apply("_contrib_HashEmbedding", args, name, attr, dict(kwargs, table=table or ""))


__all__ = ["HashEmbedding", "SparseEmbedding"]

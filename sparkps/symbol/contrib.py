"""``sym.contrib``: MXNet's contrib names for the sparse embeddings, and the fused CTR ops (``ops/fused.py``).

    ids = sym.Variable('user_ids')                        # (batch, ids per sample), 64-bit ids when training
    emb = sym.contrib.HashEmbedding(ids, output_dim=8, table='user', pooling='mean', padding_id=0)
    emb = sym.contrib.SparseEmbedding(sym.Variable('item'), input_dim=1000, output_dim=8, name='item_emb')
    emb = sym.contrib.FusedEmbedding(ids, output_dim=8, table='user')    # HashEmbedding in one compiled kernel
    fm = sym.contrib.FMInteraction(emb)                                  # FM's second-order term, (batch, 1)
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


def _table_read(op_name, args, table, weight, name, attr, kwargs):
    if weight is None and table:
        weight = Variable(table)
    if weight is not None:
        kwargs["weight"] = weight
        table = table or weight.name
    return _apply(op_name, args, name, attr, dict(kwargs, table=table or ""))


def HashEmbedding(*args, table=None, weight=None, name=None, attr=None, **kwargs):
    """An embedding over an unbounded table of 64-bit ids (see ``ops.embedding.HashEmbedding``). ``table``
    names the weight variable (default '<name>_weight'); to share one table between fields pass them the same
    ``weight`` Variable."""
    return _table_read("_contrib_HashEmbedding", args, table, weight, name, attr, kwargs)


def FusedEmbedding(*args, table=None, weight=None, name=None, attr=None, **kwargs):
    """``HashEmbedding`` (the same arguments and values) as one compiled kernel, forward and backward (see
    ``ops.fused``)."""
    return _table_read("_contrib_FusedEmbedding", args, table, weight, name, attr, kwargs)


def FMInteraction(*args, name=None, attr=None, **kwargs):
    """The pair-sum cross of (batch, fields, factors) rows in one kernel: FM's second-order term (batch, 1), or
    NFM's bi-interaction (batch, factors) with ``keep_factors=True`` (see ``ops.fused``)."""
    return _apply("_contrib_FMInteraction", args, name, attr, kwargs)


__all__ = ["HashEmbedding", "SparseEmbedding", "FusedEmbedding", "FMInteraction"]

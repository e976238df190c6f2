"""``sym.contrib``: MXNet's contrib names for the sparse embeddings.

    ids = sym.Variable('user_ids')                        # (batch, ids per sample), 64-bit ids when training
    emb = sym.contrib.HashEmbedding(ids, output_dim=8, table='user', pooling='mean', padding_id=0)
    emb = sym.contrib.SparseEmbedding(sym.Variable('item'), input_dim=1000, output_dim=8, name='item_emb')
"""
from .op import OPS
from .ops.constructors import constructor
from .symbol import Variable

SparseEmbedding = constructor(OPS["_contrib_SparseEmbedding"], "SparseEmbedding")
_hash_embedding = constructor(OPS["_contrib_HashEmbedding"], "HashEmbedding")


def HashEmbedding(*args, table=None, weight=None, **kwargs):
    """An embedding over an unbounded table of 64-bit ids (see ``ops.embedding.HashEmbedding``). ``table``
    names the weight variable (default '<name>_weight'); to share one table between fields pass them the same
    ``weight`` Variable."""
    if weight is None and table:
        weight = Variable(table)
    if weight is not None:
        kwargs["weight"] = weight
        table = table or weight.name
    return _hash_embedding(*args, table=table or "", **kwargs)


__all__ = ["HashEmbedding", "SparseEmbedding"]

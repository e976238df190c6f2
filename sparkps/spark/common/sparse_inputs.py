"""What the Spark side needs to know about a network's sparse embedding tables.

A network whose data input holds the ids of a hashed table (``contrib.HashEmbedding``: 64-bit ids, no
``input_dim``) takes its features as int64 from the RDD to the executor: float32 holds whole numbers exactly
only up to 2^24, so the ids travel as integers (rows of int64 arrays, or uint64 ones reinterpreted bit for bit).
Every other network, bounded sparse tables (``Embedding(sparse_grad=True)``) included, takes float32 features.

    data_dtype(net, 'data')        # np.int64 when 'data' feeds a hashed table, else np.float32
    has_tables(net)                # True when a model of ``net`` predicts through its tables' rows
"""
import numpy as np


def _tables(symbol):
    from sparkps.symbol.ops.embedding import sparse_tables
    return sparse_tables(symbol)


def has_tables(symbol):
    """True when ``symbol`` reads a sparse embedding table (its trained weight is a RowSparse)."""
    return bool(_tables(symbol))


def data_dtype(symbol, data_name):
    """numpy dtype the ``data_name`` input travels in: int64 when it holds a hashed table's ids, else float32."""
    hashed = [t for t in _tables(symbol).values() if t.input_dim is None and data_name in t.fields]
    return np.dtype(np.int64 if hashed else np.float32)

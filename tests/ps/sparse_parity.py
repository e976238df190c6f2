"""The small sparse model the parameter-server tests train, dense and sparse alike.

Data: a documented generator — 64 samples of 3 ids from a vocabulary of 20 (numpy Generator seed 0), label = parity
of the id sum; a fully connected head of 2 classes with fixed initial weights (seed 1)."""
import numpy as np

import sparkps.symbol as sym
from cluster import cluster_timeouts

VOCAB, DIM, FIELDS = 20, 4, 3
PATIENT = cluster_timeouts(heartbeat_timeout=30.0)
RNG = np.random.default_rng(0)
IDS = RNG.integers(0, VOCAB, size=(64, FIELDS))
LABELS = (IDS.sum(axis=1) % 2).astype(np.float32)
FC = {'fc_weight': np.random.default_rng(1).normal(0, 0.1, (2, FIELDS * DIM)).astype(np.float32),
      'fc_bias': np.zeros(2, np.float32)}


def network(sparse_grad):
    """Embedding (``sparse_grad`` or dense) -> Flatten -> FullyConnected(2) -> SoftmaxOutput."""
    emb = sym.Embedding(sym.Variable('ids'), input_dim=VOCAB, output_dim=DIM, sparse_grad=sparse_grad, name='emb')
    return sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(emb), num_hidden=2, name='fc'), name='softmax')

"""The small sparse model the parameter-server tests train, dense and sparse alike.

Data: a documented generator — 64 samples of 3 ids from a vocabulary of 20 (numpy Generator seed 0), label = parity
of the id sum; a fully connected head of 2 classes with fixed initial weights (seed 1)."""
import numpy as np

import sparkps.symbol as sym
from cluster import cluster_timeouts
from sparkps.rows.values import RowSparse, initial_rows

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


def assert_same_models(dense_models, sparse_models):
    """Each sparse model's trained table rows and dense weights equal the dense model's to 1e-5 (and training
    moved the rows away from their initial values)."""
    for dense_model, sparse_model in zip(dense_models, sparse_models):
        table = sparse_model.arg_params['emb_weight']
        assert isinstance(table, RowSparse) and table.ids.size > 0
        trained = dense_model.arg_params['emb_weight'][table.ids]
        assert np.abs(trained - initial_rows('emb_weight', table.ids, DIM)).max() > 1e-3
        np.testing.assert_allclose(table.rows, trained, atol=1e-5)
        for name in FC:
            np.testing.assert_allclose(sparse_model.arg_params[name], dense_model.arg_params[name], atol=1e-5,
                                       err_msg=name)

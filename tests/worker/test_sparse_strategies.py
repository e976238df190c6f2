"""Sparse embedding tables under the strategies that round on the servers: ``dist_sync_replicas`` (backup
workers) and bounded staleness (``dist_async`` with ``max_staleness``). A step's dense push and row pushes are one
round of the policy (``KVServer._step``), so both hold for the rows as for the dense keys:

- sync replicas with N = M is dist_sync: the sparse model equals the dense Embedding model to 1e-5;
- sync replicas with N < M applies a round on the first N steps (dense and rows together) and drops the late
  ones (counted), with the same gradient scale on the rows as on the dense keys;
- bounded staleness applies every step on arrival; with one worker the sparse model equals the dense one.

Data: the documented generator of test_sparse_dist_fit (64 samples of 3 ids from 20, label = parity of their
sum, numpy Generator seed 0); workers and servers are threads over inproc://."""
import numpy as np
import pytest

from cluster import run_in_threads
from sparkps import kvstore
from sparkps.io import NDArrayIter
from sparkps.rows.values import initial_rows
from sparkps.train.feedforward import FeedForward
from sparse_parity import DIM, FC, IDS, LABELS, PATIENT, VOCAB, assert_same_models, network


def train(ps_cluster, sparse_grad, kvtype, num_workers, options, epochs=2):
    """Fit on a 1-server cluster with the strategy ``kvtype`` + ``options``; returns (models, kvstores' stats)."""
    params = dict(FC)
    if not sparse_grad:
        params['emb_weight'] = initial_rows('emb_weight', np.arange(VOCAB), DIM)

    def work(kv):
        share = slice(kv.rank, None, num_workers)
        model = FeedForward(network(sparse_grad), num_epoch=epochs, optimizer='sgd', learning_rate=0.5,
                            arg_params={k: v.copy() for k, v in params.items()})
        model.fit(NDArrayIter({'ids': IDS[share]}, LABELS[share], batch_size=8), kvstore=kv)
        kv.barrier()
        return model, kv.server_stats()[0]

    with ps_cluster(num_servers=1, num_workers=num_workers, kvtype=kvtype, timeouts=PATIENT) as cluster:
        make = [lambda: kvstore.create(kvtype, scheduler_uri=cluster.uri, secret=cluster.secret,
                                       timeouts=PATIENT, transport="inproc", zmq_context=cluster.context, **options)
                for _ in range(num_workers)]
        cluster.kvstores = sorted(run_in_threads(make, 60), key=lambda kv: kv.rank)
        return cluster.run_workers(work, timeout=120)


def assert_same_model(dense, sparse):
    assert_same_models([m for m, _ in dense], [m for m, _ in sparse])


@pytest.mark.parametrize('kvtype, workers, options', [
    ('dist_sync_replicas', 2, {'replicas_to_aggregate': 2, 'total_num_replicas': 2}),
    ('dist_async', 1, {'max_staleness': 0})], ids=['sync_replicas_all', 'staleness'])
def test_sparse_model_equals_the_dense_model(ps_cluster, kvtype, workers, options):
    assert_same_model(train(ps_cluster, False, kvtype, workers, options),
                      train(ps_cluster, True, kvtype, workers, options))


def test_sparse_rows_train_with_backup_workers_and_late_steps_are_dropped_whole(ps_cluster):
    """N = 1 of 2: every round is the first step that arrived; each other step is dropped whole (its rows with
    its dense keys: one event of the policy), so rounds applied + steps dropped = steps taken; the workers agree
    on the final rows."""
    results = train(ps_cluster, True, 'dist_sync_replicas', 2, {'replicas_to_aggregate': 1}, epochs=3)
    (first, stats), (second, _) = results
    table = first.arg_params['emb_weight']
    assert np.abs(table.rows - initial_rows('emb_weight', table.ids, DIM)).max() > 1e-3
    np.testing.assert_allclose(second.arg_params['emb_weight'].rows, table.rows, atol=1e-6)
    steps = 2 * 3 * (32 // 8)         # workers x epochs x batches
    assert stats["applied"] + stats["dropped"] == steps, stats


def test_sparse_rows_train_under_bounded_staleness_with_two_workers(ps_cluster):
    (first, _), (second, _) = train(ps_cluster, True, 'dist_async', 2, {'max_staleness': 1}, epochs=3)
    table = first.arg_params['emb_weight']
    assert np.abs(table.rows - initial_rows('emb_weight', table.ids, DIM)).max() > 1e-3
    np.testing.assert_allclose(second.arg_params['emb_weight'].rows, table.rows, atol=1e-6)

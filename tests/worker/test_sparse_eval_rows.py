"""Scoring a model with sparse tables at an epoch end, on the parameter server: the rows of the scored ids are the
servers' rows (trained by every worker), not initial values for the rows this worker's batches never pulled.

Data (generated here): two fields of integer ids; worker 0's rows use ids 0..19, worker 1's ids 1000..1019, and
the label is 1 for an even first id. Worker 0 scores worker 1's rows: with ``keep_rows_for`` (or ``eval_data``)
its predictions equal worker 1's own, which read the same rows after the same sync round."""
import numpy as np
import pytest

import sparkps.nets as nets
from sparkps.ctr.features import LABEL
from sparkps.io.iterators import NDArrayIter
from sparkps.train.feedforward import FeedForward

SPEC = nets.FeatureSpec(categorical=["a", "b"], embedding_dim=4)
ROWS = 256


def shard(rank):
    rng = np.random.default_rng(rank)
    ids = rng.integers(0, 20, (ROWS, 2)).astype(np.uint64) + np.uint64(1000 * rank)
    return SPEC.inputs(ids), (ids[:, 0] % 2 == 0).astype(np.float32)


def train(kv, keep):
    inputs, labels = shard(kv.rank)
    other, other_labels = shard(1 - kv.rank)
    scores = []
    model = FeedForward(nets.build("fm", SPEC), num_epoch=2, optimizer="adam", learning_rate=0.05, seed=0)
    if keep == "keep_rows_for" and kv.rank == 0:
        model.keep_rows_for(other)
    eval_data = (other, other_labels) if keep == "eval_data" and kv.rank == 0 else None
    own = NDArrayIter(inputs, {LABEL: labels}, batch_size=32)
    model.fit(own, eval_data=None if eval_data is None else NDArrayIter(eval_data[0], {LABEL: eval_data[1]},
                                                                         batch_size=64),
              eval_metric="auc", kvstore=kv,
              epoch_end_callback=lambda *_: scores.append(model.predict(NDArrayIter(other if kv.rank == 0 else inputs,
                                                                                    None, batch_size=64))))
    return scores


@pytest.mark.parametrize("keep", ["keep_rows_for", "eval_data"])
def test_an_epoch_end_score_reads_the_rows_every_worker_trained(ps_cluster, keep):
    with ps_cluster(num_servers=2, num_workers=2, kvtype="dist_sync") as cluster:
        worker0, worker1 = cluster.run_workers(lambda kv: train(kv, keep), timeout=120)
    for epoch in range(2):       # worker 0 on worker 1's rows == worker 1 on its own rows, after the same round
        np.testing.assert_allclose(worker0[epoch], worker1[epoch], rtol=1e-5, atol=1e-6)


def test_without_it_a_worker_reads_initial_rows_for_ids_it_never_pulled(ps_cluster):
    with ps_cluster(num_servers=1, num_workers=2, kvtype="dist_sync") as cluster:
        worker0, worker1 = cluster.run_workers(lambda kv: train(kv, None), timeout=120)
    assert np.abs(np.asarray(worker0[-1]) - np.asarray(worker1[-1])).max() > 1e-3

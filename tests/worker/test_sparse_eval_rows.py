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


def train_on_store(kv, kept_at_epoch_end):
    """Worker 0 trains with its tables on the store (a Spark fit whose servers write them) keeping worker 1's rows;
    worker 1 as ``train`` does. Worker 0 records the table ids its ``arg_params`` hold at each epoch end."""
    if kv.rank != 0:
        return train(kv, "keep_rows_for"), None
    other, _ = shard(1)
    scores = []
    model = FeedForward(nets.build("fm", SPEC), num_epoch=2, optimizer="adam", learning_rate=0.05, seed=0)
    model.tables_on_store = True
    model.keep_rows_for(other)

    def at_epoch_end(*_):
        kept_at_epoch_end.append(model.arg_params["embedding_weight"].ids.copy())
        scores.append(model.predict(NDArrayIter(other, None, batch_size=64)))
    inputs, labels = shard(0)
    model.fit(NDArrayIter(inputs, {LABEL: labels}, batch_size=32), eval_metric="auc", kvstore=kv,
              epoch_end_callback=at_epoch_end)
    return scores, model.arg_params


def test_with_the_tables_on_the_store_a_worker_pulls_the_kept_rows_alone(ps_cluster):
    """``tables_on_store``: worker 0 scores worker 1's rows as worker 1 does, but at each epoch end its ``arg_params``
    hold the rows of the ids it keeps alone, never those its own batches pulled; the end of the fit pulls none."""
    kept_at_epoch_end = []
    with ps_cluster(num_servers=2, num_workers=2, kvtype="dist_sync") as cluster:
        (worker0, after_fit), (worker1, _) = cluster.run_workers(lambda kv: train_on_store(kv, kept_at_epoch_end),
                                                                 timeout=120)
    for epoch in range(2):
        np.testing.assert_allclose(worker0[epoch], worker1[epoch], rtol=1e-5, atol=1e-6)
    other, _ = shard(1)
    kept = np.unique(np.concatenate([v.reshape(-1) for v in other.values() if v.dtype == np.uint64]).view(np.int64))
    assert len(kept_at_epoch_end) == 2
    for ids in kept_at_epoch_end:
        np.testing.assert_array_equal(ids, kept)
    assert "embedding_weight" not in after_fit


UNSEEN = np.arange(5000, 5010, dtype=np.uint64).reshape(5, 2)      # ids no worker trains: validation rows alone


def fit_validating_unseen_ids(kv):
    """A fit with its tables on the store, in batches of 48 (the last batch of an epoch padded with 32 earlier rows),
    whose epoch ends read and score rows of ids no batch trains."""
    inputs, labels = shard(kv.rank)
    model = FeedForward(nets.build("fm", SPEC), num_epoch=2, optimizer="adam", learning_rate=0.05, seed=0)
    model.tables_on_store = True
    model.keep_rows_for(SPEC.inputs(UNSEEN))
    model.fit(NDArrayIter(inputs, {LABEL: labels}, batch_size=48), eval_metric="auc", kvstore=kv,
              epoch_end_callback=lambda *_: model.predict(NDArrayIter(SPEC.inputs(UNSEEN), None, batch_size=5)))


def test_the_servers_count_each_id_by_its_occurrences_in_the_training_rows_and_no_validation_read():
    """Each server's count of an id is how often the training rows use it, once per epoch: the batches' counts
    travel with their pulls, padding rows are not counted, and the epoch ends' reads of the validation ids (peeks)
    neither count nor store a row."""
    from cluster import PSCluster
    with PSCluster(num_servers=2, num_workers=2, kvtype="dist_sync") as cluster:
        cluster.run_workers(fit_validating_unseen_ids, timeout=120)
        counted = {}
        for server in cluster.servers.values():
            ids, counts = server.tables["embedding_weight"].table.occurrences()
            counted.update(zip(ids.tolist(), counts.tolist()))
    ids = np.concatenate([shard(rank)[0]["ids"].reshape(-1) for rank in (0, 1)])
    occurring, occurrences = np.unique(ids, return_counts=True)
    assert counted == {int(i): 2.0 * n for i, n in zip(occurring.tolist(), occurrences.tolist())}
    assert not set(UNSEEN.reshape(-1).tolist()) & set(counted)

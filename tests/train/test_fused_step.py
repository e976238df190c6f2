"""The per-step work of a CTR training step around the executor: the batch-local re-index as one compiled pass
(equal to np.unique's, shared by the tables that read the same fields), and train metrics computed only when a
progress report is read."""
import numpy as np
import pytest

import sparkps.nets as nets
from sparkps.io.iterators import NDArrayIter
from sparkps.kvstore.local import LocalKVStore
from sparkps.metric import AUC
from sparkps.train.batch_index import IdSet, batch_positions
from sparkps.train.feedforward import FeedForward
from sparkps.train.sparse_batch import SparseBatch


def reference(ids, padding):
    keep = ids != padding if padding is not None else np.ones(ids.shape, bool)
    unique, inverse = np.unique(ids[keep], return_inverse=True)
    positions = np.full(ids.shape, -1.0, np.float32)
    positions[keep] = inverse
    return unique, positions


@pytest.mark.parametrize("padding", [None, -1, 2**64 - 1, 7])
def test_batch_positions_equal_numpys_unique_and_inverse(padding):
    rng = np.random.default_rng(5)
    pool = np.concatenate([rng.integers(-2**63, 2**63 - 1, 300, dtype=np.int64), [-1, 0, 7, 2**62, -2**63]])
    for size in (0, 1, 5, 200, 5000):
        ids = rng.choice(pool, size=size)
        positions = np.empty(size, np.float32)
        unique = batch_positions(ids, padding, positions)
        want_unique, want_positions = reference(ids, None if padding is None else np.array(padding).astype(np.int64))
        np.testing.assert_array_equal(unique, want_unique)
        np.testing.assert_array_equal(positions, want_positions)
    everything_absent = np.full(10, -1, np.int64)
    positions = np.empty(10, np.float32)
    assert batch_positions(everything_absent, -1, positions).size == 0 and (positions == -1).all()


def test_a_pull_reindexes_each_field_set_once_and_as_before():
    spec = nets.FeatureSpec(categorical=["a", "b", "c"], multi_valued={"tags": 3}, embedding_dim=4)
    rng = np.random.default_rng(2)
    ids = rng.integers(0, 20, (16, 3)).astype(np.uint64) * np.uint64(2**40 + 3)
    tags = [list(rng.integers(0, 9, rng.integers(0, 4))) for _ in range(16)]
    inputs = spec.inputs(ids, multi={"tags": tags})
    net = nets.build("fm", spec)
    sparse = SparseBatch.for_symbol(net, spec.input_shapes(16))
    kv = LocalKVStore()
    sparse.attach(net.simple_bind("cpu", grad_req="null", **spec.input_shapes(16), **sparse.table_shapes))
    sparse.init_tables(kv)
    local = sparse.pull(kv, inputs)
    assert sparse._unique["embedding_weight"] is sparse._unique["linear_embedding_weight"]
    assert sparse._seen["embedding_weight"] is sparse._seen["linear_embedding_weight"]      # kept once for both
    flat = np.concatenate([inputs["ids"].reshape(-1).view(np.int64), inputs["ids_tags"].reshape(-1).view(np.int64)])
    unique, positions = reference(flat, -1)
    np.testing.assert_array_equal(sparse._unique["embedding_weight"], unique)
    np.testing.assert_array_equal(local["ids"].reshape(-1), positions[:48])
    np.testing.assert_array_equal(local["ids_tags"].reshape(-1), positions[48:])
    np.testing.assert_array_equal(sparse._seen["embedding_weight"].sorted(), unique)
    assert local["ids"].dtype == np.float32 and local["ids_tags"].shape == (16, 3)


class CountingAUC(AUC):
    gets = 0

    def get(self):
        CountingAUC.gets += 1
        return super().get()


class ProgressStore(LocalKVStore):
    """A local store that keeps each progress report's metrics (as a cluster's store receives them)."""

    def __init__(self):
        super().__init__()
        self.reports = []

    def report_progress(self, epoch=None, nbatch=None, samples=None, metrics=None, force=False):
        self.reports.append(metrics)


def test_train_metrics_are_computed_only_when_a_report_reads_them():
    spec = nets.FeatureSpec(categorical=["a", "b"], embedding_dim=2)
    rng = np.random.default_rng(0)
    inputs = spec.inputs(rng.integers(0, 10, (400, 2)).astype(np.uint64))
    labels = (rng.random(400) < 0.4).astype(np.float32)
    store, metric = ProgressStore(), CountingAUC()
    model = FeedForward(nets.build("lr", spec), num_epoch=1, optimizer="sgd", learning_rate=0.1, seed=0)
    model.fit(NDArrayIter(inputs, {"ctr_label": labels}, batch_size=20), eval_metric=metric, kvstore=store)
    assert len(store.reports) == 20
    assert CountingAUC.gets <= 1          # the epoch's log line; never once per step
    last = dict(store.reports[-1])
    assert set(last) == {"auc"} and 0 <= last["auc"] <= 1


def test_the_ids_a_fit_keeps_are_one_set_added_to_each_step():
    rng = np.random.default_rng(4)
    batches = [rng.integers(-2**63, 2**63 - 1, 50, dtype=np.int64) for _ in range(40)]
    batches += [rng.choice(np.concatenate(batches), 300) for _ in range(20)]      # repeats of held ids
    seen = IdSet(np.array([5, 5, -1]))
    for ids in batches:
        seen.add(ids)
    want = np.unique(np.concatenate(batches + [np.array([5, -1])]))
    np.testing.assert_array_equal(seen.sorted(), want)
    assert seen.size == want.size
    spec = nets.FeatureSpec(categorical=["a"], embedding_dim=2)
    sparse = SparseBatch.for_symbol(nets.build("lr", spec), spec.input_shapes(4))
    for unique in batches:
        sparse._remember("linear_embedding_weight", unique)
    np.testing.assert_array_equal(sparse._seen["linear_embedding_weight"].sorted(), np.unique(np.concatenate(batches)))

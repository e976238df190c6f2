"""An id of a training step is checked once where it enters a process and trusted after: in the worker by
``rows.ids.batch_ids`` where the batch enters training (the kvstore, the RowSparse gradient and its merge take the
batch's ``CheckedIds``), on a server by ``ServedTable._ids`` as each request that carries it enters the table
(its pull, then its gradient's push), never again by the table, the gradient or a round's sum. Counted by wrapping
every id check where it is called, over the steps between the first and the last batch's end, on the local store
and on a cluster of one worker and one server (threads of this process)."""
import collections
import threading

import numpy as np
import pytest

from sparkps.io import NDArrayIter
from sparkps.rows.ids import CheckedIds, checked, trusted
from sparkps.rows.values import RowSparse
from sparkps.train.feedforward import FeedForward
from sparse_parity import FC, IDS, LABELS, PATIENT, network

STEPS = 8      # 64 samples in batches of 8, one epoch

# (module, name) of every function that checks ids, where it is called
CHECKS = [('sparkps.train.sparse_batch', 'batch_ids'), ('sparkps.worker.dist_rows', 'row_ids'),
          ('sparkps.kvstore.local_rows', 'row_ids'), ('sparkps.kvstore.local_rows', 'in_bounds'),
          ('sparkps.rows.table', 'row_ids'), ('sparkps.rows.values', 'value_ids')]


def counting(monkeypatch):
    """Wrap every id check; returns the counts. A check called inside another (the server's shard check runs the
    table's bound check) counts as that one, and value_ids given CheckedIds checks nothing: neither is counted."""
    import importlib

    from sparkps.server.tables.sparse_served import ServedTable
    counts, inside = collections.Counter(), threading.local()

    def wrapped(where, check):
        def counted(*args, **kwargs):
            ids = args[1] if where == 'ServedTable._ids' else args[0]
            outer = not getattr(inside, 'depth', 0)
            if outer and not isinstance(ids, CheckedIds):
                counts[where] += 1
            inside.depth = getattr(inside, 'depth', 0) + 1
            try:
                return check(*args, **kwargs)
            finally:
                inside.depth -= 1
        return counted
    for module, name in CHECKS:
        mod = importlib.import_module(module)
        monkeypatch.setattr(mod, name, wrapped(f"{module}.{name}", getattr(mod, name)))
    monkeypatch.setattr(ServedTable, '_ids', wrapped('ServedTable._ids', ServedTable._ids))
    return counts


def fit(kv, counts):
    """One epoch of the sparse parity model; the checks counted from the first batch's end to the last's."""
    window = {}

    def at_batch_end(param):
        if param.nbatch in (1, STEPS):
            window[param.nbatch] = collections.Counter(counts)
    model = FeedForward(network(True), num_epoch=1, optimizer='sgd', learning_rate=0.5,
                        arg_params={k: v.copy() for k, v in FC.items()})
    model.fit(NDArrayIter({'ids': IDS}, LABELS, batch_size=8), kvstore=kv, batch_end_callback=at_batch_end)
    return dict(window[STEPS] - window[1])


def test_a_step_on_the_local_store_checks_its_ids_once(monkeypatch):
    from sparkps import kvstore
    counts = counting(monkeypatch)
    assert fit(kvstore.create('local'), counts) == {'sparkps.train.sparse_batch.batch_ids': STEPS - 1}


def test_a_step_on_the_servers_checks_its_ids_once_in_the_worker_and_once_per_request_on_the_server(
        monkeypatch, ps_cluster):
    counts = counting(monkeypatch)
    with ps_cluster(num_servers=1, num_workers=1, kvtype='dist_sync', timeouts=PATIENT) as cluster:
        step = cluster.run_workers(lambda kv: fit(kv, counts), timeout=120)[0]
    assert step == {'sparkps.train.sparse_batch.batch_ids': STEPS - 1, 'ServedTable._ids': 2 * (STEPS - 1)}


def test_checked_ids_stay_checked_only_as_views_and_selections_and_cannot_be_written():
    ids = checked(np.array([4, 1, 7], np.int64), 10)
    for same in (ids[1:], ids[[2, 0]], ids.view(np.uint64), ids.reshape(-1), ids.copy()):
        assert isinstance(same, CheckedIds) and same.bound == 10
    for made in (ids + 1, np.unique(ids), np.concatenate([ids, ids]), ids.astype(np.int64), np.empty_like(ids)):
        assert type(made) is np.ndarray
    with pytest.raises(TypeError, match="checked ids are read-only"):
        ids[0] = 99
    with pytest.raises(TypeError, match="checked ids are read-only"):
        np.add(ids, 1, out=ids)
    assert trusted(ids, 10) is not None and trusted(ids, None) is not None
    assert trusted(ids, 5) is None and trusted(np.array([1, 2]), None) is None
    assert trusted(checked(np.array([3], np.int64)), 10) is None      # checked as any 64-bit id: not in [0, 10)


def test_a_row_sparse_value_keeps_checked_ids_through_merge_and_add():
    rows = np.ones((3, 2), np.float32)
    value = RowSparse(checked(np.array([5, 1, 5], np.int64), 8), rows, (8, 2))
    merged = value.merged()
    assert isinstance(merged.ids, CheckedIds) and merged.ids.bound == 8 and merged.ids.tolist() == [1, 5]
    both = merged.add(RowSparse(checked(np.array([2], np.int64)), np.ones((1, 2), np.float32), (8, 2)))
    assert isinstance(both.ids, CheckedIds) and both.ids.bound is None
    assert type(merged.add(RowSparse([3], np.ones((1, 2), np.float32), (8, 2))).ids) is np.ndarray

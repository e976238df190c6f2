"""Adam on a sparse table counts steps per row: a row updated in steps 1 and 5 only is at t=2 in step 5 (bias
correction sqrt(1 - beta2^2) / (1 - beta1^2)), not at the table's t=5 — on the local kvstore and on the servers
(dist_sync, 2 workers, 2 servers), equal to a float64 numpy lazy Adam to 1e-6.

Data: a documented schedule — three 64-bit ids; ``'rare'`` is pushed in steps 1 and 5, ``'every'`` in all five
steps, ``'once'`` in step 3; each worker's gradient for an id at a step is drawn from numpy Generator seed
(100 * worker + step). ``dist_sync`` sums the workers' gradients per id in a round, so the reference applies the sum.
"""
import numpy as np

from cluster import cluster_timeouts
from sparkps import kvstore, optimizer
from sparkps.rows.values import RowSparse, initial_rows

DIM, STEPS, LR, BETA1, BETA2, EPS = 4, 5, 0.05, 0.9, 0.999, 1e-8
IDS = {'rare': -3, 'every': 2 ** 62 + 11, 'once': 12345}
SCHEDULE = {1: ['rare', 'every'], 2: ['every'], 3: ['every', 'once'], 4: ['every'], 5: ['every', 'rare']}
PATIENT = cluster_timeouts(heartbeat_timeout=30.0)


def pushed(worker, step):
    """(ids, grads) worker ``worker`` pushes in ``step`` (1-based)."""
    names = SCHEDULE[step]
    rng = np.random.default_rng(100 * worker + step)
    ids = np.array([IDS[n] for n in names], np.int64)
    return ids, rng.normal(size=(len(names), DIM)).astype(np.float32)


def lazy_adam(num_workers):
    """The rows after STEPS steps of lazy Adam in float64, each row with its own step count."""
    ids = np.array(list(IDS.values()), np.int64)
    rows = {i: initial_rows('user', np.array([i]), DIM)[0].astype(np.float64) for i in ids}
    mean = {i: np.zeros(DIM) for i in ids}
    var = {i: np.zeros(DIM) for i in ids}
    t = dict.fromkeys(ids, 0)
    for step in range(1, STEPS + 1):
        total = {}
        for worker in range(num_workers):
            for i, g in zip(*pushed(worker, step)):
                total[i] = total.get(i, 0.0) + g.astype(np.float64)
        for i, g in total.items():
            t[i] += 1
            mean[i] = BETA1 * mean[i] + (1 - BETA1) * g
            var[i] = BETA2 * var[i] + (1 - BETA2) * g * g
            lr_t = LR * np.sqrt(1 - BETA2 ** t[i]) / (1 - BETA1 ** t[i])
            rows[i] = rows[i] - lr_t * mean[i] / (np.sqrt(var[i]) + EPS)
    assert t[IDS['rare']] == 2 and t[IDS['every']] == 5 and t[IDS['once']] == 1
    return ids, np.stack([rows[i] for i in ids])


def train(kv, worker):
    """Create the table, first-pull every row, run the STEPS pushes, return the rows of IDS."""
    kv.init('user', RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM)))
    kv.set_optimizer(optimizer.create('adam', learning_rate=LR, beta1=BETA1, beta2=BETA2, epsilon=EPS))
    ids = np.array(list(IDS.values()), np.int64)
    kv.row_sparse_pull('user', out=np.empty((ids.size, DIM), np.float32), row_ids=ids)
    for step in range(1, STEPS + 1):
        step_ids, grads = pushed(worker, step)
        kv.push('user', RowSparse(step_ids, grads, (None, DIM)))
    out = np.empty((ids.size, DIM), np.float32)
    kv.row_sparse_pull('user', out=out, row_ids=ids)
    return out


def test_reference_differs_from_a_per_table_step_count():
    """The check has teeth: with the table's step count (t=5 in step 5) the 'rare' row ends elsewhere."""
    ids, rows = lazy_adam(1)
    rare = initial_rows('user', np.array([IDS['rare']]), DIM)[0].astype(np.float64)
    mean, var = np.zeros(DIM), np.zeros(DIM)
    for step, t in ((1, 1), (5, 5)):   # what a per-table count does: t=5 in step 5
        g = pushed(0, step)[1][SCHEDULE[step].index('rare')].astype(np.float64)
        mean, var = BETA1 * mean + (1 - BETA1) * g, BETA2 * var + (1 - BETA2) * g * g
        rare -= LR * np.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t) * mean / (np.sqrt(var) + EPS)
    assert np.abs(rare - rows[list(ids).index(IDS['rare'])]).max() > 1e-3


def test_local_kvstore_adam_counts_steps_per_row():
    kv = kvstore.create('local')
    rows = train(kv, 0)
    _, expected = lazy_adam(1)
    np.testing.assert_allclose(rows, expected, atol=1e-6, rtol=0)


def test_dist_sync_adam_counts_steps_per_row_on_two_servers(ps_cluster):
    with ps_cluster(num_servers=2, num_workers=2, kvtype='dist_sync', timeouts=PATIENT) as cluster:
        results = cluster.run_workers(lambda kv: train(kv, kv.rank), timeout=60)
    _, expected = lazy_adam(2)
    for rows in results:
        np.testing.assert_allclose(rows, expected, atol=1e-6, rtol=0)

"""A sparse table's optimizer sees the gradient the dense parameters' optimizer sees: the same ``rescale_grad``
(1 / batch, and 1 / workers under ``dist_sync``), clipping and learning-rate schedule for a table with its own
optimizer, and the table's own ``wd_mult``/``lr_mult`` (never those of parameter index 0) when it shares the job's
optimizer — on the local kvstore and on the servers (``dist_sync``, 2 workers, 2 servers), each against one step
of plain numpy.

Data: a documented generator — 24 rows of 3 ids from {0..5} (numpy Generator seed 3; each worker of two takes
every other row, so a round sums the same gradient the local step sees), 2 numeric columns (seed 4), labels of
seed 5. The network is a logistic regression ``sigmoid(sum of the rows' 1-wide table values + x . fc)``: the
table's gradient of id i is the sum over its occurrences of ``p - y``, the dense one ``(p - y) . x``.
"""
import numpy as np
import pytest

import sparkps.symbol as sym
from cluster import cluster_timeouts
from sparkps import optimizer as opt_mod
from sparkps.io import NDArrayIter
from sparkps.lr_scheduler import PolyScheduler
from sparkps.rows.config import table_attr
from sparkps.rows.values import initial_rows
from sparkps.train.feedforward import FeedForward

ROWS, FIELDS, VOCAB, NUMERIC, LR = 24, 3, 6, 2, 0.5
IDS = np.random.default_rng(3).integers(0, VOCAB, size=(ROWS, FIELDS)).astype(np.int64)
X = np.random.default_rng(4).normal(size=(ROWS, NUMERIC)).astype(np.float32)
LABELS = (np.random.default_rng(5).random(ROWS) < 0.5).astype(np.float32)
FC = np.array([[0.3, -0.2]], np.float32)
SCALE = 0.8        # the table's rows start uniform in [-SCALE, SCALE): large enough for weight decay to show
PATIENT = cluster_timeouts(heartbeat_timeout=30.0)


def network(own=None, **weight_attrs):
    """Logistic regression over a 1-wide hashed table 'lin_weight' (its own optimizer ``own``) and fc."""
    attr = table_attr(init_scale=SCALE, **({'optimizer': own} if own is not None else {}))
    weight = sym.Variable('lin_weight', attr=attr, **weight_attrs)
    table = sym.contrib.HashEmbedding(sym.Variable('ids'), output_dim=1, weight=weight, pooling='sum')
    dense = sym.FullyConnected(sym.Variable('x'), num_hidden=1, no_bias=True, name='fc')
    return sym.LogisticRegressionOutput(table + dense, name='ctr')


def numpy_step(wd_table=0.0, wd_fc=0.0, clip=None, lr_table=LR, lr_fc=LR):
    """(table rows of ids 0..VOCAB-1, fc weight) after one plain sgd step over all ROWS rows."""
    rows = initial_rows('lin_weight', np.arange(VOCAB), 1, SCALE)[:, 0].astype(np.float64)
    fc = FC.astype(np.float64)
    p = 1 / (1 + np.exp(-(rows[IDS].sum(axis=1) + X.astype(np.float64) @ fc[0])))
    err = p - LABELS
    g_rows = np.bincount(IDS.reshape(-1), weights=np.repeat(err, FIELDS), minlength=VOCAB) / ROWS
    g_fc = err @ X.astype(np.float64) / ROWS
    if clip is not None:
        g_rows, g_fc = np.clip(g_rows, -clip, clip), np.clip(g_fc, -clip, clip)
    seen = np.isin(np.arange(VOCAB), IDS)      # lazy: a row no batch names keeps its value and decays not
    rows = np.where(seen, rows - lr_table * (g_rows + wd_table * rows), rows)
    return rows, fc - lr_fc * (g_fc + wd_fc * fc)


def fit(net, kvstore, rank=0, workers=1, **hyper):
    """One step of FeedForward (sgd, lr LR) over this worker's rows; returns (table rows of 0..VOCAB-1, fc)."""
    share = slice(rank, None, workers)
    model = FeedForward(net, num_epoch=1, optimizer='sgd', learning_rate=LR, arg_params={'fc_weight': FC.copy()},
                        **hyper)
    data = NDArrayIter({'ids': IDS[share], 'x': X[share]}, {'ctr_label': LABELS[share]}, batch_size=ROWS // workers)
    model.fit(data, kvstore=kvstore, eval_metric='mse')
    table = model.arg_params['lin_weight']
    order = np.argsort(table.ids)
    assert np.array_equal(table.ids[order], np.unique(IDS))
    rows = initial_rows('lin_weight', np.arange(VOCAB), 1, SCALE)[:, 0].astype(np.float64)
    rows[table.ids[order]] = table.rows[order, 0]
    return rows, model.arg_params['fc_weight']


CASES = {
    # a table with its own plain sgd: its gradient is rescaled as the job's (1/batch, 1/workers)
    'own-sgd': (lambda: network(own=opt_mod.create('sgd', learning_rate=LR)), {}, {}),
    # ... and clipped as the job's when it declares no clipping of its own
    'own-sgd-clipped': (lambda: network(own=opt_mod.create('sgd', learning_rate=LR)), {'clip_gradient': 0.02},
                        {'clip': 0.02}),
    # ... and follows the job's learning-rate schedule (poly over 4 updates: 3/4 of the rate in update 1)
    'own-sgd-scheduled': (lambda: network(own=opt_mod.create('sgd', learning_rate=LR)),
                          {'lr_scheduler': PolyScheduler(max_update=4, pwr=1)}, {'lr_table': LR * 0.75,
                                                                                 'lr_fc': LR * 0.75}),
    # the job's optimizer with weight decay on fc only (wd_mult 0 for the table, by name)
    'shared-wd-mult': (network, {'wd': 0.1, 'wd_mult': {'lin_weight': 0.0}}, {'wd_fc': 0.1}),
    # ... the same from the table Variable's __wd_mult__ attribute, and its __lr_mult__
    'shared-variable-mults': (lambda: network(wd_mult=0.0, lr_mult=0.5), {'wd': 0.1},
                              {'wd_fc': 0.1, 'lr_table': LR * 0.5}),
    # ... and fc's multiplier 0 (fc is parameter index 0) leaves the table's default decay alone
    'shared-index-0': (network, {'wd': 0.1, 'wd_mult': {'fc_weight': 0.0}}, {'wd_table': 0.1}),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_local_table_step_equals_numpy(case):
    make, hyper, expected = CASES[case]
    rows, fc = fit(make(), 'local', **hyper)
    want_rows, want_fc = numpy_step(**expected)
    np.testing.assert_allclose(rows, want_rows, atol=1e-6, rtol=0)
    np.testing.assert_allclose(fc[0], want_fc[0], atol=1e-6, rtol=0)


@pytest.mark.parametrize('case', ['own-sgd', 'own-sgd-clipped', 'own-sgd-scheduled', 'shared-wd-mult',
                                  'shared-index-0'])
def test_dist_sync_table_step_equals_numpy(ps_cluster, case):
    make, hyper, expected = CASES[case]
    with ps_cluster(num_servers=2, num_workers=2, kvtype='dist_sync', timeouts=PATIENT) as cluster:
        results = cluster.run_workers(lambda kv: fit(make(), kv, kv.rank, 2, **hyper), timeout=60)
    want_rows, want_fc = numpy_step(**expected)
    for rows, fc in results:
        np.testing.assert_allclose(rows, want_rows, atol=1e-6, rtol=0)
        np.testing.assert_allclose(fc[0], want_fc[0], atol=1e-6, rtol=0)


def test_the_reference_tells_the_cases_apart():
    """The checks have teeth: an unscaled, unclipped or wrongly decayed table step lands elsewhere."""
    base, _ = numpy_step()
    for other in (numpy_step(clip=0.02)[0], numpy_step(wd_table=0.1)[0], numpy_step(lr_table=LR * 0.5)[0]):
        assert np.abs(other - base).max() > 1e-3

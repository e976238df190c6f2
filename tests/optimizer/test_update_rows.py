"""Every optimizer owns its per-row update (``Optimizer.update_rows``), the one a sparse table runs
(:class:`sparkps.optimizer.rowwise.RowOptimizer`): by default the dense ``update`` on the gathered rows; Adam, which
declares ``'row_counts'``, overrides it with a bias correction from each row's own update count."""
import math

import numpy as np
import pytest

from sparkps import optimizer
from sparkps.errors import ConfigError
from sparkps.optimizer.abilities import ROW_COUNTS, ROW_WISE
from sparkps.optimizer.rowwise import RowOptimizer


def rows_and_grads(seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)


@pytest.mark.parametrize('name', sorted(n for n, cls in optimizer.OPTIMIZERS.items()
                                        if cls.declares(ROW_WISE) and not cls.declares(ROW_COUNTS)))
def test_the_default_per_row_update_is_the_dense_update_of_the_gathered_rows(name):
    weights, grads = rows_and_grads()
    dense, rows = optimizer.create(name, wd=0.01), optimizer.create(name, wd=0.01)
    expected = weights.copy()
    dense.update(0, expected, grads, dense.create_state(0, expected))
    rows.update_rows(0, weights, grads, rows.create_state(0, weights), np.array([5, 1, 2]))
    np.testing.assert_array_equal(weights, expected)
    assert rows.index_update_count == dense.index_update_count == {0: 1}


def test_adams_per_row_update_corrects_each_row_by_its_own_count():
    weights, grads = rows_and_grads()
    opt = optimizer.create('adam', learning_rate=0.1, beta1=0.9, beta2=0.999, epsilon=1e-8)
    counts = np.array([1, 2, 10])
    before = weights.copy()
    opt.update_rows(7, weights, grads, opt.create_state(7, weights), counts)
    for row, t in enumerate(counts):                  # zero state: m = 0.1 g, v = 0.001 g^2
        g = grads[row].astype(np.float64)
        lr_t = 0.1 * math.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        step = lr_t * (0.1 * g) / (np.sqrt(0.001 * g * g) + 1e-8)
        np.testing.assert_allclose(weights[row], before[row] - step, rtol=1e-5, atol=1e-6)
    assert opt.index_update_count == {7: 1}          # the parameter's own count drives the schedule


def test_a_row_optimizer_runs_the_classs_own_per_row_update():
    class Recording(optimizer.SGD):
        name = 'test_recording_sgd'
        seen = []

        def update_rows(self, index, weights, grads, states, counts):
            self.seen.append((index, counts.tolist()))
            super().update_rows(index, weights, grads, states, counts)

    optimizer.register(Recording)
    try:
        rows = RowOptimizer(optimizer.create('test_recording_sgd', param_idx2name={4: 'emb'}), table='emb')
        weights, grads = rows_and_grads()
        rows.update(weights, grads, rows.create_state(3, 4), np.array([0, 4, 1]))
        assert Recording.seen == [(4, [1, 5, 2])]
    finally:
        del optimizer.OPTIMIZERS['test_recording_sgd']


def test_a_class_declaring_row_counts_must_override_update_rows():
    class Counting(optimizer.Optimizer):
        name = 'test_counting'
        ABILITIES = frozenset((ROW_WISE, ROW_COUNTS))

    with pytest.raises(ConfigError, match="'test_counting' declares 'row_counts' but does not override update_rows"):
        optimizer.register(Counting)
    assert 'test_counting' not in optimizer.OPTIMIZERS

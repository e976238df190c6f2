"""Each optimizer class declares what it can do (``ABILITIES``, :mod:`sparkps.optimizer.abilities`) and its state
count (``STATES`` / ``num_states``); the dense table, the sparse tables and ``sparkps plan`` read the declarations, so
a new optimizer is one class plus its registration."""
import numpy as np
import pytest

from sparkps import optimizer
from sparkps.comm.protocol import Push
from sparkps.errors import ConfigError
from sparkps.optimizer.abilities import FUSED, KNOWN_ABILITIES, LAZY_ROWS, ROW_COUNTS, ROW_WISE
from sparkps.optimizer.rowwise import RowOptimizer, row_wise_names
from sparkps.optimizer.sparse import sparse_update
from sparkps.plan import constants as C
from sparkps.plan import model
from sparkps.rows.values import RowSparse
from sparkps.server.tables.dense import DenseTable

# every registered optimizer with the hyper-parameters that change its state count
SETTINGS = [(name, {}) for name in sorted(optimizer.OPTIMIZERS)] + [
    ('sgd', {'momentum': 0.9}), ('nag', {'momentum': 0.9}), ('rmsprop', {'centered': True}),
    ('signum', {'momentum': 0.0})]


@pytest.mark.parametrize('name,params', SETTINGS, ids=[f"{n}{p}" for n, p in SETTINGS])
def test_every_optimizer_declares_the_states_it_creates(name, params):
    opt = optimizer.create(name, **params)
    state = opt.create_state(0, np.zeros((3, 2), np.float32))
    assert opt.num_states() == (0 if state is None else len(state))
    if not params:
        assert type(opt).STATES == opt.num_states()


def test_the_shipped_optimizers_declare_what_the_name_lists_said():
    def declaring(ability):
        return {n for n, cls in optimizer.OPTIMIZERS.items() if cls.declares(ability)}
    assert declaring(FUSED) == declaring(ROW_WISE) == {'sgd', 'nag', 'adam', 'adagrad', 'rmsprop', 'adadelta', 'ftrl'}
    assert declaring(LAZY_ROWS) == {'sgd', 'adam', 'adagrad', 'ftrl'}
    assert declaring(ROW_COUNTS) == {'adam'}
    assert not optimizer.create('sgd', lazy_update=False).is_capable(LAZY_ROWS)
    assert optimizer.create('sgd').is_capable(LAZY_ROWS)
    with pytest.raises(ConfigError, match="unknown optimizer ability 'fussed'"):
        optimizer.create('sgd').is_capable('fussed')
    assert set(KNOWN_ABILITIES) == {FUSED, ROW_WISE, LAZY_ROWS, ROW_COUNTS}


class Halving(optimizer.Optimizer):
    """A test optimizer: ``h = (h + g) / 2;  weight -= lr * h`` — elementwise, with a per-row form."""
    name = 'test_halving'
    ABILITIES = frozenset((FUSED, ROW_WISE, LAZY_ROWS))
    STATES = 1

    def create_state(self, index, weight):
        return self._zeros_state(weight, 1)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        h, = state
        h += g
        h *= 0.5
        np.multiply(h, lr, out=tmp)
        weight -= tmp


@pytest.fixture
def halving():
    optimizer.register(Halving)
    yield Halving
    del optimizer.OPTIMIZERS[Halving.name]


def test_a_newly_registered_optimizer_is_picked_up_by_the_tables_and_the_planner(halving):
    config = optimizer.create('test_halving', learning_rate=1.0).to_config()
    # the dense table runs it once over a run of keys (the fused update), with per-key state views
    table = DenseTable()
    table.add_group([[0, 0, 2], [1, 0, 2]], [[0, [2]], [1, [2]]], np.zeros(4, np.float32))
    table.set_optimizer(config)
    table.apply(table.gradient(Push(keys=[0, 1], values=np.full(4, 2.0, np.float32))))
    assert table._fused and table.read(Push(keys=[0, 1])).tolist() == [-1.0] * 4
    # a sparse table runs its per-row form, with its declared state count
    rows = RowOptimizer(config)
    assert rows.num_states == 1 and 'test_halving' in row_wise_names()
    weights, state = np.zeros((2, 3), np.float32), rows.create_state(2, 3)
    rows.update(weights, np.full((2, 3), 2.0, np.float32), state, np.zeros(2, np.int64))
    np.testing.assert_array_equal(weights, -1.0)
    # a RowSparse gradient updates only its rows (lazy), the others keep value and state
    opt = optimizer.create('test_halving', learning_rate=1.0)
    weight = np.zeros((3, 2), np.float32)
    whole = opt.create_state(0, weight)
    whole[0][2] = 4.0
    sparse_update(opt, 0, weight, RowSparse(np.array([0]), np.full((1, 2), 2.0, np.float32), (3, 2)), whole)
    assert weight.tolist() == [[-1.0, -1.0], [0.0, 0.0], [0.0, 0.0]] and whole[0][2].tolist() == [4.0, 4.0]
    # the planner sizes it
    assert C.STATES['test_halving'] == 1 and 'test_halving' in C.STATES
    assert model.row_payload_bytes(4, 'test_halving') == model.row_payload_bytes(4, 'adagrad')


def test_an_optimizer_without_a_per_row_form_is_refused_by_a_sparse_table_naming_the_ones_that_have_it():
    with pytest.raises(ConfigError, match="table 'emb': optimizer 'lamb' has no per-row form; sparse tables take "
                                          r"\['adadelta', 'adagrad', 'adam', 'ftrl', 'nag', 'rmsprop', 'sgd'\]"):
        RowOptimizer('lamb', table='emb')
    assert 'lamb' not in C.STATES and C.STATES['sgd_momentum'] == 1 and C.STATES['rmsprop_centered'] == 3

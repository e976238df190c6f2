"""The server-facing side of a sparse table: INIT options, RowSparse sums of a sync round, apply, optimizer."""
import numpy as np
import pytest

from sparkps.comm.manifest import add_table_generation
from sparkps.errors import ConfigError, DataError
from sparkps.rows.table import SparseTable
from sparkps.rows.values import RowSparse
from sparkps.server.tables import sparse_checkpoint

SGD = {'name': 'sgd', 'params': {'learning_rate': 0.5}}


def served(**options):
    return SparseTable.from_init('user', {'dim': 3, **options})


def test_a_sync_round_sums_the_workers_gradients_and_applies_once():
    table, alone = served(optimizer=SGD), served(optimizer=SGD)
    ids = np.array([1, 2, 3], np.uint64)
    start = table.read_rows(ids)
    alone.read_rows(ids)
    g1 = table.gradient_rows(ids[:2], np.ones(6, np.float32))                  # flat, as it travels
    g2 = table.gradient_rows(ids[1:], np.full((2, 3), 2.0, np.float32))
    table.apply(g1.add(g2), scale=0.5)
    np.testing.assert_allclose(table.read_rows(ids) - start,
                               -0.5 * 0.5 * np.array([[1, 1, 1], [3, 3, 3], [2, 2, 2]]), rtol=1e-6)
    assert table.step == 1
    alone.apply(RowSparse(ids, 0.5 * np.array([[1, 1, 1], [3, 3, 3], [2, 2, 2]], np.float32), (None, 3)))
    np.testing.assert_allclose(table.read_rows(ids), alone.read_rows(ids), rtol=1e-6)


def test_the_job_optimizer_applies_unless_the_table_has_its_own():
    follows, own = served(), served(optimizer=SGD)
    follows.set_optimizer({'name': 'adagrad', 'params': {'learning_rate': 0.1}})
    own.set_optimizer({'name': 'adagrad', 'params': {'learning_rate': 0.1}})
    assert follows.optimizer.name == 'adagrad' and follows.store.states[0].shape == follows.store.values.shape
    assert own.optimizer.name == 'sgd'
    follows.read_rows([5])
    follows.apply(follows.gradient_rows([5], np.ones((1, 3), np.float32)))
    assert follows.store.states[0][follows.index.lookup(np.array([5], np.uint64))].tolist() == [[1.0, 1.0, 1.0]]


def test_bad_init_and_push_name_the_table_and_field():
    with pytest.raises(ConfigError, match=r"table 'user': unknown option\(s\) \['colour'\]"):
        served(colour='red')
    with pytest.raises(DataError, match=r"table 'user': field 'options'"):
        SparseTable.from_init('user', [3])
    with pytest.raises(DataError, match=r"table 'user': field 'grads' has shape \(5,\)"):
        served().gradient_rows([1, 2], np.ones(5, np.float32))


def test_a_served_table_loads_back_with_its_options(tmp_path):
    table = served(optimizer=SGD, min_count=1)
    table.read_rows(np.arange(20))
    manifest = add_table_generation({}, [sparse_checkpoint.save_table(str(tmp_path), table, 0, 0)])
    back = sparse_checkpoint.load_table(str(tmp_path), manifest, 'user', 0, 1)
    assert isinstance(back, SparseTable) and back.stats()['rows'] == 20
    assert back.options() == table.options() and back.own_optimizer
    np.testing.assert_array_equal(back.read_rows(np.arange(20)), table.read_rows(np.arange(20)))

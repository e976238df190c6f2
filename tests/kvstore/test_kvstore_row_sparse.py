"""LocalKVStore row-sparse keys: row_sparse_pull, RowSparse push (lazy, per-row optimizer state), rows of a
hashed table created on first pull from (table, id) alone, and the errors that name the key."""
import numpy as np
import pytest

from sparkps import kvstore, optimizer
from sparkps.errors import ConfigError, DataError, ShapeError
from sparkps.rows.values import RowSparse, initial_rows

RNG = np.random.default_rng(7)
TABLE = RNG.normal(size=(10, 4)).astype(np.float32)


def bounded_store(opt=None):
    kv = kvstore.create('local')
    kv.init('emb', RowSparse.from_dense(TABLE))
    if opt is not None:
        kv.set_optimizer(opt)
    return kv


def hashed_store():
    kv = kvstore.create('local')
    kv.init('user', RowSparse(np.empty(0, np.int64), np.empty((0, 4), np.float32), (None, 4)))
    return kv


def test_store_declares_the_row_sparse_capability():
    kv = kvstore.create('local')
    assert kv.is_capable('row_sparse') and kv.is_capable(kv.ROW_SPARSE)


def test_row_sparse_pull_gives_rows_in_the_order_asked():
    kv = bounded_store()
    out = np.empty((3, 4), np.float32)
    kv.row_sparse_pull('emb', out=out, row_ids=np.array([7, 2, 7]))
    np.testing.assert_array_equal(out, TABLE[[7, 2, 7]])
    value = RowSparse(np.empty(0, np.int64), np.empty((0, 4), np.float32), (10, 4))
    kv.row_sparse_pull('emb', out=value, row_ids=np.array([1, 9]))
    np.testing.assert_array_equal(value.ids, [1, 9])
    np.testing.assert_array_equal(value.rows, TABLE[[1, 9]])


def test_push_without_optimizer_replaces_only_the_named_rows_summing_repeats():
    kv = bounded_store()
    kv.push('emb', RowSparse([3, 5, 3], np.ones((3, 4), np.float32), (10, 4)))
    full = np.empty_like(TABLE)
    kv.pull('emb', out=full)
    expected = TABLE.copy()
    expected[3], expected[5] = 2, 1
    np.testing.assert_array_equal(full, expected)


@pytest.mark.parametrize('name,kwargs', [('sgd', {}), ('adagrad', {}), ('sgd', {'momentum': 0.9}),
                                         ('adam', {'learning_rate': 0.01}), ('ftrl', {})])
def test_lazy_update_equals_the_dense_update_on_the_touched_rows(name, kwargs):
    """Each row keeps its own state: two pushes touching different rows, compared with the optimizer applied to
    just those rows densely; rows never named stay as they were."""
    kv = bounded_store(optimizer.create(name, learning_rate=kwargs.pop('learning_rate', 0.1), **kwargs))
    reference = optimizer.create(name, learning_rate=0.1 if name != 'adam' else 0.01, **kwargs)
    ref_rows = TABLE[[1, 4, 6]].copy()
    ref_state = reference.create_state(0, ref_rows)
    grads = [RNG.normal(size=(3, 4)).astype(np.float32) for _ in range(2)]
    kv.push('emb', RowSparse([1, 4, 6], grads[0], (10, 4)))
    reference.update(0, ref_rows, grads[0], ref_state)
    kv.push('emb', RowSparse([6, 1, 4], grads[1][[2, 0, 1]], (10, 4)))
    reference.update(0, ref_rows, grads[1], ref_state)
    full = np.empty_like(TABLE)
    kv.pull('emb', out=full)
    np.testing.assert_allclose(full[[1, 4, 6]], ref_rows, rtol=1e-6, atol=1e-7)
    untouched = [i for i in range(10) if i not in (1, 4, 6)]
    np.testing.assert_array_equal(full[untouched], TABLE[untouched])


def test_an_optimizer_without_a_per_row_form_is_refused_naming_the_table():
    """The local store takes the optimizers the servers' tables take (sparkps/optimizer/rowwise.py)."""
    kv = bounded_store(optimizer.create('signum', learning_rate=0.1))
    with pytest.raises(ConfigError, match="table 'emb': optimizer 'signum' has no per-row form"):
        kv.push('emb', RowSparse([1], np.ones((1, 4), np.float32), (10, 4)))


def test_adam_bias_correction_counts_each_rows_own_updates():
    """Row 1 pushed in steps 1 and 3, row 2 in steps 1-3: at step 3 row 1 is corrected as t=2, which equals a
    dense Adam that only ever saw row 1's two gradients."""
    kv = bounded_store(optimizer.create('adam', learning_rate=0.05))
    reference = optimizer.create('adam', learning_rate=0.05)
    ref_row = TABLE[[1]].copy()
    ref_state = reference.create_state(0, ref_row)
    grads = [RNG.normal(size=(2, 4)).astype(np.float32) for _ in range(3)]
    for step, grad in enumerate(grads):
        ids = [1, 2] if step != 1 else [2]
        kv.push('emb', RowSparse(ids, grad[:len(ids)] if step != 1 else grad[1:], (10, 4)))
        if step != 1:
            reference.update(0, ref_row, grad[:1], ref_state)
    out = np.empty((1, 4), np.float32)
    kv.row_sparse_pull('emb', out=out, row_ids=np.array([1]))
    np.testing.assert_allclose(out, ref_row, rtol=1e-6, atol=1e-7)


def test_hashed_rows_are_created_on_first_pull_from_table_and_id_only():
    ids = np.array([2 ** 63 - 1, -5, 123456789012345], dtype=np.int64)
    first, second = hashed_store(), hashed_store()
    out_a, out_b = np.empty((3, 4), np.float32), np.empty((3, 4), np.float32)
    first.row_sparse_pull('user', out=out_a, row_ids=ids)
    second.row_sparse_pull('user', out=np.empty((1, 4), np.float32), row_ids=ids[[2]])   # another order
    second.row_sparse_pull('user', out=out_b, row_ids=ids)
    np.testing.assert_array_equal(out_a, out_b)
    np.testing.assert_array_equal(out_a, initial_rows('user', ids, 4))
    assert np.abs(out_a).max() <= 0.01 and len(np.unique(out_a)) == out_a.size
    assert not np.array_equal(initial_rows('item', ids, 4), out_a)       # the table is part of the seed


def test_hashed_table_takes_uint64_ids_bit_for_bit_and_updates():
    kv = hashed_store()
    kv.set_optimizer(optimizer.create('sgd', learning_rate=1.0))
    big = np.array([2 ** 64 - 1], dtype=np.uint64)           # the same 64 bits as int64 -1
    before = np.empty((1, 4), np.float32)
    kv.row_sparse_pull('user', out=before, row_ids=big)
    kv.push('user', RowSparse(np.array([-1]), np.ones((1, 4), np.float32), (None, 4)))
    after = np.empty((1, 4), np.float32)
    kv.row_sparse_pull('user', out=after, row_ids=big)
    np.testing.assert_allclose(after, before - 1, rtol=1e-6)
    value = kv.table_value('user')
    np.testing.assert_array_equal(value.ids, [-1])


def test_errors_name_the_key():
    kv = bounded_store()
    with pytest.raises(DataError, match="table 'emb': id 10 is outside"):
        kv.row_sparse_pull('emb', out=np.empty((1, 4), np.float32), row_ids=np.array([10]))
    with pytest.raises(ShapeError, match="table 'emb' has rows of width 4"):
        kv.push('emb', RowSparse([1], np.ones((1, 3), np.float32), (10, 3)))
    with pytest.raises(ShapeError, match="'emb' gives 2 rows of width 4"):
        kv.row_sparse_pull('emb', out=np.empty((2, 3), np.float32), row_ids=np.array([1, 2]))
    with pytest.raises(ConfigError, match="'user' is hashed"):
        hashed = hashed_store()
        hashed.pull('user', out=np.empty((3, 4)))
    kv.init('dense', np.zeros(3))
    with pytest.raises(ConfigError, match="key 'dense' is dense"):
        kv.row_sparse_pull('dense', out=np.empty((1, 3)), row_ids=np.array([0]))
    with pytest.raises(ConfigError, match="'dense' mixes row-sparse and dense"):
        kv.push('dense', RowSparse([0], np.ones((1, 3)), (3, 3)))
    kv._set_updater(lambda key, grad, weight: None)
    with pytest.raises(ConfigError, match="'emb' needs set_optimizer"):
        kv.push('emb', RowSparse([1], np.ones((1, 4), np.float32), (10, 4)))


def test_initial_rows_are_pinned_for_good():
    """Workers and servers create rows with this formula; a change would make checkpoints and shards disagree."""
    rows = initial_rows('user', np.array([0, -1]), 3, scale=1.0, dtype=np.float64)
    np.testing.assert_allclose(rows, [[-0.1607608, -0.9471511, 0.04476582],
                                      [0.14162492, -0.49679948, 0.54399193]], atol=1e-7)


def test_a_growing_hashed_table_keeps_every_row_and_its_state():
    """Batches of new and known ids past several capacity doublings: the held rows equal a dense table over the
    same ids, updated row by row with its own AdaGrad state."""
    pool = np.random.default_rng(4).integers(-2 ** 63, 2 ** 63 - 1, size=5000, dtype=np.int64)
    kv = hashed_store()
    kv.set_optimizer(optimizer.create('adagrad', learning_rate=0.1))
    reference_opt = optimizer.create('adagrad', learning_rate=0.1)
    dense = initial_rows('user', pool, 4)
    history = np.zeros_like(dense)
    rng = np.random.default_rng(5)
    for _ in range(6):
        picked = np.unique(rng.integers(0, pool.size, size=900))
        out = np.empty((picked.size, 4), np.float32)
        kv.row_sparse_pull('user', out=out, row_ids=pool[picked])
        np.testing.assert_allclose(out, dense[picked], rtol=1e-6, atol=1e-7)
        grad = rng.normal(size=(picked.size, 4)).astype(np.float32)
        kv.push('user', RowSparse(pool[picked], grad, (None, 4)))
        rows, state = dense[picked], (history[picked],)
        reference_opt.update(0, rows, grad, state)
        dense[picked], history[picked] = rows, state[0]
    value = kv.table_value('user')
    assert value.ids.size > 2048 and np.all(np.diff(value.ids) > 0)
    held = np.searchsorted(np.sort(pool), value.ids)
    order = np.argsort(pool)
    np.testing.assert_allclose(value.rows, dense[order][held], rtol=1e-5, atol=1e-6)

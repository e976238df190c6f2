"""The one sparse table, without sockets (a server shard, the local kvstore's table): first-pull creation, lazy
per-row updates, the frozen reads of prediction, occurrence counts, bad input."""
import numpy as np
import pytest

from sparkps import optimizer as optim
from sparkps.errors import ConfigError, DataError
from sparkps.optimizer.rowwise import RowOptimizer
from sparkps.rows.ids import row_ids, shard_of
from sparkps.rows.init import RowInitializer
from sparkps.rows.table import SparseTable

OPTIMIZERS = [('sgd', {'learning_rate': 0.1, 'momentum': 0.9}),
              ('adagrad', {'learning_rate': 0.1, 'wd': 0.01}),
              ('adam', {'learning_rate': 0.05}),
              ('adam', {'learning_rate': 0.5, 'wd': 0.1, 'clip_gradient': 0.5, 'clip_weights': 0.3}),
              ('ftrl', {'learning_rate': 0.1, 'lamda1': 0.001}),
              ('nag', {'learning_rate': 0.1, 'momentum': 0.5, 'rescale_grad': 0.5, 'clip_gradient': 1.0})]


def table(name='emb', dim=4, **options):
    return SparseTable(name, dim, optimizer=options.pop('optimizer', {'name': 'sgd',
                                                                       'params': {'learning_rate': 1.0}}), **options)


def test_first_pull_creates_the_same_row_for_any_server_count():
    ids = row_ids(np.arange(-200, 200) * 7919, table='emb')
    whole = table(init={'kind': 'normal', 'sigma': 0.5}).pull(ids)
    shards = shard_of(ids, 3)
    parts = [table(init={'kind': 'normal', 'sigma': 0.5}) for _ in range(3)]
    for s, part in enumerate(parts):
        np.testing.assert_array_equal(part.pull(ids[shards == s]), whole[shards == s])
    assert sum(p.stats()['rows'] for p in parts) == ids.size
    assert abs(whole.std() - 0.5) < 0.05 and abs(whole.mean()) < 0.05


def test_initial_rows_depend_on_table_and_id_only():
    ids = np.array([5, 6], np.uint64)
    first = table('a').pull(ids)
    np.testing.assert_array_equal(table('a').pull(ids[::-1])[::-1], first)
    assert not np.array_equal(table('b').pull(ids), first)
    assert not np.array_equal(first[0], first[1])
    uniform = RowInitializer('uniform', scale=0.2)(1, np.arange(20000, dtype=np.uint64), 8)
    assert uniform.min() >= -0.2 and uniform.max() < 0.2 and abs(uniform.mean()) < 0.005


def test_push_sums_gradients_per_id_and_changes_only_named_rows():
    t = table(dim=2)
    before = t.pull([1, 2, 3])
    t.push(np.array([1, 3, 1]), np.array([[1, 0], [0, 1], [2, 0]], np.float32))
    after = t.pull([1, 2, 3])
    np.testing.assert_allclose(after - before, [[-3, 0], [0, 0], [0, -1]], atol=1e-6)


@pytest.mark.parametrize('name, params', OPTIMIZERS)
def test_rowwise_update_equals_the_dense_optimizer_on_those_rows(name, params):
    rng = np.random.default_rng(3)
    t = table(dim=3, optimizer={'name': name, 'params': params})
    ids = np.array([11, 22, 33])
    dense_opt = optim.create(name, **params)
    weight = t.pull(ids).copy()
    state = dense_opt.create_state(0, weight)
    untouched = t.pull([44])
    for _ in range(5):
        grad = rng.normal(size=(3, 3)).astype(np.float32)
        t.push(ids, grad)
        dense_opt.update(0, weight, grad, state)
    np.testing.assert_allclose(t.pull(ids), weight, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(t.pull([44]), untouched)


def test_adam_rows_keep_their_own_step_count():
    t = table(dim=2, optimizer={'name': 'adam', 'params': {'learning_rate': 0.1}})
    t.pull([1, 2])
    for _ in range(3):
        t.push([1], np.ones((1, 2), np.float32))
    t.push([2], np.ones((1, 2), np.float32))
    slots = t.index.lookup(np.array([1, 2], np.uint64))
    assert t.store.updates[slots].tolist() == [3, 1]
    fresh = table(dim=2, optimizer={'name': 'adam', 'params': {'learning_rate': 0.1}})
    start = fresh.pull([2])
    fresh.push([2], np.ones((1, 2), np.float32))
    np.testing.assert_allclose(t.pull([2]) - start, fresh.pull([2]) - start, rtol=1e-6)


def test_an_optimizer_without_a_per_row_form_is_refused():
    class LayerWise(optim.Optimizer):
        name = 'layerwise'

    with pytest.raises(ConfigError, match="optimizer 'layerwise' has no per-row form"):
        RowOptimizer(LayerWise())
    with pytest.raises(ConfigError, match="unknown optimizer 'nonexistent'"):
        RowOptimizer('nonexistent')
    with pytest.raises(ConfigError, match="table 'user': optimizer 'signum' has no per-row form"):
        SparseTable('user', dim=2, optimizer={'name': 'signum', 'params': {}})


def test_min_count_admits_an_id_after_enough_sightings():
    t = table(min_count=3)
    assert (t.pull([7, 7]) == 0).all()           # one pull naming it twice: counted twice, not admitted
    t.push([7], np.ones((1, 4), np.float32))     # its gradient is dropped: there is no row
    assert t.stats()['rows'] == 0
    row = t.pull([7])
    assert t.stats()['rows'] == 1 and t.stats()['admitted'] == 1
    np.testing.assert_array_equal(row, table().pull([7]))
    t.pull([8], counts=np.array([3]))
    assert t.stats()['rows'] == 2


def test_ttl_evicts_rows_unseen_for_longer():
    t = table(ttl=2)
    t.pull([1, 2])
    t.tick()
    t.pull([1])
    t.tick()
    t.tick()                                     # step 3: id 2 last seen at 0 (> 2 ago), id 1 at 1
    assert t.index.lookup(np.array([1, 2], np.uint64)).tolist()[1] == -1
    assert t.stats()['evicted_ttl'] == 1 and t.stats()['rows'] == 1


def test_decayed_count_under_threshold_evicts():
    t = table(decay=0.5, min_decayed=1.0, sweep_every=1)
    t.pull([1], counts=np.array([8]))
    t.pull([2], counts=np.array([2]))
    t.tick()                                     # 8 * 0.5 = 4, 2 * 0.5 = 1: both stay
    assert t.stats()['rows'] == 2
    t.tick()                                     # 2, 0.5: id 2 goes
    assert t.stats()['rows'] == 1 and t.stats()['evicted_decay'] == 1
    t.pull([1])                                  # 2 + 1 = 3 at step 2
    slot = t.index.lookup(np.array([1], np.uint64))
    assert t.store.seen[slot].tolist() == [3.0]


def test_capacity_evicts_the_least_recently_seen_rows():
    t = table(capacity=16)
    for step in range(16):
        t.pull([step])
        t.tick()
    t.pull([0])                                  # id 0 is now recent; ids 1.. are the oldest
    t.pull([100])
    held = t.index.lookup(np.arange(17, dtype=np.uint64).tolist() + [100])
    assert held[0] >= 0 and held[1] == -1 and held[-1] >= 0
    assert t.stats()['rows'] <= 16 and t.stats()['evicted_lru'] >= 1


def test_capacity_in_fail_mode_names_the_table_and_field():
    t = table('clicks', capacity=4, on_full='fail')
    t.pull([1, 2, 3])
    with pytest.raises(DataError, match=r"table 'clicks': field 'capacity' \(4 rows on this server\) is full"):
        t.pull([4, 5])
    assert t.stats()['rows'] == 3


def test_a_batch_larger_than_the_capacity_is_refused():
    t = table('clicks', capacity=2)
    with pytest.raises(DataError, match=r"table 'clicks': field 'capacity'"):
        t.pull([1, 2, 3])


@pytest.mark.parametrize('grads, words', [
    (np.ones((2, 5), np.float32), r"field 'grads' has shape \(2, 5\), rows of width dim=4"),
    (np.ones((3, 4), np.float32), r"field 'grads' has 3 rows for 2 ids"),
    (np.ones((2, 4), np.int64), r"field 'grads' must be floats"),
])
def test_bad_gradients_name_the_table_and_field(grads, words):
    with pytest.raises(DataError, match=r"table 'emb': " + words):
        table().push([1, 2], grads)


def test_bad_ids_on_pull_and_push_name_the_table():
    t = table('item', input_dim=100)
    with pytest.raises(DataError, match=r"table 'item': field 'ids' must hold integers.*NaN"):
        t.pull(np.array([1.0, np.nan]))
    with pytest.raises(DataError, match=r"table 'item': field 'ids' holds 100, outside input_dim 100"):
        t.push([100], np.zeros((1, 4), np.float32))


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match=r"table 'emb': option 'on_full'"):
        table(on_full='drop')
    with pytest.raises(ConfigError, match=r"table 'emb': option 'min_count'"):
        table(min_count=0)
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['colour'\]"):
        SparseTable.from_options({'name': 'emb', 'dim': 4, 'colour': 1})


def test_stats_count_rows_bytes_and_events():
    t = table(dim=16, optimizer={'name': 'adagrad', 'params': {}})
    t.pull(np.arange(1000))
    stats = t.stats()
    assert stats['rows'] == 1000 and stats['admitted'] == 1000 and stats['evicted'] == 0
    assert stats['bytes'] >= 1000 * 16 * 4 * 2


def test_a_row_made_in_a_freed_slot_starts_with_fresh_state():
    t = table(dim=2, capacity=2, optimizer={'name': 'adagrad', 'params': {}})
    t.pull([1, 2])
    t.push([1, 2], np.ones((2, 2), np.float32))
    t.tick()
    t.pull([3])                                     # evicts 1 or 2 and reuses its slot
    slot = t.index.lookup(np.array([3], np.uint64))
    assert t.store.states[0][slot].tolist() == [[0.0, 0.0]] and t.store.updates[slot].tolist() == [0]
    np.testing.assert_array_equal(t.store.values[slot], table(dim=2).pull([3]))


def test_a_frozen_table_reads_unseen_ids_as_their_initial_rows_without_storing_or_counting():
    held = table(init={'kind': 'normal', 'sigma': 0.3})
    ids = np.array([3, 11], np.uint64)
    rows = held.pull(ids)
    held.frozen = True
    unseen = np.array([11, 2**63 + 5, 3], np.uint64)
    read = held.pull(unseen)
    np.testing.assert_array_equal(read[[0, 2]], rows[::-1])
    np.testing.assert_array_equal(read[1], RowInitializer('normal', sigma=0.3).rows('emb', unseen[1:2], 4)[0])
    assert held.stats()['rows'] == 2
    np.testing.assert_array_equal(held.occurrences()[1], [1, 1])     # frozen reads are not counted
    with pytest.raises(ConfigError, match="table 'emb' is read-only"):
        held.push(ids, np.ones((2, 4), np.float32))


def test_occurrences_count_every_naming_by_a_pull_and_hold_counts_none():
    counted = table()
    counted.pull(np.array([9, 4, 9], np.uint64))
    counted.pull(np.array([4], np.uint64), counts=np.array([5]))
    counted.hold(np.array([7, 7], np.uint64))
    ids, seen = counted.occurrences()
    assert ids.tolist() == [4, 7, 9] and seen.tolist() == [6.0, 0.0, 2.0]


def test_put_rows_sets_rows_and_a_float64_table_keeps_its_dtype():
    wide = SparseTable('emb', 2, dtype=np.float64)
    ids = np.array([1, 8], np.uint64)
    wide.put_rows(ids, np.array([[0.1, 0.2], [0.3, 0.4]]))
    out = wide.pull(np.array([8, 1, 5], np.uint64))
    assert out.dtype == np.float64 and out[:2].tolist() == [[0.3, 0.4], [0.1, 0.2]]


def test_a_push_after_a_pull_of_the_same_ids_updates_those_rows_even_when_rows_went_between():
    ids = np.array([3, 9, 12], np.uint64)
    grads = np.ones((3, 4), np.float32)
    t, fresh = table(), table()
    t.pull(ids)
    t.drop(ids[:1])                          # its slot freed: the push must make the row again, not use the slot
    t.push_checked(ids, grads, create=True)
    fresh.push_checked(ids, grads, create=True)
    assert t.stats()['rows'] == 3
    np.testing.assert_array_equal(t.peek(ids), fresh.peek(ids))


def test_a_pull_into_out_gives_the_rows_of_a_pull_and_a_push_of_int64_sorted_ids_applies_each_once():
    ids = np.array([5, -7, -3], np.int64)[[1, 2, 0]].view(np.uint64)     # sorted as int64, not as uint64
    a, b = table(optimizer={'name': 'adam', 'params': {'learning_rate': 0.1}}), \
        table(optimizer={'name': 'adam', 'params': {'learning_rate': 0.1}})
    out = np.full((3, 4), np.nan, np.float32)
    assert a.pull_checked(ids, out=out) is out
    np.testing.assert_array_equal(out, b.pull(ids))
    grads = np.arange(12, dtype=np.float32).reshape(3, 4)
    a.push(ids, grads)
    order = np.argsort(ids)
    b.push(ids[order], grads[order])
    np.testing.assert_array_equal(a.peek(ids), b.peek(ids))
    assert a.store.updates[a.index.lookup(ids)].tolist() == [1, 1, 1]

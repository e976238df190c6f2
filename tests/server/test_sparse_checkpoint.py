"""Sparse table checkpoints: saved by some servers, loaded by any number, incremental saves and compaction."""
import os

import numpy as np
import pytest

from sparkps.comm.manifest import add_table_generation, next_table_generation
from sparkps.errors import DataError
from sparkps.rows.ids import row_ids, shard_of
from sparkps.rows.table import SparseTable
from sparkps.server.tables import sparse_checkpoint as ckpt

OPTIONS = {'name': 'user', 'dim': 3, 'optimizer': {'name': 'adam', 'params': {'learning_rate': 0.1}},
           'min_count': 2, 'ttl': 1000}


def cluster(num_servers):
    return [SparseTable.from_options(OPTIONS) for _ in range(num_servers)]


def train(servers, ids, steps, rng):
    """Pull and push ``ids`` through ``servers`` as workers would: each id goes to its shard."""
    ids = row_ids(ids, 'user')
    shards = shard_of(ids, len(servers))
    for _ in range(steps):
        for s, table in enumerate(servers):
            mine = ids[shards == s]
            table.pull(mine)
            table.push(mine, rng.normal(size=(mine.size, 3)).astype(np.float32))
            table.tick()


def save(directory, servers, manifest, delta=False):
    generation, can_delta = next_table_generation(manifest, 'user')
    described = [ckpt.save_table(directory, t, rank, generation, delta and can_delta)
                 for rank, t in enumerate(servers)]
    return add_table_generation(manifest, described)


def snapshot(servers):
    """{id: (row, state0, state1, updates, seen, last_seen)} over every server."""
    out = {}
    for t in servers:
        arrays = t.export_rows()
        for i, rid in enumerate(arrays['ids'].tolist()):
            out[rid] = tuple(np.asarray(arrays[k][i]).tolist()
                             for k in ('values', 'state0', 'state1', 'updates', 'seen', 'last_seen'))
    return out


def test_saved_on_two_servers_loads_on_three_with_rows_state_and_counters(tmp_path):
    rng = np.random.default_rng(0)
    two = cluster(2)
    train(two, np.arange(-40, 40) * 1_000_003, 3, rng)
    manifest = save(str(tmp_path), two, {})
    three = [ckpt.load_table(str(tmp_path), manifest, 'user', r, 3) for r in range(3)]
    assert snapshot(three) == snapshot(two)
    for r, table in enumerate(three):
        ids = table.export_rows()['ids']
        assert (shard_of(ids, 3) == r).all()
        assert table.step == 3 and table.optimizer.optimizer.num_update == 2   # step 1 admitted nothing
    # training goes on identically on 2 and on 3 servers
    train(two, np.arange(-40, 40) * 1_000_003, 2, np.random.default_rng(5))
    back = [ckpt.load_table(str(tmp_path), manifest, 'user', r, 2) for r in range(2)]
    train(back, np.arange(-40, 40) * 1_000_003, 2, np.random.default_rng(5))
    assert snapshot(back) == snapshot(two)


def test_admission_counts_survive_a_reload(tmp_path):
    one = cluster(1)
    one[0].pull([77])                              # seen once: not admitted (min_count 2)
    manifest = save(str(tmp_path), one, {})
    two = [ckpt.load_table(str(tmp_path), manifest, 'user', r, 2) for r in range(2)]
    owner = two[int(shard_of(row_ids([77]), 2)[0])]
    owner.pull([77])
    assert owner.stats()['rows'] == 1
    again = save(str(tmp_path / 'again'), two, {})
    reloaded = ckpt.load_table(str(tmp_path / 'again'), again, 'user', 0, 1)
    assert int(reloaded.sketch.estimate(row_ids([77]))[0]) == 2     # counted once per sighting, not per server


def test_incremental_saves_hold_changed_rows_and_evictions_and_compact_to_the_same_rows(tmp_path):
    rng = np.random.default_rng(1)
    servers = cluster(2)
    train(servers, np.arange(100), 2, rng)
    manifest = save(str(tmp_path), servers, {})
    train(servers, np.arange(90, 110), 2, rng)        # rows 90..99 change, 100..109 are new
    for t in servers:                                  # and 0..9 are removed
        t.drop(row_ids(np.arange(0, 10)))
    manifest = save(str(tmp_path), servers, manifest, delta=True)
    delta = manifest['tables']['user']['generations'][1]
    assert delta['delta'] and delta['rows'] == 20           # rows pulled (counters) or pushed since the base
    expected = snapshot(servers)
    assert len(expected) == 100 and not set(range(10)) & set(expected)
    loaded = [ckpt.load_table(str(tmp_path), manifest, 'user', r, 3) for r in range(3)]
    assert snapshot(loaded) == expected
    old_files = [f for g in manifest['tables']['user']['generations'] for f in g['files']]
    ckpt.compact(str(tmp_path), manifest, 'user', num_files=2)
    gens = manifest['tables']['user']['generations']
    assert len(gens) == 1 and not gens[0]['delta'] and gens[0]['rows'] == 100
    assert not any(os.path.exists(tmp_path / f) for f in old_files)
    compacted = [ckpt.load_table(str(tmp_path), manifest, 'user', r, 1) for r in range(1)]
    assert snapshot(compacted) == expected


def test_a_missing_table_or_unreadable_file_is_a_clear_error(tmp_path):
    manifest = save(str(tmp_path), cluster(1), {})
    with pytest.raises(DataError, match=r"manifest.json has no table 'item'"):
        ckpt.load_table(str(tmp_path), manifest, 'item', 0, 1)
    os.remove(tmp_path / manifest['tables']['user']['generations'][0]['files'][0])
    with pytest.raises(DataError, match=r"table 'user': cannot read checkpoint file"):
        ckpt.load_table(str(tmp_path), manifest, 'user', 0, 1)
    with pytest.raises(DataError, match=r"table 'user': a delta save needs an earlier base"):
        add_table_generation({}, [{'table': 'user', 'generation': 1, 'delta': True, 'file': 'f', 'rows': 0,
                                  'removed': 0, 'options': OPTIONS}])


def test_counters_of_rows_only_pulled_since_the_base_survive_an_incremental_save(tmp_path):
    servers = cluster(1)
    servers[0].pull([5, 5, 6])                         # 5 is admitted (named twice), 6 is not
    manifest = save(str(tmp_path), servers, {})
    servers[0].tick()
    servers[0].pull([5])
    manifest = save(str(tmp_path), servers, manifest, delta=True)
    assert snapshot([ckpt.load_table(str(tmp_path), manifest, 'user', 0, 1)]) == snapshot(servers)

"""Compaction of incremental sparse-table saves where a user reaches it: `sparkps compact-checkpoint DIR` (offline)
and ``DistKVStore.compact_checkpoint`` (the servers' COMMAND compact). Either way the base and deltas become one
base that loads to the same rows, state and counters; the replaced files go only after the manifest names the new
ones; bad input is one error naming the file at fault.

Data: a documented generator — ids ``0..99`` (then ``90..109``) times 1_000_003, gradients from numpy Generator
seeds 1 and 2, AdaGrad (lr 0.1, dim 3); tables of 2 servers routed by ``sparkps.rows.ids.shard_of``."""
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from cluster import cluster_timeouts
from sparkps import optimizer
from sparkps.cli import main
from sparkps.comm import manifest as manifests
from sparkps.comm.manifest import add_table_generation, next_table_generation
from sparkps.errors import DataError, RemoteError
from sparkps.rows.ids import row_ids, shard_of
from sparkps.rows.table import SparseTable
from sparkps.rows.values import RowSparse
from sparkps.server.tables import sparse_checkpoint as ckpt

DIM = 3
OPTIONS = {'name': 'user', 'dim': DIM, 'optimizer': {'name': 'adagrad', 'params': {'learning_rate': 0.1}}}
PATIENT = cluster_timeouts(heartbeat_timeout=30.0)


def train(servers, ids, seed):
    ids = row_ids(np.asarray(ids) * 1_000_003, 'user')
    shards, rng = shard_of(ids, len(servers)), np.random.default_rng(seed)
    for s, table in enumerate(servers):
        mine = ids[shards == s]
        table.pull(mine)
        table.push(mine, rng.normal(size=(mine.size, DIM)).astype(np.float32))
        table.tick()


def save(directory, servers, delta):
    """One save of every server into ``directory``, the manifest written as the worker writes it."""
    path = os.path.join(directory, manifests.MANIFEST)
    earlier = manifests.read_manifest(directory) if os.path.exists(path) else {}
    generation, can_delta = next_table_generation(earlier, 'user')
    described = [ckpt.save_table(directory, t, rank, generation, delta and can_delta) for rank, t in enumerate(servers)]
    return manifests.write_manifest(directory, [], None, described)


def snapshot(directory, num_servers=1):
    """{id: (row, state, updates, seen, last_seen)} of the checkpoint loaded onto ``num_servers`` servers."""
    saved = manifests.read_manifest(directory)
    out = {}
    for rank in range(num_servers):
        arrays = ckpt.load_table(directory, saved, 'user', rank, num_servers).export_rows()
        for i, rid in enumerate(arrays['ids'].tolist()):
            out[rid] = tuple(np.asarray(arrays[k][i]).tolist() for k in ('values', 'state0', 'updates', 'seen',
                                                                         'last_seen'))
    return out


@pytest.fixture
def incremental(tmp_path):
    """A checkpoint of 2 servers: a base and one delta (rows 90..99 changed, 100..109 new, 0..9 dropped)."""
    servers = [SparseTable.from_options(OPTIONS) for _ in range(2)]
    train(servers, np.arange(100), 1)
    save(str(tmp_path), servers, delta=False)
    train(servers, np.arange(90, 110), 2)
    for table in servers:
        table.drop(row_ids(np.arange(10) * 1_000_003))
    save(str(tmp_path), servers, delta=True)
    return str(tmp_path)


def files_of(directory):
    return sorted(f for f in os.listdir(directory) if f.startswith('sparse-'))


def test_compact_checkpoint_writes_one_base_then_the_manifest_then_removes_the_old_files(incremental):
    expected = snapshot(incremental, 3)
    assert len(expected) == 100
    old = files_of(incremental)
    assert len(old) == 4
    report = ckpt.compact_checkpoint(incremental)
    assert report == {'user': {'generations': 2, 'rows': 100, 'files': ['sparse-user-g2-s0.npz',
                                                                         'sparse-user-g2-s1.npz']}}
    assert files_of(incremental) == report['user']['files']          # as many files as servers saved it
    gens = manifests.read_manifest(incremental)['tables']['user']['generations']
    assert [(g['generation'], g['delta'], g['rows']) for g in gens] == [(2, False, 100)]
    assert snapshot(incremental, 3) == expected
    assert ckpt.compact_checkpoint(incremental) == {}                # one base already: nothing rewritten
    assert ckpt.compact_checkpoint(incremental, num_files=1)['user']['files'] == ['sparse-user-g3-s0.npz']
    assert snapshot(incremental, 2) == expected


def test_the_cli_command_compacts_and_reports(incremental):
    expected = snapshot(incremental, 2)
    result = CliRunner().invoke(main, ['compact-checkpoint', incremental, '--files', '3'])
    assert result.exit_code == 0, result.output
    assert result.output == "table user: 2 generations -> 1 base of 100 rows in 3 files\n"
    assert len(files_of(incremental)) == 3 and snapshot(incremental, 2) == expected
    again = CliRunner().invoke(main, ['compact-checkpoint', incremental, '--table', 'user', '--files', '3'])
    assert again.exit_code == 0 and again.output == f"{incremental}: every table is one base already\n"


def cli_error(*args):
    result = CliRunner().invoke(main, ['compact-checkpoint', *args])
    assert result.exit_code == 2, result.output   # bad input: exit 2 (docs/cli.md)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output                             # one message, no traceback
    return lines[0]


def test_a_directory_that_is_not_a_checkpoint_is_named(tmp_path):
    line = cli_error(str(tmp_path))
    assert line.startswith("sparkps compact-checkpoint: error: cannot read kvstore checkpoint "
                           f"{tmp_path / 'manifest.json'}")
    (tmp_path / 'manifest.json').write_text(json.dumps({'format': 'other'}))
    assert f"{tmp_path / 'manifest.json'} is not a sparkps kvstore checkpoint" in cli_error(str(tmp_path))
    manifests.write_manifest(str(tmp_path), [], None)
    assert cli_error(str(tmp_path)).endswith(f"{tmp_path / 'manifest.json'} has no sparse tables to compact")


def test_a_missing_delta_is_named_and_nothing_is_removed(incremental):
    before = files_of(incremental)
    os.remove(os.path.join(incremental, 'sparse-user-g1-s1.npz'))
    line = cli_error(incremental)
    assert "table 'user': cannot read checkpoint file " + os.path.join(incremental, 'sparse-user-g1-s1.npz') in line
    assert len(manifests.read_manifest(incremental)['tables']['user']['generations']) == 2
    remaining = [f for f in before if f != 'sparse-user-g1-s1.npz']
    assert all(f in files_of(incremental) for f in remaining)         # the base and the other delta are kept


def test_a_table_the_manifest_does_not_hold_is_named_with_the_manifest(incremental):
    line = cli_error(incremental, '--table', 'item')
    assert line.endswith(f"{os.path.join(incremental, 'manifest.json')} has no table 'item' (tables: ['user'])")


def test_a_file_of_another_table_is_named(incremental, tmp_path_factory):
    other = str(tmp_path_factory.mktemp('other'))
    items = SparseTable.from_options({**OPTIONS, 'name': 'item'})
    train([items], np.arange(5), 3)
    ckpt.save_table(other, items, 0, 0)
    os.replace(os.path.join(other, 'sparse-item-g0-s0.npz'), os.path.join(incremental, 'sparse-user-g1-s0.npz'))
    line = cli_error(incremental)        # its digest is not the one the manifest records
    assert f"table 'user': cannot read checkpoint file {os.path.join(incremental, 'sparse-user-g1-s0.npz')}: " \
           f"damaged" in line
    saved = manifests.read_manifest(incremental)          # without digests (a version 1 manifest): its content
    saved['version'] = 1
    for gen in saved['tables']['user']['generations']:
        del gen['digests']
    manifests.save_manifest(incremental, saved)
    line = cli_error(incremental)
    assert line.endswith(f"table 'user': checkpoint file {os.path.join(incremental, 'sparse-user-g1-s0.npz')} "
                         f"holds rows of table 'item'")


def test_a_file_that_does_not_fit_the_tables_options_is_named(incremental):
    saved = manifests.read_manifest(incremental)
    saved['tables']['user']['options']['dim'] = DIM + 1
    manifests.save_manifest(incremental, saved)
    with pytest.raises(DataError, match=r"table 'user': checkpoint file .*sparse-user-g0-s0.npz does not fit the "
                                        r"table's options in the manifest"):
        ckpt.compact_checkpoint(incremental)


def test_a_delta_without_its_base_is_refused():
    with pytest.raises(DataError, match=r"table 'user': a delta save needs an earlier base"):
        add_table_generation({}, [{'table': 'user', 'generation': 1, 'delta': True, 'file': 'f', 'rows': 0,
                                  'removed': 0, 'options': OPTIONS}])


def test_the_servers_compact_on_request_and_later_deltas_build_on_the_new_base(ps_cluster, tmp_path):
    """2 servers, 1 worker (dist_async): save, train, save again (a delta), compact through the servers, train,
    save a delta on the compacted base: the checkpoint loaded onto 3 servers holds the rows the servers hold."""
    path = str(tmp_path / 'ckpt')
    ids = np.arange(60, dtype=np.int64) * 1_000_003

    def step(kv, part, seed):
        grads = np.random.default_rng(seed).normal(size=(part.size, DIM)).astype(np.float32)
        kv.row_sparse_pull('user', out=np.empty((part.size, DIM), np.float32), row_ids=part)
        kv.push('user', RowSparse(part, grads, (None, DIM)))

    def work(kv):
        kv.init('user', RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM)))
        kv.set_optimizer(optimizer.create('adagrad', learning_rate=0.1))
        step(kv, ids[:40], 1)
        kv.save_checkpoint(path)
        step(kv, ids[30:], 2)
        kv.save_checkpoint(path)
        before = files_of(path)
        expected = snapshot(path, 3)
        compacted = kv.compact_checkpoint(path)
        assert [(g['delta'], g['rows']) for g in compacted['tables']['user']['generations']] == [(False, 60)]
        assert files_of(path) == ['sparse-user-g2-s0.npz', 'sparse-user-g2-s1.npz'] and len(before) == 4
        assert snapshot(path, 3) == expected
        assert kv.compact_checkpoint(path) == manifests.read_manifest(path)      # nothing left to merge
        step(kv, ids[::7], 3)
        kv.save_checkpoint(path)
        gens = manifests.read_manifest(path)['tables']['user']['generations']
        assert [(g['generation'], g['delta']) for g in gens] == [(2, False), (3, True)]
        held = np.empty((ids.size, DIM), np.float32)
        kv.row_sparse_pull('user', out=held, row_ids=ids)
        return held

    with ps_cluster(num_servers=2, num_workers=1, kvtype='dist_async', timeouts=PATIENT) as cluster:
        held, = cluster.run_workers(work, timeout=60)
    loaded = snapshot(path, 3)
    np.testing.assert_array_equal(np.array([loaded[int(i)][0] for i in ids.view(np.uint64)], np.float32), held)


def test_a_server_compaction_of_a_missing_delta_is_one_error_naming_the_file(ps_cluster, tmp_path):
    path = str(tmp_path / 'ckpt')
    ids = np.arange(20, dtype=np.int64)

    def work(kv):
        kv.init('user', RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM)))
        kv.set_optimizer(optimizer.create('sgd', learning_rate=0.1))
        for _ in range(2):
            kv.row_sparse_pull('user', out=np.empty((ids.size, DIM), np.float32), row_ids=ids)
            kv.push('user', RowSparse(ids, np.ones((ids.size, DIM), np.float32), (None, DIM)))
            kv.save_checkpoint(path)
        os.remove(os.path.join(path, 'sparse-user-g1-s1.npz'))
        with pytest.raises(RemoteError) as caught:
            kv.compact_checkpoint(path)
        return str(caught.value)

    with ps_cluster(num_servers=2, num_workers=1, kvtype='dist_async', timeouts=PATIENT) as cluster:
        message, = cluster.run_workers(work, timeout=60)
    assert message.count("cannot read checkpoint file") == 1, message
    assert os.path.join(path, 'sparse-user-g1-s1.npz') in message

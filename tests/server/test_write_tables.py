"""COMMAND write_tables: each server writes its own shard of every sparse table (sparkps.rows.shards)."""
import numpy as np
import pytest

from cluster import RecordingResponder
from sparkps.comm import protocol
from sparkps.comm.message import Message
from sparkps.errors import DataError, MalformedMessage
from sparkps.rows import shards
from sparkps.rows.ids import row_ids, shard_of
from sparkps.server.kvserver import KVServer
from sparkps.worker.server_commands import merged_shards

OPTIONS = {'dim': 3, 'optimizer': {'name': 'sgd', 'params': {'learning_rate': 0.5}}}


class _Postoffice:
    worker_ids = (5,)


_Responder = RecordingResponder


def handle(server, cmd, meta, arrays=()):
    responder = _Responder()
    server.handle(Message(cmd, sender=5, meta=meta, arrays=list(arrays)), responder)
    (reply, values), = responder.replies
    return reply, values


def trained_servers(ids, num_servers=2, tables_root=None):
    """Servers holding ``ids`` (uint64) pulled twice and pushed once, writing tables below ``tables_root``; returns
    them and {id: row}."""
    servers, rows = [], {}
    for rank in range(num_servers):
        server = KVServer(_Postoffice(), tables_root=tables_root)
        init = protocol.Init([], [], sync=False, table='user', kind='sparse',
                             options={**OPTIONS, 'shard': [rank, num_servers]})
        handle(server, 'INIT', init.meta())
        mine = ids[shard_of(ids, num_servers) == rank]
        for _ in range(2):
            handle(server, 'PULL', protocol.Pull([], None, 'user', ids=mine).meta(), [mine])
        grads = np.ones((mine.size, 3), np.float32)
        handle(server, 'PUSH', protocol.Push([], None, 'user', ids=mine).meta(), [mine, grads.reshape(-1)])
        _, (values,) = handle(server, 'PULL', protocol.Pull([], None, 'user', ids=mine).meta(), [mine])
        rows.update(zip(mine.tolist(), np.asarray(values).reshape(-1, 3)))
        servers.append(server)
    return servers, rows


def test_each_server_writes_its_own_shard_and_the_replies_make_the_manifest(tmp_path):
    ids = row_ids(np.arange(1, 201) * 7_919, 'user')
    servers, rows = trained_servers(ids, tables_root=tmp_path)
    command = protocol.Command('write_tables', path=str(tmp_path))
    replies = [handle(server, 'COMMAND', command.meta())[0]['tables'] for server in servers]
    tables = merged_shards(replies)
    shards.write_manifest(str(tmp_path), tables)
    manifest = shards.read_manifest(str(tmp_path))
    shards.check_shards(str(tmp_path), manifest)
    entry = manifest['tables']['user']
    assert entry['rows'] == ids.size and entry['dim'] == 3
    assert [s['path'] for s in entry['shards']] == ['user/server-00000.parquet', 'user/server-00001.parquet']
    assert entry['options']['dim'] == 3 and entry['options']['name'] == 'user'
    seen = {}
    for got_ids, vectors, counts in shards.iter_shard_rows(str(tmp_path), 'user'):
        for i, rid in enumerate(got_ids.tolist()):
            seen[rid] = (vectors[i], int(counts[i]))
    assert sorted(seen) == sorted(ids.tolist())
    for rid, (vector, count) in seen.items():
        np.testing.assert_array_equal(vector, rows[rid])
        assert count == 3       # the server's own count: pulled three times (each pull names the id once)


def test_a_shard_holds_only_its_servers_ids(tmp_path):
    ids = row_ids(np.arange(1, 101), 'user')
    servers, _ = trained_servers(ids, tables_root=tmp_path)
    command = protocol.Command('write_tables', path=str(tmp_path))
    handle(servers[1], 'COMMAND', command.meta())
    import pyarrow.parquet as pq
    held = pq.read_table(tmp_path / 'user' / 'server-00001.parquet').column('id').to_numpy().view(np.uint64)
    assert (shard_of(held, 2) == 1).all() and held.size == int((shard_of(ids, 2) == 1).sum())
    assert not (tmp_path / 'user' / 'server-00000.parquet').exists()


def test_a_server_without_sparse_tables_writes_nothing(tmp_path):
    reply, _ = handle(KVServer(_Postoffice(), tables_root=tmp_path), 'COMMAND',
                      protocol.Command('write_tables', path=str(tmp_path)).meta())
    assert reply == {'tables': {}}
    assert list(tmp_path.iterdir()) == []


def test_write_tables_needs_a_folder():
    with pytest.raises(MalformedMessage, match="COMMAND write_tables field 'path' must be a directory"):
        protocol.parse_request(Message('COMMAND', sender=5, meta={'name': 'write_tables'}))


def test_a_damaged_shard_is_named_with_its_table(tmp_path):
    ids = row_ids(np.arange(1, 51), 'user')
    servers, _ = trained_servers(ids, tables_root=tmp_path)
    command = protocol.Command('write_tables', path=str(tmp_path))
    shards.write_manifest(str(tmp_path), merged_shards([handle(s, 'COMMAND', command.meta())[0]['tables']
                                                        for s in servers]))
    (tmp_path / 'user' / 'server-00001.parquet').write_bytes(b'garbage')
    with pytest.raises(DataError, match=r"table 'user': shard .*server-00001.parquet is damaged"):
        shards.check_shards(str(tmp_path), shards.read_manifest(str(tmp_path)))


def test_a_shard_is_written_a_row_group_at_a_time_from_the_arrays_given(tmp_path):
    import pyarrow.parquet as pq
    ids = np.arange(1, 8, dtype=np.uint64) * np.uint64(1 << 62)
    vectors = np.arange(14, dtype=np.float32).reshape(7, 2)
    seen = np.array([0.4, 1.6, 2.0, 3.2, 4.5, 5.0, 6.9], np.float32)
    entry = shards.write_shard(str(tmp_path), 'user', 1, ids, vectors, seen, np.arange(7, dtype=np.int32),
                               group_rows=3)
    parquet = pq.ParquetFile(str(tmp_path / entry['path']))
    assert parquet.metadata.num_row_groups == 3 and entry['rows'] == 7
    table = parquet.read()
    read_ids = table.column('id').to_numpy().view(np.uint64)
    read_vectors = np.asarray(table.column('vector').combine_chunks().flatten(), np.float32).reshape(7, 2)
    counts = table.column('count').to_numpy()
    assert read_ids.tolist() == ids.tolist()
    assert np.array_equal(read_vectors, vectors)
    assert counts.tolist() == [0, 2, 2, 3, 4, 5, 7]       # the occurrence counts rounded to whole numbers

"""COMMAND load_tables: a warm start has each server load the rows of its shard from the shard files of the model a
fit starts from (sparkps.server.tables.sparse_start), on any number of servers, with counts and last-seen steps."""
import numpy as np
import pytest

from cluster import RecordingResponder
from sparkps.comm import protocol
from sparkps.comm.message import Message
from sparkps.errors import DataError
from sparkps.rows import shards
from sparkps.rows.ids import row_ids, shard_of
from sparkps.server.kvserver import KVServer
from sparkps.worker.server_commands import merged_shards

OPTIONS = {'dim': 3, 'optimizer': {'name': 'adagrad', 'params': {'learning_rate': 0.5}}}


class _Postoffice:
    worker_ids = (5,)


def handle(server, cmd, meta, arrays=()):
    responder = RecordingResponder()
    server.handle(Message(cmd, sender=5, meta=meta, arrays=list(arrays)), responder)
    (reply, values), = responder.replies
    return reply, values


def written_model(folder, ids, num_servers):
    """Shard files of table 'user' as ``num_servers`` servers write them: row i = [i, i, i], count 2 i + 1, last
    step 10 + i. Returns {id: (row, count, step)}."""
    expected, tables = {}, []
    for rank in range(num_servers):
        mine = ids[shard_of(ids, num_servers) == rank]
        where = np.searchsorted(ids, mine)
        vectors = np.repeat(where[:, None].astype(np.float32), 3, axis=1)
        shard = shards.write_shard(folder, 'user', rank, mine, vectors, 2 * where + 1, 10 + where)
        tables.append({'user': {'dim': 3, 'dtype': 'float32', 'options': dict(OPTIONS, name='user'), 'shard': shard}})
        expected.update({int(i): (v, 2 * w + 1, 10 + w) for i, v, w in zip(mine, vectors, where)})
    shards.write_manifest(folder, merged_shards(tables))
    return expected


def started_servers(folder, num_servers, options=OPTIONS):
    servers = []
    for rank in range(num_servers):
        server = KVServer(_Postoffice(), start_tables=folder)
        init = protocol.Init([], [], sync=False, table='user', kind='sparse',
                             options={**options, 'shard': [rank, num_servers]})
        handle(server, 'INIT', init.meta())
        servers.append(server)
    return servers


@pytest.mark.parametrize("written, serving", [(2, 2), (2, 3), (3, 1)])
def test_each_server_loads_the_rows_its_split_gives_it(tmp_path, written, serving):
    ids = np.sort(row_ids(np.arange(1, 301) * 7_919, 'user'))
    expected = written_model(str(tmp_path), ids, written)
    servers = started_servers(str(tmp_path), serving)
    held = {}
    for rank, server in enumerate(servers):
        reply, _ = handle(server, 'COMMAND', protocol.Command('load_tables').meta())
        table = server.tables['user'].table
        arrays = table.export_rows()
        assert reply['loaded'] == {'user': arrays['ids'].size}
        assert (shard_of(arrays['ids'], serving) == rank).all()        # only this server's ids
        for i, rid in enumerate(arrays['ids'].tolist()):
            held[rid] = (arrays['values'][i], arrays['seen'][i], arrays['last_seen'][i], arrays['updates'][i])
        assert table.step == int(max(arrays['last_seen'])) + 1 and table.step <= 10 + ids.size   # the next step
    assert sorted(held) == sorted(expected)          # every row once, over the servers
    for rid, (vector, seen, step, updates) in held.items():
        np.testing.assert_array_equal(vector, expected[rid][0])
        assert (seen, step, updates) == (expected[rid][1], expected[rid][2], 0)    # fresh optimizer state


def test_a_loaded_row_is_pulled_as_saved_and_trained_from_there(tmp_path):
    ids = np.sort(row_ids(np.arange(1, 41), 'user'))
    expected = written_model(str(tmp_path), ids, 1)
    server, = started_servers(str(tmp_path), 1)
    handle(server, 'COMMAND', protocol.Command('load_tables').meta())
    _, (values,) = handle(server, 'PULL', protocol.Pull([], None, 'user', ids=ids).meta(), [ids])
    np.testing.assert_array_equal(np.asarray(values).reshape(-1, 3), np.stack([expected[int(i)][0] for i in ids]))


def test_a_server_started_without_a_model_refuses_load_tables():
    server = KVServer(_Postoffice())
    with pytest.raises(DataError, match=r"load_tables refused: .*SPARKPS_START_TABLES"):
        handle(server, 'COMMAND', protocol.Command('load_tables').meta())


def test_another_width_is_named_with_its_table(tmp_path):
    ids = np.sort(row_ids(np.arange(1, 21), 'user'))
    written_model(str(tmp_path), ids, 1)
    server, = started_servers(str(tmp_path), 1, dict(OPTIONS, dim=4))
    with pytest.raises(DataError, match=r"table 'user': the initial model's rows are 3 wide, this fit's table 4"):
        server.tables['user'].load_start(str(tmp_path), shards.read_manifest(str(tmp_path)))


def test_a_written_model_forgets_rows_unseen_for_longer_than_asked_and_counts_the_ids(tmp_path):
    model, written = tmp_path / "model", tmp_path / "written"
    ids = np.sort(row_ids(np.arange(1, 101), 'user'))
    expected = written_model(str(model), ids, 1)          # last steps 10 .. 109
    server, = started_servers(str(model), 1)
    handle(server, 'COMMAND', protocol.Command('load_tables').meta())
    assert server.tables['user'].table.step == 110        # the step after the model's last
    new = row_ids(np.arange(1, 6) * 1_000_003, 'user')
    handle(server, 'PULL', protocol.Pull([], None, 'user', ids=new).meta(), [new])      # seen at step 110
    command = protocol.Command('write_tables', path=str(written), forget=30)
    server.tables_root = str(tmp_path)
    reply, _ = handle(server, 'COMMAND', command.meta())
    shard = reply['tables']['user']['shard']
    kept = [i for i, (_, _, step) in expected.items() if 110 - step <= 30]
    assert shard['rows'] == len(kept) + new.size
    assert shard['ids'] == {'added': new.size, 'kept': len(kept), 'dropped': ids.size - len(kept)}
    assert server.tables['user'].table.store.rows == ids.size + new.size      # the live table keeps them
    with pytest.raises(Exception, match="forget"):
        protocol.Command.parse(Message('COMMAND', sender=5, meta={'name': 'save', 'path': 'x', 'forget': 3}))

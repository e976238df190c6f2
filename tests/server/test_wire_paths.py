"""Names and paths that cross the wire stay where the server was started (docs/tables.md): a table name is an
identifier (refused at INIT with one error naming it), COMMAND write_tables writes only below the tables root fixed
when the server starts (``SPARKPS_TABLES_ROOT``: no ``..``, no absolute path outside it, no symbolic link followed,
nothing at all without a root), a dense pull or push of keys the server holds none of is an ERROR (not an empty
answer). Each refusal is an ERROR reply naming the fault; the server keeps serving.

Real servers and a real worker over ZeroMQ (``ps_cluster``), and a KVServer fed messages directly."""
import os

import numpy as np
import pytest

from cluster import RecordingResponder, cluster_timeouts
from sparkps.comm import protocol
from sparkps.comm.message import Message
from sparkps.errors import DataError, RemoteError
from sparkps.rows.values import RowSparse
from sparkps.server.kvserver import KVServer


class _Postoffice:
    worker_ids = (5,)


def handle(server, cmd, meta, arrays=()):
    responder = RecordingResponder()
    server.handle(Message(cmd, sender=5, meta=meta, arrays=list(arrays)), responder)
    return responder.replies


def empty(dim):
    return RowSparse(np.empty(0, np.int64), np.empty((0, dim), np.float32), (None, dim))


def test_a_table_name_is_an_identifier_at_init(tmp_path):
    server = KVServer(_Postoffice(), tables_root=str(tmp_path))
    for name in ("../../escaped", "/abs", "a/b", "", ".hidden"):
        init = protocol.Init([], [], sync=False, table=name or "x", kind="sparse",
                             options={"dim": 2, "name": name} if not name else {"dim": 2})
        with pytest.raises(DataError, match=r"is not a table name"):
            handle(server, "INIT", init.meta())
    assert set(server.tables) == {"dense"}
    handle(server, "INIT", protocol.Init([], [], sync=False, table="user", kind="sparse", options={"dim": 2}).meta())
    assert set(server.tables) == {"dense", "user"}


@pytest.fixture
def server_with_rows(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    server = KVServer(_Postoffice(), tables_root=str(root))
    handle(server, "INIT", protocol.Init([], [], sync=False, table="user", kind="sparse", options={"dim": 2}).meta())
    ids = np.arange(1, 6, dtype=np.uint64)
    handle(server, "PULL", protocol.Pull([], None, "user", ids=ids).meta(), [ids])
    return server, root


def write(server, path):
    return handle(server, "COMMAND", protocol.Command("write_tables", path=str(path)).meta())


def test_write_tables_writes_below_the_root_only(server_with_rows, tmp_path):
    server, root = server_with_rows
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "link")
    refusals = {str(outside / "t"): "not below the tables root",
                str(root / ".." / "outside"): "'..' part is not allowed",
                "../outside": "'..' part is not allowed",
                str(root / "link" / "t"): "is a symbolic link",
                str(root / "link"): "is a symbolic link"}
    for path, why in refusals.items():
        with pytest.raises(DataError, match=r"COMMAND write_tables: folder .* refused: .*%s" % why):
            write(server, path)
    assert list(outside.iterdir()) == []
    (reply, _), = write(server, root / "fit-1")
    assert reply["tables"]["user"]["shard"]["path"] == "user/server-00000.parquet"
    assert (root / "fit-1" / "user" / "server-00000.parquet").is_file()
    (reply, _), = write(server, "fit-2")             # relative: below the root
    assert (root / "fit-2" / "user" / "server-00000.parquet").is_file()


def test_a_planted_link_in_place_of_the_shard_folder_is_not_followed(server_with_rows, tmp_path):
    server, root = server_with_rows
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "fit").mkdir()
    os.symlink(outside, root / "fit" / "user")       # the table's folder, planted as a link out
    with pytest.raises(DataError, match=r"table 'user': .*leads out of .* through a symbolic link"):
        write(server, root / "fit")
    assert list(outside.iterdir()) == []


def test_a_server_without_a_tables_root_writes_no_table(tmp_path):
    server = KVServer(_Postoffice())
    with pytest.raises(DataError, match=r"started without a tables root \(SPARKPS_TABLES_ROOT\)"):
        write(server, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_dense_pull_or_push_of_keys_held_nowhere_is_an_error():
    server = KVServer(_Postoffice())
    handle(server, "INIT", protocol.Init([[0, 0, 4]], [[0, [4]]], sync=False).meta(), [np.ones(4, np.float32)])
    with pytest.raises(DataError, match=r"this server holds no piece of key 9 \(it holds 0\)"):
        handle(server, "PULL", protocol.Pull([9]).meta())
    with pytest.raises(DataError, match=r"holds no piece of keys 7, 9"):
        handle(server, "PUSH", protocol.Push([9, 7]).meta(), [np.ones(0, np.float32)])
    (_, (values,)), = handle(server, "PULL", protocol.Pull([0]).meta())
    assert np.asarray(values).tolist() == [1.0] * 4


def test_refusals_travel_as_error_replies_and_the_servers_keep_serving(ps_cluster, tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("SPARKPS_TABLES_ROOT", str(root))
    outside = tmp_path / "outside"
    outside.mkdir()

    def work(kv):
        with pytest.raises(RemoteError, match=r"INIT: table '\.\./\.\./escaped' is not a table name"):
            kv.init_table("../../escaped", empty(4))
        kv.init_table("user", empty(4))
        out = np.empty((3, 4), np.float32)
        kv.row_sparse_pull("user", out=out, row_ids=np.array([1, 2, 3]))
        with pytest.raises(RemoteError, match=r"COMMAND write_tables: folder '%s' refused: it is not below the "
                                              r"tables root" % outside):
            kv.write_tables(str(outside))
        with pytest.raises(RemoteError, match=r"'\.\.' part is not allowed"):
            kv.write_tables(str(root / ".." / "outside"))
        tables = kv.write_tables(str(root / "fit"))
        again = np.empty((3, 4), np.float32)
        kv.row_sparse_pull("user", out=again, row_ids=np.array([1, 2, 3]))
        return tables["user"]["rows"], bool(np.array_equal(out, again))

    with ps_cluster(num_servers=2, num_workers=1, kvtype="dist_async",
                    timeouts=cluster_timeouts(heartbeat_timeout=30.0)) as cluster:
        assert cluster.run_workers(work, timeout=60) == [(3, True)]
    assert list(outside.iterdir()) == []
    assert sorted(os.listdir(root / "fit" / "user")) == ["server-00000.parquet", "server-00001.parquet"]

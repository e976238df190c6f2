"""One pull may name at most ``max_new_ids`` ids a sparse table does not hold (a table option, default
``rows.config.MAX_NEW_IDS``): a request naming more is one ERROR naming the table and the cap, and the table is left
as it was (no row made, no count added); the server keeps serving. Before, one pull of 5M new ids grew a server
from 40 to 690 MB, and the frame limit would have let ~134M through.

A KVServer fed messages directly, and real servers and a worker over ZeroMQ (``ps_cluster``)."""
import numpy as np
import pytest

from cluster import RecordingResponder, cluster_timeouts
from sparkps.comm import protocol
from sparkps.comm.message import Message
from sparkps.errors import ConfigError, DataError, RemoteError
from sparkps.rows.config import MAX_NEW_IDS, TableConfig
from sparkps.rows.values import RowSparse
from sparkps.server.kvserver import KVServer


class _Postoffice:
    worker_ids = (5,)


def handle(server, cmd, meta, arrays=()):
    responder = RecordingResponder()
    server.handle(Message(cmd, sender=5, meta=meta, arrays=list(arrays)), responder)
    return responder.replies


def pull(server, ids):
    ids = np.asarray(ids, np.uint64)
    (_, (rows,)), = handle(server, "PULL", protocol.Pull([], None, "user", ids=ids).meta(), [ids])
    return rows


@pytest.mark.parametrize("decay", [None, 0.5])
def test_a_pull_of_more_new_ids_than_the_cap_is_refused_and_changes_nothing(decay):
    server = KVServer(_Postoffice())
    options = {"dim": 2, "max_new_ids": 100, **({"decay": decay} if decay else {})}
    handle(server, "INIT", protocol.Init([], [], sync=False, table="user", kind="sparse", options=options).meta())
    pull(server, np.arange(1, 51))
    with pytest.raises(DataError, match=r"table 'user': one pull names 101 ids the table does not hold, above its "
                                        r"cap of 100 new ids per request \(table option 'max_new_ids'\)"):
        pull(server, np.arange(1, 152))      # 50 held, 101 new
    stats = server.tables["user"].stats()
    assert stats["rows"] == 50
    assert pull(server, np.r_[np.arange(1, 51), np.arange(1000, 1100)]).shape == (150, 2)   # 100 new: the cap
    assert server.tables["user"].stats()["rows"] == 150


def test_the_default_cap_and_its_checks():
    assert TableConfig("user", dim=2).max_new_ids == MAX_NEW_IDS == 1 << 20
    assert TableConfig.from_options("user", {"max_new_ids": 7}, dim=2).max_new_ids == 7
    with pytest.raises(ConfigError, match=r"table 'user': option 'max_new_ids' must be a positive integer, got 0"):
        TableConfig.from_options("user", {"max_new_ids": 0}, dim=2)
    server = KVServer(_Postoffice())
    handle(server, "INIT", protocol.Init([], [], sync=False, table="user", kind="sparse", options={"dim": 1}).meta())
    with pytest.raises(DataError, match=r"names %d ids .* cap of %d new ids" % (MAX_NEW_IDS + 1, MAX_NEW_IDS)):
        pull(server, np.arange(1, MAX_NEW_IDS + 2))
    assert server.tables["user"].stats()["rows"] == 0


def test_the_refusal_reaches_the_worker_as_one_error_and_the_servers_keep_serving(ps_cluster):
    def work(kv):
        kv.init_table("user", RowSparse(np.empty(0, np.int64), np.empty((0, 4), np.float32), (None, 4)),
                      {"max_new_ids": 10})
        out = np.empty((40, 4), np.float32)
        with pytest.raises(RemoteError, match=r"table 'user': one pull names \d+ ids .* cap of 10 new ids"):
            kv.row_sparse_pull("user", out=out, row_ids=np.arange(1, 41))
        small = np.empty((5, 4), np.float32)
        kv.row_sparse_pull("user", out=small, row_ids=np.arange(1, 6))
        return bool(np.isfinite(small).all())

    with ps_cluster(num_servers=1, num_workers=1, kvtype="dist_async",
                    timeouts=cluster_timeouts(heartbeat_timeout=30.0)) as cluster:
        assert cluster.run_workers(work, timeout=60) == [True]

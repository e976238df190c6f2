"""A sparse table the servers refuse to create is not recorded on the worker: what the worker then sends is
checked against the table the servers do hold."""
import numpy as np
import pytest

from cluster import cluster_timeouts
from sparkps.errors import RemoteError, ShapeError
from sparkps.rows.values import RowSparse


def empty(dim):
    return RowSparse(np.empty(0, np.int64), np.empty((0, dim), np.float32), (None, dim))


def test_a_refused_init_table_leaves_the_table_the_servers_hold(ps_cluster):
    def work(kv):
        kv.init_table('user', empty(4), {'min_count': 1})
        with pytest.raises(RemoteError, match=r"table 'user': INIT again with other options"):
            kv.init_table('user', empty(3), {'min_count': 2})
        with pytest.raises(ShapeError, match=r"table 'user' has rows of width 4, the gradient has width 3"):
            kv.push('user', RowSparse([1], np.ones((1, 3), np.float32), (None, 3)))
        out = np.empty((1, 4), np.float32)
        kv.row_sparse_pull('user', out=out, row_ids=np.array([1]))
        return out.shape

    with ps_cluster(num_servers=2, num_workers=1, kvtype='dist_async',
                    timeouts=cluster_timeouts(heartbeat_timeout=30.0)) as cluster:
        assert cluster.run_workers(work, timeout=60) == [(1, 4)]

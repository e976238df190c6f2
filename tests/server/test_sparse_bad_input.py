"""Every bad input of sparse tables (issue 9, item 8) where a user meets it through a kvstore: float or NaN ids,
ids outside ``input_dim`` of a bounded table, a gradient whose width differs from ``dim``, a capacity overflow in
'fail' mode — each one error naming the table and the field, on the local kvstore and through 2 servers.

The same cases at the layers below have their own tests: the server table (tests/rows/test_table.py), id
parsing (tests/rows/test_sparse_rows.py), the training step (tests/train/test_sparse_fit.py) and Spark rows
(tests/spark/task/test_spark_sparse_fit.py)."""
import numpy as np
import pytest

from cluster import cluster_timeouts
from sparkps import kvstore, optimizer
from sparkps.errors import DataError, RemoteError, ShapeError
from sparkps.rows.values import RowSparse

DIM, VOCAB = 4, 10
PATIENT = cluster_timeouts(heartbeat_timeout=30.0)
FLOAT_IDS = np.array([1.0, 2.0])
NAN_IDS = np.array([1.0, np.nan])


def empty(input_dim=None):
    return RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (input_dim, DIM))


def pull(kv, key, ids):
    kv.row_sparse_pull(key, out=np.empty((len(ids), DIM), np.float32), row_ids=ids)


def check_every_case(kv, capacity_error):
    """The cases on one kvstore holding 'emb' (bounded, VOCAB rows) and 'user' (hashed)."""
    with pytest.raises(DataError, match=r"table 'user'.* field 'ids' must hold integers, got float64 values$"):
        pull(kv, 'user', FLOAT_IDS)
    with pytest.raises(DataError, match=r"table 'user'.* field 'ids' must hold integers, got float64 values "
                                        r"\(NaN among them\)"):
        pull(kv, 'user', NAN_IDS)
    with pytest.raises(DataError, match=r"table 'emb'.* 10.* outside.*10"):
        pull(kv, 'emb', np.array([3, VOCAB]))
    with pytest.raises(ShapeError, match=r"table 'user' has rows of width 4, the gradient has width 3"):
        kv.push('user', RowSparse([1], np.ones((1, 3), np.float32), (None, 3)))
    if capacity_error is not None:
        with pytest.raises(capacity_error[0], match=capacity_error[1]):
            pull(kv, 'small', np.arange(100, 105))


def test_the_local_kvstore_names_the_table_and_field():
    kv = kvstore.create('local')
    kv.init('emb', RowSparse.from_dense(np.zeros((VOCAB, DIM), np.float32)))
    kv.init('user', empty())
    kv.set_optimizer(optimizer.create('sgd'))
    check_every_case(kv, None)     # the local store takes no capacity: init_table refuses it (below)
    with pytest.raises(Exception, match=r"table 'small': the local kvstore does not implement table option\(s\) "
                                        r"\['capacity', 'on_full'\]"):
        kv.init_table('small', empty(), {'capacity': 4, 'on_full': 'fail'})


def test_the_servers_name_the_table_and_field(ps_cluster):
    def work(kv):
        kv.init('emb', empty(VOCAB))
        kv.init('user', empty())
        kv.init_table('small', empty(), {'capacity': 2, 'on_full': 'fail'})   # 2 rows on each server
        kv.set_optimizer(optimizer.create('sgd'))
        pull(kv, 'small', np.array([7]))
        check_every_case(kv, (RemoteError, r"table 'small': field 'capacity' \(2 rows on this server\) is full"))
        pull(kv, 'user', np.array([5]))                    # the cluster goes on after each refusal
        return True

    with ps_cluster(num_servers=2, num_workers=1, kvtype='dist_async', timeouts=PATIENT) as cluster:
        assert cluster.run_workers(work, timeout=60) == [True]

"""FeedForward with a sparse embedding on the parameter server (workers and servers in threads over inproc://):
the model equals the dense Embedding model trained on the same cluster (same initial rows, data and optimizer) to
1e-5, with dist_sync (2 workers) and dist_async (1 worker: arrival order is then fixed), on 1 and 2 servers.

The servers are threads of the test process: the first use of the sparse tables' compiled id index may hold the
interpreter for seconds on a loaded machine, so these clusters allow 30 s between heartbeats (no test here is about
detecting a dead node).

Data: a documented generator — 64 samples of 3 ids from a vocabulary of 20 (numpy Generator seed 0), label = parity
of the id sum; each worker trains on its half in batches of 8 for 2 epochs."""
import numpy as np
import pytest

import sparkps.symbol as sym
from sparkps import kvstore, optimizer
from sparkps.errors import ConfigError, DataError, ShapeError
from sparkps.io import NDArrayIter
from sparkps.rows.config import table_attr
from sparkps.rows.values import RowSparse, initial_rows
from sparkps.scheduler import format_status
from sparkps.symbol.ops.embedding import sparse_tables
from sparkps.train.feedforward import FeedForward
from sparse_parity import DIM, FC, IDS, LABELS, PATIENT, VOCAB, assert_same_models, network


def train(ps_cluster, sparse_grad, kvtype, num_workers, num_servers, optimizer, uneven=False, **hyper):
    """Fit on the cluster; returns each worker's model. The dense model starts from the rows a server creates."""
    params = dict(FC)
    if not sparse_grad:
        params['emb_weight'] = initial_rows('emb_weight', np.arange(VOCAB), DIM)

    def work(kv):
        share = slice(kv.rank, None, num_workers)
        if uneven:  # worker 0 has three times the batches of worker 1: it goes on alone after worker 1 leaves
            share = slice(0, 48) if kv.rank == 0 else slice(48, None)
        model = FeedForward(network(sparse_grad), num_epoch=2, optimizer=optimizer, learning_rate=0.5,
                            arg_params={k: v.copy() for k, v in params.items()}, **hyper)
        return model.fit(NDArrayIter({'ids': IDS[share]}, LABELS[share], batch_size=8), kvstore=kv)

    with ps_cluster(num_servers=num_servers, num_workers=num_workers, kvtype=kvtype, timeouts=PATIENT) as cluster:
        return cluster.run_workers(work, timeout=120)


# AdaGrad's first step is lr * g / (|g| + epsilon): with MXNet's epsilon 1e-7 a gradient element that the workers'
# contributions cancel to ~1e-7 moves by lr * O(1), and the last bits of that sum depend on the order the two
# models add the same numbers in. epsilon 1e-3 keeps the comparison about the update, not about rounding.
@pytest.mark.parametrize('optimizer,hyper', [('sgd', {}), ('adagrad', {'epsilon': 1e-3})], ids=['sgd', 'adagrad'])
@pytest.mark.parametrize('kvtype,num_workers,num_servers', [('dist_sync', 2, 1), ('dist_sync', 2, 2),
                                                            ('dist_async', 1, 1), ('dist_async', 1, 2)])
def test_sparse_model_on_servers_equals_the_dense_model(ps_cluster, kvtype, num_workers, num_servers, optimizer,
                                                        hyper):
    dense = train(ps_cluster, False, kvtype, num_workers, num_servers, optimizer, **hyper)
    sparse = train(ps_cluster, True, kvtype, num_workers, num_servers, optimizer, **hyper)
    assert_same_models(dense, sparse)


def test_uneven_shards_in_dist_sync_still_equal_the_dense_model(ps_cluster):
    dense = train(ps_cluster, False, 'dist_sync', 2, 2, 'sgd', uneven=True)
    sparse = train(ps_cluster, True, 'dist_sync', 2, 2, 'sgd', uneven=True)
    for dense_model, sparse_model in zip(dense, sparse):
        table = sparse_model.arg_params['emb_weight']
        np.testing.assert_allclose(table.rows, dense_model.arg_params['emb_weight'][table.ids], atol=1e-5)
        np.testing.assert_allclose(sparse_model.arg_params['fc_weight'], dense_model.arg_params['fc_weight'],
                                   atol=1e-5)


def test_initial_rows_cannot_be_given_to_a_distributed_table(ps_cluster):
    def work(kv):
        model = FeedForward(network(True), num_epoch=1, arg_params={'emb_weight': np.zeros((VOCAB, DIM), np.float32)})
        with pytest.raises(ConfigError, match="table 'emb_weight': a distributed table starts every row from its "
                                              "row initializer"):
            model.fit(NDArrayIter({'ids': IDS}, LABELS, batch_size=8), kvstore=kv)

    with ps_cluster(num_servers=1, num_workers=1, kvtype='dist_async', timeouts=PATIENT) as cluster:
        cluster.run_workers(work, timeout=60)


def test_dist_kvstore_row_sparse_api_on_two_servers(ps_cluster):
    """row_sparse_pull / RowSparse push on the servers: first-pull rows are the shared formula's, a push moves only
    its rows (repeated ids summed), and bad input names the table."""
    ids = np.array([2 ** 63 + 5, 7, 123456789, 7], dtype=np.uint64).view(np.int64)

    def work(kv):
        assert kv.is_capable('row_sparse') and kv.is_capable('table_options') and kv.is_capable('pull_step')
        kv.init('user', RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM)))
        kv.set_optimizer(optimizer.create('sgd', learning_rate=1.0))
        before = np.empty((4, DIM), np.float32)
        kv.row_sparse_pull('user', out=before, row_ids=ids)
        np.testing.assert_array_equal(before, initial_rows('user', ids, DIM))
        kv.push('user', RowSparse(ids[1:], np.ones((3, DIM), np.float32), (None, DIM)))
        value = RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM))
        kv.row_sparse_pull('user', out=value, row_ids=ids)
        np.testing.assert_allclose(value.rows - before, [[0] * DIM, [-2] * DIM, [-1] * DIM, [-2] * DIM], atol=1e-6)
        with pytest.raises(ShapeError, match="table 'user' has rows of width 4, the gradient has width 3"):
            kv.push('user', RowSparse(ids, np.ones((4, 3), np.float32), (None, 3)))
        with pytest.raises(DataError, match="table 'user'.*must hold integers"):
            kv.row_sparse_pull('user', out=before, row_ids=ids.astype(np.float64))
        with pytest.raises(ConfigError, match="'items' is not a sparse table"):
            kv.row_sparse_pull('items', out=before, row_ids=ids)

    with ps_cluster(num_servers=2, num_workers=1, kvtype='dist_async', timeouts=PATIENT) as cluster:
        cluster.run_workers(work, timeout=60)


def test_a_pull_of_more_rows_than_one_frame_holds_comes_in_pieces(ps_cluster, monkeypatch):
    """Over tcp with the smallest frame limit a socket takes (~4.1 MiB): 160,000 rows of width 16 on 2 servers are
    ~5 MiB a server, more than one reply frame may carry; the pull cuts them into pieces and every row arrives
    (one reply per server would be dropped by libzmq, and the pull would wait out its timeout)."""
    from sparkps.comm.settings import HEADER_LIMIT_BYTES
    monkeypatch.setenv("SPARKPS_MAX_MESSAGE_BYTES", str(HEADER_LIMIT_BYTES + 4096))
    width = 16
    ids = (np.arange(160_000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)).view(np.int64)

    def work(kv):
        assert kv.worker.postoffice.max_message_bytes == HEADER_LIMIT_BYTES + 4096
        kv.init('wide', RowSparse(np.empty(0, np.int64), np.empty((0, width), np.float32), (None, width)))
        kv.set_optimizer(optimizer.create('sgd', learning_rate=1.0))
        rows = np.empty((ids.size, width), np.float32)
        kv.row_sparse_pull('wide', out=rows, row_ids=ids)
        np.testing.assert_array_equal(rows, initial_rows('wide', ids, width))

    with ps_cluster(num_servers=2, num_workers=1, kvtype='dist_async', transport='tcp', timeouts=PATIENT) as cluster:
        cluster.run_workers(work, timeout=120)


def test_a_step_is_one_request_per_server_for_the_dense_keys_and_every_table(ps_cluster):
    """Two tables (a bounded Embedding and a hashed one) and dense keys on 2 servers: every step sends each server
    one PUSHPULL (the step's pushes ride with the next batch's pulls); the row PULLs are per epoch, not per step.
    Worker 0's progress reports carry the tables' statistics to the scheduler's status."""
    tags = np.random.default_rng(2).integers(-2 ** 62, 2 ** 62, size=(64, 2))
    emb = sym.Embedding(sym.Variable('ids'), input_dim=VOCAB, output_dim=DIM, sparse_grad=True, name='emb')
    tag = sym.contrib.HashEmbedding(sym.Variable('tags'), output_dim=DIM, pooling='sum', name='tag')
    net = sym.Concat(sym.Flatten(emb), tag, dim=1)
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=2, name='fc'), name='softmax')
    epochs, batches = 2, 8

    def work(kv):
        model = FeedForward(net, num_epoch=epochs, optimizer='sgd', learning_rate=0.5)
        model.fit(NDArrayIter({'ids': IDS, 'tags': tags}, LABELS, batch_size=64 // batches), kvstore=kv)
        return kv.table_stats()

    with ps_cluster(num_servers=2, num_workers=1, kvtype='dist_sync', timeouts=PATIENT) as cluster:
        stats, = cluster.run_workers(work, timeout=120)
        worker, = [n["id"] for n in cluster.scheduler.status()["nodes"] if n["role"] == "worker"]
        for server in cluster.servers.values():
            assert server.served["PUSHPULL", worker] == epochs * batches
            assert server.served["PUSH", worker] == 0
            # per epoch: the first batch's rows (2 tables) and the rows the model keeps (2 tables); after training
            # the rows kept (2 tables) and the dense pull; the dense pull after init
            assert server.served["PULL", worker] <= epochs * 4 + 4
        status = cluster.scheduler.status()   # what SparkTrainer.status() and `sparkps status` show
    assert set(stats) == {'emb_weight', 'tag_weight'} and stats['tag_weight']['rows'] == np.unique(tags).size
    reported = {str(rank): p for rank, p in status["progress"].items()}["0"]["tables"]
    assert set(reported) == {'emb_weight', 'tag_weight'}
    assert 0 < reported['tag_weight']['rows'] <= stats['tag_weight']['rows']
    assert {'bytes', 'admitted', 'evicted'} <= set(reported['tag_weight'])
    assert "  table tag_weight: %d rows, " % reported['tag_weight']['rows'] in format_status(status)


def tagged_network(**options):
    """ids -> Embedding(sparse_grad) and tags -> HashEmbedding whose weight Variable declares table options."""
    weight = sym.Variable('tag_weight', attr=table_attr(**options))
    tag = sym.contrib.HashEmbedding(sym.Variable('tags'), output_dim=DIM, weight=weight, pooling='sum', name='tag')
    return sym.SoftmaxOutput(sym.FullyConnected(tag, num_hidden=2, name='fc'), name='softmax')


TAGS = np.random.default_rng(3).integers(0, 40, size=(64, 2)) * 1_000_003   # 40 tags, most named several times


def test_table_options_declared_on_the_weight_variable_reach_every_server(ps_cluster):
    net = tagged_network(min_count=2, ttl=50, capacity=1000, on_full='lru', init_scale=0.5,
                         optimizer=optimizer.create('adagrad', learning_rate=0.2))

    def work(kv):
        FeedForward(net, num_epoch=1, optimizer='sgd', learning_rate=0.5).fit(
            NDArrayIter({'tags': TAGS}, LABELS, batch_size=16), kvstore=kv)
        return kv.table_stats()['tag_weight']

    with ps_cluster(num_servers=2, num_workers=1, kvtype='dist_async', timeouts=PATIENT) as cluster:
        stats, = cluster.run_workers(work, timeout=120)
        for server in cluster.servers.values():
            table = server.tables['tag_weight'].table
            assert (table.min_count, table.ttl, table.capacity, table.on_full) == (2, 50, 1000, 'evict')
            assert table.init.config() == {'kind': 'uniform', 'scale': 0.5}
            assert table.optimizer.name == 'adagrad' and server.optimizer_config['name'] == 'sgd'
    assert 0 < stats['admitted'] == stats['rows'] <= np.unique(TAGS).size


def test_init_table_sends_the_options_and_refuses_unknown_ones_before_sending(ps_cluster):
    ids = np.array([11, 2 ** 40, -3], np.int64)

    def work(kv):
        empty = RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM))
        with pytest.raises(ConfigError, match=r"table 'user': unknown table option\(s\) \['shards'\]"):
            kv.init_table('user', empty, {'min_count': 2, 'shards': 4})
        kv.init_table('user', empty, {'min_count': 2, 'optimizer': 'sgd'})
        rows = np.empty((3, DIM), np.float32)
        kv.row_sparse_pull('user', out=rows, row_ids=ids)          # first naming: zeros, nothing stored
        assert not rows.any() and kv.table_stats()['user']['rows'] == 0
        kv.row_sparse_pull('user', out=rows, row_ids=ids)          # second: admitted, the shared first rows
        np.testing.assert_array_equal(rows, initial_rows('user', ids, DIM))
        return kv.table_stats()['user']

    with ps_cluster(num_servers=2, num_workers=1, kvtype='dist_async', timeouts=PATIENT) as cluster:
        stats, = cluster.run_workers(work, timeout=60)
    assert stats['rows'] == stats['admitted'] == 3


def test_bad_table_options_name_the_table_and_the_option():
    with pytest.raises(ConfigError, match=r"table 'tag_weight': unknown table option\(s\) \['colour'\]"):
        sparse_tables(tagged_network(ttl=5, colour='red'))
    with pytest.raises(ConfigError, match="table 'tag_weight': option 'on_full' must be 'lru' or 'fail'"):
        sparse_tables(tagged_network(on_full='drop'))
    with pytest.raises(ConfigError, match="table 'tag_weight': option 'min_count' must be a positive integer"):
        sparse_tables(tagged_network(min_count=0))
    with pytest.raises(ConfigError, match=r"table 'tag_weight': the local kvstore does not implement table "
                                          r"option\(s\) \['ttl'\]"):
        FeedForward(tagged_network(ttl=5), num_epoch=1).fit(NDArrayIter({'tags': TAGS}, LABELS, batch_size=16))


def test_the_local_kvstore_takes_a_tables_init_scale_and_own_optimizer():
    kv = kvstore.create('local')
    kv.set_optimizer(optimizer.create('sgd', learning_rate=100.0))      # the job's: not used by the table
    kv.init_table('t', RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM)),
                  {'init_scale': 0.5, 'optimizer': optimizer.create('sgd', learning_rate=0.25)})
    ids = np.array([4, 2 ** 50], np.int64)
    rows = np.empty((2, DIM), np.float32)
    kv.row_sparse_pull('t', out=rows, row_ids=ids)
    np.testing.assert_allclose(rows, initial_rows('t', ids, DIM, 0.5))
    assert np.abs(rows).max() > 0.01                                    # wider than the default scale
    kv.push('t', RowSparse(ids, np.ones((2, DIM), np.float32), (None, DIM)))
    after = np.empty((2, DIM), np.float32)
    kv.row_sparse_pull('t', out=after, row_ids=ids)
    np.testing.assert_allclose(after, rows - 0.25, atol=1e-6)

"""Training on a CUDA device through CuPy: the same model, data and seed on ``gpu(0)`` ends where ``cpu`` ends.

Covers what a user reaches with ``ctx='gpu'``: FeedForward with the local kvstore (dense MLP, momentum and weight
decay), sparse embedding tables (``Embedding(sparse_grad=True)`` and ``contrib.HashEmbedding`` over 64-bit ids,
SGD and AdaGrad), predict/score, and a dist_sync cluster whose workers compute on the GPU while the servers stay
on the host. Skipped without CuPy and a CUDA device.

Data: scikit-learn's digits (first 600 rows, scaled to [0, 1]); the sparse cases use the documented generator of
sparse_parity.py beside this file (64 samples of 3 ids from a vocabulary of 20, label = parity of the id sum).
"""
import numpy as np
import pytest
from sklearn.datasets import load_digits

import sparkps as sp
import sparkps.symbol as sym
from sparkps import backend
from sparkps.io import NDArrayIter
from sparkps.rows.values import RowSparse
from sparkps.train.feedforward import FeedForward
from sparse_parity import FC, IDS, LABELS, PATIENT, network

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not backend.gpu_available(), reason="needs CuPy and a CUDA device")]


@pytest.fixture(scope='module')
def digits():
    X, y = load_digits(return_X_y=True)
    return (X[:600] / 16.0).astype(np.float32), y[:600]


def mlp():
    net = sym.FullyConnected(sym.Variable('data'), num_hidden=32, name='fc1')
    net = sym.Activation(net, act_type='relu', name='relu1')
    net = sym.FullyConnected(net, num_hidden=10, name='fc2')
    return sym.SoftmaxOutput(net, name='softmax')


def fit_mlp(X, y, ctx, **kwargs):
    model = FeedForward(mlp(), ctx=ctx, num_epoch=3, optimizer='sgd', learning_rate=0.1, momentum=0.9, wd=1e-4,
                        numpy_batch_size=50, initializer=sp.initializer.Xavier(), seed=3)
    return model.fit(X, y, **kwargs)


def assert_same_params(one, other, rtol=1e-4, atol=1e-5):
    assert sorted(one.arg_params) == sorted(other.arg_params)
    for name, value in one.arg_params.items():
        got = other.arg_params[name]
        if isinstance(value, RowSparse):       # a sparse table: the same rows, on the host
            assert isinstance(got, RowSparse), "%s came back as %s, not a RowSparse" % (name, type(got))
            np.testing.assert_array_equal(np.sort(got.ids), np.sort(value.ids), err_msg=name)
            got, value = got.rows[np.argsort(got.ids)], value.rows[np.argsort(value.ids)]
        assert isinstance(got, np.ndarray), "%s came back as %s, not a host array" % (name, type(got))
        np.testing.assert_allclose(got, value, rtol=rtol, atol=atol, err_msg=name)


def test_mlp_on_the_gpu_ends_where_the_cpu_run_ends(digits):
    X, y = digits
    on_cpu, on_gpu = fit_mlp(X, y, 'cpu'), fit_mlp(X, y, 'gpu(0)')
    assert_same_params(on_cpu, on_gpu)
    np.testing.assert_allclose(on_gpu.predict(X), on_cpu.predict(X), rtol=1e-4, atol=1e-5)
    assert on_gpu.score(X, y) > 0.9


def hashed_network():
    table = sym.contrib.HashEmbedding(sym.Variable('ids'), output_dim=FC['fc_weight'].shape[1] // 3, name='emb')
    hidden = sym.FullyConnected(sym.Flatten(table), num_hidden=2, name='fc')
    return sym.SoftmaxOutput(hidden, name='softmax')


@pytest.mark.parametrize('optimizer,hyper', [('sgd', {}), ('adagrad', {'epsilon': 1e-3})], ids=['sgd', 'adagrad'])
@pytest.mark.parametrize('kind', ['embedding', 'hash'])
def test_sparse_tables_on_the_gpu_end_where_the_cpu_run_ends(kind, optimizer, hyper):
    ids = IDS if kind == 'embedding' else (IDS.astype(np.int64) * 7919 + (1 << 40))   # 64-bit ids for the hash

    def fit(ctx):
        net = network(True) if kind == 'embedding' else hashed_network()
        model = FeedForward(net, ctx=ctx, num_epoch=2, optimizer=optimizer, learning_rate=0.5,
                            arg_params={k: v.copy() for k, v in FC.items()}, **hyper)
        return model.fit(NDArrayIter({'ids': ids}, LABELS, batch_size=8))

    on_cpu, on_gpu = fit('cpu'), fit('gpu')
    assert isinstance(on_cpu.arg_params['emb_weight'], RowSparse)
    assert_same_params(on_cpu, on_gpu, rtol=1e-4, atol=1e-5)
    predict = NDArrayIter({'ids': ids}, None, batch_size=8)
    np.testing.assert_allclose(on_gpu.predict(predict), on_cpu.predict(predict), rtol=1e-4, atol=1e-5)


def test_gpu_workers_on_a_dist_sync_cluster_match_cpu_workers(ps_cluster, digits):
    X, y = digits

    def train(ctx):
        def work(kv):
            share = slice(kv.rank, None, 2)
            return fit_mlp(X[share], y[share], ctx, kvstore=kv)
        with ps_cluster(num_servers=2, num_workers=2, kvtype='dist_sync', timeouts=PATIENT) as cluster:
            return cluster.run_workers(work, timeout=120)

    on_cpu, on_gpu = train('cpu'), train('gpu(0)')
    for cpu_model, gpu_model in zip(on_cpu, on_gpu):
        assert_same_params(cpu_model, gpu_model)
    assert on_gpu[0].score(X, y) > 0.8          # each worker saw half the rows for 3 epochs

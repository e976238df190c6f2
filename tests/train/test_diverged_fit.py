"""A fit whose loss turns NaN or infinite stops with one DataError naming the epoch, the step and the output and
pointing at the learning rate, in place (no kvstore), through the local kvstore and through a dist_sync cluster
(before any NaN gradient reaches a server)."""
import numpy as np
import pytest

import sparkps as sp
from cluster import cluster_timeouts
from sparkps.errors import DataError

MESSAGE = (r"training diverged: the loss output 'softmax_output' holds NaN or infinity at epoch 0, step \d+ "
           r"\(batch \d+ of the epoch\); the learning rate \(1e\+30\) is likely too large")


def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(256, 16)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(np.float32)


def model():
    sym = sp.sym
    net = sym.FullyConnected(sym.Variable('data'), num_hidden=16, name='fc1')
    net = sym.Activation(net, act_type='relu', name='relu1')
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=2, name='fc2'), name='softmax')
    return sp.FeedForward(net, num_epoch=3, optimizer='sgd', learning_rate=1e30, numpy_batch_size=32,
                          initializer=sp.initializer.Xavier(), seed=0)


@pytest.mark.parametrize("kvstore", [None, "local"])
def test_a_learning_rate_of_1e30_stops_the_fit_naming_epoch_step_and_learning_rate(kvstore):
    X, y = data()
    with pytest.raises(DataError, match=MESSAGE):
        model().fit(X, y, kvstore=kvstore)


def test_a_diverging_dist_sync_fit_stops_before_pushing_nan(ps_cluster):
    X, y = data()

    def work(kv):
        with pytest.raises(DataError, match=MESSAGE) as caught:
            model().fit(X[kv.rank::2], y[kv.rank::2], kvstore=kv)
        return str(caught.value)

    with ps_cluster(num_servers=1, num_workers=2, kvtype="dist_sync",
                    timeouts=cluster_timeouts(heartbeat_timeout=30.0)) as cluster:
        messages = cluster.run_workers(work, timeout=60)
        assert not cluster.servers[0].skipped
    assert len(messages) == 2

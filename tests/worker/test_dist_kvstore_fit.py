"""FeedForward.fit with a dist kvstore, 2 workers in threads, on scikit-learn's digits."""
import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import sparkps as sp


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X / 16.0, y, test_size=0.25, random_state=0)
    return X_train.astype(np.float32), X_test.astype(np.float32), y_train, y_test


def mlp():
    sym = sp.sym
    net = sym.FullyConnected(sym.Variable("data"), num_hidden=64, name="fc1")
    net = sym.Activation(net, act_type="relu", name="relu1")
    net = sym.FullyConnected(net, num_hidden=10, name="fc2")
    return sym.SoftmaxOutput(net, name="softmax")


# async applies every worker's step at full size (rescale_grad = 1/batch): half the learning rate
@pytest.mark.parametrize("kvtype,lr", [("dist_sync", 0.1), ("dist_async", 0.05)])
def test_two_workers_with_uneven_shards_reach_93_percent(digits, kvtype, lr, ps_cluster):
    X_train, X_test, y_train, y_test = digits
    cut = 2 * len(X_train) // 3  # worker 0 has twice the batches of worker 1
    shards = [(X_train[:cut], y_train[:cut]), (X_train[cut:], y_train[cut:])]

    def work(kv):
        X, y = shards[kv.rank]
        net = sp.FeedForward(mlp(), num_epoch=6, optimizer="sgd", learning_rate=lr, momentum=0.9,
                             numpy_batch_size=16, initializer=sp.initializer.Xavier(), seed=0)
        return net.fit(X, y, kvstore=kv)

    with ps_cluster(num_servers=2, num_workers=2, kvtype=kvtype) as cluster:
        first, second = cluster.run_workers(work, timeout=120)
    for name, value in first.arg_params.items():
        np.testing.assert_array_equal(second.arg_params[name], value, err_msg=name)
    assert first.score(X_test, y_test) >= 0.93

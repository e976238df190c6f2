"""FeedForward as MXNet users know it: a list of devices (batch slices, summed gradients), pickling after
predict, and the learning-rate multipliers a symbol carries."""
import pickle

import numpy as np
import pytest
from sklearn.datasets import load_digits

import sparkps as sp
from sparkps.errors import ConfigError
from sparkps.train.device_group import slice_sizes


@pytest.fixture(scope='module')
def digits():
    X, y = load_digits(return_X_y=True)
    return (X[:600] / 16.0).astype(np.float32), y[:600]


def mlp(batchnorm=False):
    sym = sp.sym
    net = sym.FullyConnected(sym.Variable('data'), num_hidden=32, name='fc1')
    if batchnorm:
        net = sym.BatchNorm(net, fix_gamma=False, name='bn1')
    net = sym.Activation(net, act_type='relu', name='relu1')
    net = sym.FullyConnected(net, num_hidden=10, name='fc2')
    return sym.SoftmaxOutput(net, name='softmax')


def train(X, y, ctx, num_epoch=3, batchnorm=False):
    model = sp.FeedForward(mlp(batchnorm), ctx=ctx, num_epoch=num_epoch, optimizer='sgd', learning_rate=0.1,
                           momentum=0.9, wd=1e-4, numpy_batch_size=50, initializer=sp.initializer.Xavier(), seed=3)
    return model.fit(X, y)


def test_two_cpu_devices_train_the_same_model_as_one(digits):
    X, y = digits
    one = train(X, y, sp.cpu(0))
    two = train(X, y, [sp.cpu(0), sp.cpu(1)])
    assert len(two.contexts) == 2
    for name, value in one.arg_params.items():
        np.testing.assert_allclose(two.arg_params[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(two.predict(X), one.predict(X), rtol=1e-4, atol=1e-5)


def test_three_devices_with_uneven_slices_and_batchnorm_still_learn(digits):
    X, y = digits
    model = train(X, y, [sp.cpu(0), sp.cpu(1), sp.cpu(2)], num_epoch=6, batchnorm=True)
    assert slice_sizes(50, 3) == [17, 17, 16]
    assert model.score(X, y) > 0.9
    assert model.aux_params['bn1_moving_var'].shape == (32,)


def test_batch_smaller_than_the_device_count_is_refused():
    with pytest.raises(ConfigError, match='2 rows cannot be split over 3 devices'):
        slice_sizes(2, 3)


def test_pickle_after_predict_predicts_the_same(digits):
    X, y = digits
    model = train(X, y, sp.cpu(0), num_epoch=1)
    before = model.predict(X[:40])
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X[:40]), before)


def test_symbol_lr_mult_freezes_a_layer_during_fit(digits):
    X, y = digits
    sym = sp.sym
    frozen = sym.Variable('fc1_weight', lr_mult=0.0)
    net = sym.Activation(sym.FullyConnected(sym.Variable('data'), weight=frozen, num_hidden=32, name='fc1'),
                         act_type='relu')
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=10, name='fc2'), name='softmax')
    start = {'fc1_weight': np.random.default_rng(0).normal(0, 0.1, size=(32, 64)).astype(np.float32)}
    model = sp.FeedForward(net, num_epoch=6, optimizer='sgd', learning_rate=0.1, momentum=0.9, arg_params=start,
                           numpy_batch_size=50, initializer=sp.initializer.Xavier(), seed=1).fit(X, y)
    np.testing.assert_array_equal(model.arg_params['fc1_weight'], start['fc1_weight'])
    assert model.score(X, y) > 0.5

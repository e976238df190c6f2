"""FeedForward on scikit-learn's digits: accuracy, save/load, kvstore paths, callbacks, bad input."""
import logging

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import sparkps as sp
from sparkps import callback, io, kvstore
from sparkps.errors import ConfigError, DataError


@pytest.fixture(scope='module')
def digits():
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X / 16.0, y, test_size=0.25, random_state=0)
    return X_train.astype(np.float32), X_test.astype(np.float32), y_train, y_test


def mlp(hidden=64):
    sym = sp.sym
    net = sym.FullyConnected(sym.Variable('data'), num_hidden=hidden, name='fc1')
    net = sym.Activation(net, act_type='relu', name='relu1')
    net = sym.FullyConnected(net, num_hidden=10, name='fc2')
    return sym.SoftmaxOutput(net, name='softmax')


def model(num_epoch=10, **kwargs):
    options = dict(optimizer='sgd', learning_rate=0.1, momentum=0.9, numpy_batch_size=32,
                   initializer=sp.initializer.Xavier(), seed=0)
    options.update(kwargs)
    return sp.FeedForward(mlp(), num_epoch=num_epoch, **options)


class CountingKVStore(kvstore.LocalKVStore):
    """A LocalKVStore that also records how fit talks to it."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def init(self, keys, values):
        self.calls.append('init')
        super().init(keys, values)

    def set_optimizer(self, optimizer):
        self.calls.append('set_optimizer')
        self.rescale_grad = optimizer.rescale_grad
        super().set_optimizer(optimizer)

    def push(self, keys, values, priority=0):
        self.calls.append(('push', len(keys)))
        super().push(keys, values)

    def pull(self, keys, out=None, priority=0):
        self.calls.append(('pull', len(keys)))
        super().pull(keys, out=out)

    def report_progress(self, **progress):
        self.calls.append('progress')
        self.last_progress = progress

    def end_training(self):
        self.calls.append('end_training')


def test_mlp_on_digits_reaches_95_percent(digits, caplog):
    X_train, X_test, y_train, y_test = digits
    caplog.set_level(logging.INFO, logger='sparkps')
    trained = model().fit(X_train, y_train, eval_data=(X_test, y_test))
    accuracy = trained.score(X_test, y_test)
    assert accuracy >= 0.95
    assert (trained.predict(X_test).argmax(axis=1) == y_test).mean() == pytest.approx(accuracy)
    lines = caplog.messages
    assert any(m.startswith('Epoch[9] Train-accuracy=') for m in lines)
    assert any(m.startswith('Epoch[9] Validation-accuracy=') for m in lines)
    assert any('Epoch[9] Time cost' in m and 'samples/sec' in m for m in lines)


def test_save_load_round_trip_predicts_identically(digits, tmp_path):
    X_train, X_test, y_train, _ = digits
    trained = model(num_epoch=2).fit(X_train, y_train)
    prefix = str(tmp_path / 'digits')
    trained.save(prefix)
    assert (tmp_path / 'digits-symbol.json').exists() and (tmp_path / 'digits-0002.params').exists()
    with np.load(prefix + '-0002.params', allow_pickle=False) as archive:
        assert sorted(archive.files) == ['arg:fc1_bias', 'arg:fc1_weight', 'arg:fc2_bias', 'arg:fc2_weight',
                                         'meta:format']
    loaded = sp.FeedForward.load(prefix, 2, numpy_batch_size=32)
    assert loaded.begin_epoch == 2
    np.testing.assert_array_equal(loaded.predict(X_test), trained.predict(X_test))


def test_kvstore_object_gives_same_weights_as_local(digits):
    X_train, _, y_train, _ = digits
    local = model(num_epoch=2).fit(X_train, y_train, kvstore='local')
    kv = CountingKVStore()
    through_store = model(num_epoch=2).fit(X_train, y_train, kvstore=kv)
    for name, value in local.arg_params.items():
        np.testing.assert_array_equal(through_store.arg_params[name], value, err_msg=name)
    steps = 2 * (len(X_train) // 32)
    assert kv.calls[:3] == ['init', 'set_optimizer', ('pull', 4)]   # optimizer first: a resumed store loads with it
    assert kv.calls.count(('push', 4)) == steps and kv.calls.count(('pull', 4)) == steps + 2
    assert kv.calls[-2:] == ['end_training', ('pull', 4)]
    assert kv.rescale_grad == pytest.approx(1 / 32)
    assert kv.last_progress['epoch'] == 1 and kv.last_progress['samples'] > 0


def test_data_iter_input_and_callbacks(digits, tmp_path, caplog):
    X_train, X_test, y_train, y_test = digits
    caplog.set_level(logging.INFO, logger='sparkps')
    train = io.NDArrayIter(X_train, y_train, batch_size=50, shuffle=True, seed=1, last_batch_handle='discard')
    prefix = str(tmp_path / 'ckpt')
    trained = model(num_epoch=3).fit(train, eval_data=io.NDArrayIter(X_test, y_test, batch_size=100),
                                     epoch_end_callback=callback.do_checkpoint(prefix),
                                     batch_end_callback=callback.Speedometer(50, frequent=10))
    assert any('Speed:' in m and 'samples/sec' in m for m in caplog.messages)
    for epoch in (1, 2, 3):
        assert (tmp_path / f'ckpt-{epoch:04d}.params').exists()
    outputs, data, label = trained.predict(io.NDArrayIter(X_test, y_test, batch_size=100), return_data=True)
    assert outputs.shape == (len(X_test), 10)
    np.testing.assert_array_equal(data, X_test)
    np.testing.assert_array_equal(label, y_test)
    assert trained.predict(X_test, num_batch=2).shape == (64, 10)


def test_score_with_several_metrics(digits):
    X_train, X_test, y_train, y_test = digits
    trained = model(num_epoch=3).fit(X_train, y_train)
    acc, ce = trained.score(X_test, y_test, eval_metric=['acc', 'ce'])
    assert 0.9 < acc <= 1 and 0 < ce < 0.5


@pytest.mark.parametrize('mutate,message', [
    (lambda X, y: (X, y[:-1]), 'X has 1347 rows but y has 1346'),
    (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 70, np.nan, X), y),
     r'X holds nan at index \(1, 6\)'),
    (lambda X, y: (X, np.where(np.arange(y.size) == 3, 10, y)), r"label 'softmax_label' holds 10 at row 3"),
    (lambda X, y: (X, y + 0.5), 'integers'),
])
def test_bad_training_input_is_data_error(digits, mutate, message):
    X_train, _, y_train, _ = digits
    X, y = mutate(X_train, y_train)
    with pytest.raises(DataError, match=message):
        model(num_epoch=1).fit(X, y)


def test_wrong_feature_width_is_data_error(digits):
    X_train, X_test, y_train, y_test = digits
    trained = model(num_epoch=1).fit(X_train, y_train)
    with pytest.raises(DataError, match=r"'fc1_weight' of shape \(64, 60\).*\(64, 64\)"):
        trained.predict(X_test[:, :60])
    resumed = sp.FeedForward(mlp(), num_epoch=2, arg_params=trained.arg_params, numpy_batch_size=32)
    with pytest.raises(DataError, match='fc1_weight'):
        resumed.fit(X_train[:, :60], y_train)


def test_configuration_errors(digits):
    X_train, _, y_train, _ = digits
    with pytest.raises(ConfigError, match='num_epoch'):
        sp.FeedForward(mlp()).fit(X_train, y_train)
    with pytest.raises(ConfigError, match='no parameters'):
        sp.FeedForward(mlp()).predict(X_train)
    with pytest.raises(ConfigError, match='bogus'):
        model(num_epoch=1, optimizer='bogus').fit(X_train, y_train)


def test_batchnorm_aux_states_are_trained_saved_and_loaded(digits, tmp_path):
    X_train, X_test, y_train, y_test = digits
    sym = sp.sym
    net = sym.BatchNorm(sym.FullyConnected(sym.Variable('data'), num_hidden=32, name='fc1'), name='bn1')
    net = sym.Dropout(sym.Activation(net, act_type='relu'), p=0.2)
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=10, name='fc2'), name='softmax')
    trained = sp.FeedForward(net, num_epoch=3, learning_rate=0.1, momentum=0.9, numpy_batch_size=32,
                             initializer=sp.initializer.Xavier(), seed=0).fit(X_train, y_train)
    assert trained.score(X_test, y_test) >= 0.9
    assert sorted(trained.aux_params) == ['bn1_moving_mean', 'bn1_moving_var']
    assert not np.allclose(trained.aux_params['bn1_moving_var'], 1.0)
    trained.save(str(tmp_path / 'bn'))
    loaded = sp.FeedForward.load(str(tmp_path / 'bn'), 3, numpy_batch_size=32)
    np.testing.assert_array_equal(loaded.aux_params['bn1_moving_mean'], trained.aux_params['bn1_moving_mean'])
    np.testing.assert_array_equal(loaded.predict(X_test), trained.predict(X_test))


def test_a_seed_fixes_the_dropout_masks(digits):
    X_train, _, y_train, _ = digits
    sym = sp.sym
    net = sym.Dropout(sym.Activation(sym.FullyConnected(sym.Variable('data'), num_hidden=32, name='fc1'),
                                     act_type='relu'), p=0.5)
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=10, name='fc2'), name='softmax')

    def fit(seed):
        return sp.FeedForward(net, num_epoch=1, learning_rate=0.1, numpy_batch_size=32,
                              initializer=sp.initializer.Xavier(), seed=seed).fit(X_train, y_train).arg_params
    first, again, other = fit(3), fit(3), fit(4)
    for name, value in first.items():
        np.testing.assert_array_equal(again[name], value, err_msg=name)
    assert not np.array_equal(first['fc2_weight'], other['fc2_weight'])


def test_dist_sync_with_one_worker_matches_local_training(digits):
    from cluster import PSCluster
    X_train, _, y_train, _ = digits
    local = model(num_epoch=2).fit(X_train, y_train)
    with PSCluster(num_servers=2, num_workers=1) as cluster:
        (dist,) = cluster.run_workers(lambda kv: model(num_epoch=2).fit(X_train, y_train, kvstore=kv))
    for name, value in local.arg_params.items():
        np.testing.assert_allclose(dist.arg_params[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


def test_dist_sync_two_workers_end_with_the_servers_model(digits):
    from cluster import PSCluster
    X_train, X_test, y_train, y_test = digits
    halves = [(X_train[rank::2], y_train[rank::2]) for rank in range(2)]

    def work(kv):
        X, y = halves[kv.rank]
        return model(num_epoch=6, numpy_batch_size=16).fit(X, y, kvstore=kv)

    with PSCluster(num_servers=1, num_workers=2) as cluster:
        first, second = cluster.run_workers(work)
    for name, value in first.arg_params.items():
        np.testing.assert_array_equal(second.arg_params[name], value, err_msg=name)
    assert first.score(X_test, y_test) >= 0.93

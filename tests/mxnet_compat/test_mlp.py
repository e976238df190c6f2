"""Port of Apache MXNet 1.9.1 tests/python/train/test_mlp.py.

MXNet trains its 128-64-10 MLP on MNIST over two CPU contexts for 4 epochs and wants 95% validation accuracy.
There is no network here, so the data are scikit-learn's handwritten digits (8x8 images, 64 features,
1797 rows; 1347 train / 450 validation), which need more epochs (40: 560 steps of 100 rows) for the same bar.
Everything else is MXNet's test: FeedForward.create with ctx=[cpu(0), cpu(1)], metric.np(accuracy),
do_checkpoint, internal feature maps, pickling, loading epoch checkpoints and an explicit save.
"""
import pickle

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import sparkps as sp

NUM_EPOCH = 40


def mlp():
    sym = sp.sym
    fc1 = sym.FullyConnected(sym.Variable('data'), name='fc1', num_hidden=128)
    act1 = sym.Activation(fc1, name='relu1', act_type='relu')
    fc2 = sym.FullyConnected(act1, name='fc2', num_hidden=64)
    act2 = sym.Activation(fc2, name='relu2', act_type='relu')
    fc3 = sym.FullyConnected(act2, name='fc3', num_hidden=10)
    return sym.SoftmaxOutput(fc3, name='sm')


def accuracy(label, pred):
    return np.sum(np.argmax(pred, axis=1) == label) / float(label.size)


def test_mlp(tmp_path):
    """MXNet: tests/python/train/test_mlp.py::test_mlp."""
    X, y = load_digits(return_X_y=True)
    X_train, X_val, y_train, y_val = train_test_split((X / 16.0).astype(np.float32), y, test_size=450,
                                                      random_state=0)
    train_iter = sp.io.NDArrayIter(X_train, y_train, 100, shuffle=True, label_name='sm_label', seed=10)
    val_iter = sp.io.NDArrayIter(X_val, y_val, 100, label_name='sm_label')
    prefix = str(tmp_path / 'mlp')
    softmax = mlp()
    model = sp.FeedForward.create(softmax, X=train_iter, eval_data=val_iter, eval_metric=sp.metric.np(accuracy),
                                  epoch_end_callback=sp.callback.do_checkpoint(prefix),
                                  ctx=[sp.cpu(i) for i in range(2)], num_epoch=NUM_EPOCH, learning_rate=0.1,
                                  wd=0.0004, momentum=0.9, seed=0)
    prob = model.predict(val_iter)
    assert prob.shape == (450, 10)
    assert accuracy(y_val, prob) > 0.95

    fc2 = softmax.get_internals()['fc2_output']
    feat = sp.FeedForward(symbol=fc2, arg_params=model.arg_params, aux_params=model.aux_params,
                          allow_extra_params=True).predict(val_iter)
    assert feat.shape == (450, 64)

    model2 = pickle.loads(pickle.dumps(model))
    assert np.sum(np.abs(prob - model2.predict(val_iter))) == 0

    model3 = sp.FeedForward.load(prefix, NUM_EPOCH)
    assert np.sum(np.abs(prob - model3.predict(val_iter))) == 0

    model.save(prefix, 128)
    model4 = sp.FeedForward.load(prefix, 128)
    assert np.sum(np.abs(prob - model4.predict(val_iter))) == 0
    assert sorted(p.name for p in tmp_path.iterdir())[:2] == ['mlp-0001.params', 'mlp-0002.params']

"""Ports of Apache MXNet 1.9.1 tests/python/unittest/test_metric.py, with MXNet's expected values."""
import copy
import json
import math

import numpy as np
import pytest
from scipy.stats import pearsonr

import sparkps as sp

metric = sp.metric


def check_metric(m, *args, **kwargs):
    m = metric.create(m, *args, **kwargs)
    m2 = metric.create(json.dumps(m.get_config()))
    assert m.get_config() == m2.get_config()


def test_metrics():
    """MXNet: test_metrics (get_config round trips through create)."""
    check_metric('acc', axis=0)
    check_metric('f1')
    check_metric('mcc')
    check_metric('perplexity', -1)
    check_metric('pearsonr')
    check_metric('pcc')
    check_metric('nll_loss')
    check_metric('loss')
    check_metric(metric.create(['acc', 'f1']))


def _check_global_metric(name, *args, shape=(10, 10), use_same_shape=False, seed=0, **kwargs):
    rng = np.random.default_rng(seed)

    def pred_label():
        if use_same_shape:
            return rng.uniform(0, 1, size=shape), rng.uniform(0, 1, size=shape)
        idx = rng.random(shape).argsort(1)
        pred = 1 - 0.1 * idx
        label = np.ones(shape[0])
        label[:shape[0] // 2] = 0
        return pred, label

    def same(r1, r2):
        assert r1[0] == r2[0]
        v1, v2 = (r1[1], r2[1]) if isinstance(r1[1], list) else ([r1[1]], [r2[1]])
        assert len(v1) == len(v2)
        for a, b in zip(v1, v2):
            assert a == b or (math.isnan(a) and math.isnan(b))

    m1 = metric.create(name, *args, **kwargs)
    m2 = copy.deepcopy(m1)
    for _ in range(10):                     # reset_local() leaves the global counts alone
        pred, label = pred_label()
        m1.update([label], [pred])
        m1.reset_local()
        m2.update([label], [pred])
    same(m1.get_global(), m2.get())
    m1.reset_local()                        # ... and clears the local ones
    m2.reset()
    pred, label = pred_label()
    m1.update([label], [pred])
    m1.reset_local()
    pred, label = pred_label()
    m1.update([label], [pred])
    m2.update([label], [pred])
    same(m1.get(), m2.get())


def test_global_metric():
    """MXNet: test_global_metric."""
    _check_global_metric('acc')
    _check_global_metric('TopKAccuracy', top_k=3)
    _check_global_metric('f1', shape=(10, 2))
    _check_global_metric('f1', shape=(10, 2), average='micro')
    _check_global_metric('mcc', shape=(10, 2))
    _check_global_metric('mcc', shape=(10, 2), average='micro')
    _check_global_metric('perplexity', -1)
    _check_global_metric('pearsonr', use_same_shape=True)
    _check_global_metric('pcc', shape=(10, 2))
    _check_global_metric('nll_loss')
    _check_global_metric('loss')
    _check_global_metric('ce')
    _check_global_metric('mae', use_same_shape=True)
    _check_global_metric('mse', use_same_shape=True)
    _check_global_metric('rmse', use_same_shape=True)

    def custom_metric(label, pred):
        return np.mean(np.abs(label - pred))
    _check_global_metric(custom_metric, use_same_shape=True)
    _check_global_metric(['acc', 'f1'], shape=(10, 2))


def test_nll_loss():
    """MXNet: test_nll_loss."""
    m = metric.create('nll_loss')
    pred = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], np.float32)
    m.update([np.array([2, 1], np.float32)], [pred])
    assert m.get()[1] == pytest.approx(-(np.log(pred[0][2]) + np.log(pred[1][1])) / 2)


def test_acc():
    """MXNet: test_acc."""
    pred = np.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])
    label = np.array([0, 1, 1])
    m = metric.create('acc')
    m.update([label], [pred])
    assert m.get()[1] == (np.argmax(pred, axis=1) == label).sum() / label.size


def test_acc_2d_label():
    """MXNet: test_acc_2d_label."""
    pred = np.array([[0.3, 0.7], [0, 1.], [0.4, 0.6], [0.8, 0.2], [0.3, 0.5], [0.6, 0.4]])
    label = np.array([[0, 1, 1], [1, 0, 1]])
    m = metric.create('acc')
    m.update([label], [pred])
    assert m.get()[1] == (np.argmax(pred, axis=1) == label.ravel()).sum() / float(label.size)


def test_loss_update():
    """MXNet: test_loss_update."""
    pred = np.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])
    m1, m2 = metric.create('loss'), metric.create('loss')
    m1.update(None, [pred])
    m2.update(None, pred)
    assert m1.get()[1] == m2.get()[1]


BATCHES = [(np.array([1, 0]), np.array([[0.1, 0.9], [0.5, 0.5]])),
           (np.array([1, 0]), np.array([[0.85, 0.15], [1.0, 0.0]])),
           (np.array([0]), np.array([[0.6, 0.4]])), (np.array([1]), np.array([[0.2, 0.8]]))]


def _binary_score_case(micro, macro, score1, score2, score_total):
    assert np.isnan(macro.get()[1]) and np.isnan(micro.get()[1])
    label, pred = np.array([0, 0]), np.array([[0.9, 0.1], [0.8, 0.2]])     # nothing positive: 0, not nan
    macro.update([label], [pred])
    micro.update([label], [pred])
    assert macro.get()[1] == 0.0 and micro.get()[1] == 0.0
    macro.reset()
    micro.reset()
    (l11, p11), (l12, p12), (l21, p21), (l22, p22) = BATCHES
    micro.update([l11, l12], [p11, p12])
    macro.update([l11, l12], [p11, p12])
    assert micro.num_inst == 4 and macro.num_inst == 1
    np.testing.assert_almost_equal(micro.get()[1], score1)
    np.testing.assert_almost_equal(macro.get()[1], score1)
    micro.update([l21, l22], [p21, p22])
    macro.update([l21, l22], [p21, p22])
    assert micro.num_inst == 6 and macro.num_inst == 2
    np.testing.assert_almost_equal(micro.get()[1], score_total)
    np.testing.assert_almost_equal(macro.get()[1], (score1 + score2) / 2)


def test_f1():
    """MXNet: test_f1 (macro: the mean of each update's F1; micro: one F1 over everything)."""
    fscore1 = 2.0 * 1 / (2 * 1 + 1 + 0)
    fscore2 = 2.0 * 1 / (2 * 1 + 0 + 0)
    total = 2.0 * (1 + 1) / (2 * (1 + 1) + (1 + 0) + (0 + 0))
    _binary_score_case(metric.create('f1', average='micro'), metric.F1(average='macro'), fscore1, fscore2, total)


def test_mcc():
    """MXNet: test_mcc."""
    def mcc(tp, fp, fn, tn):
        return (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    mcc1, mcc2, total = mcc(1, 0, 1, 2), mcc(1, 0, 0, 1), mcc(2, 0, 1, 3)
    _binary_score_case(metric.create('mcc', average='micro'), metric.MCC(average='macro'), mcc1, mcc2, total)


def test_perplexity():
    """MXNet: test_perplexity."""
    pred = np.array([[0.8, 0.2], [0.2, 0.8], [0, 1.]])
    label = np.array([0, 1, 1])
    p = pred[np.arange(label.size), label]
    m = metric.create('perplexity', -1)
    m.update([label], [pred])
    assert m.get()[1] == pytest.approx(np.exp(-np.log(p).sum() / label.size))


def test_pearsonr():
    """MXNet: test_pearsonr."""
    pred1 = np.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])
    label1 = np.array([[1, 0], [0, 1], [0, 1]])
    macro, micro = metric.create('pearsonr', average='macro'), metric.create('pearsonr', average='micro')
    assert np.isnan(macro.get()[1]) and np.isnan(micro.get()[1])
    macro.update([label1], [pred1])
    micro.update([label1], [pred1])
    expected = np.corrcoef(pred1.ravel(), label1.ravel())[0, 1]
    np.testing.assert_almost_equal(macro.get()[1], expected)
    np.testing.assert_almost_equal(macro.get()[1], pearsonr(pred1.ravel(), label1.ravel())[0])
    np.testing.assert_almost_equal(micro.get()[1], expected)
    pred2 = np.array([[1, 2], [3, 2], [4, 6]])
    label2 = np.array([[1, 0], [0, 1], [0, 1]])
    pred12, label12 = np.concatenate([pred1, pred2]), np.concatenate([label1, label2])
    expected = np.corrcoef(pred12.ravel(), label12.ravel())[0, 1]
    macro.reset()
    micro.update([label2], [pred2])
    macro.update([label12], [pred12])
    np.testing.assert_almost_equal(macro.get()[1], expected)
    np.testing.assert_almost_equal(micro.get()[1], expected)
    np.testing.assert_almost_equal(micro.get()[1], pearsonr(pred12.ravel(), label12.ravel())[0])


def cm_batch(cm):
    """A batch whose confusion matrix is ``cm`` (rows: labels, columns: predictions)."""
    ident = np.identity(len(cm))
    labels, preds = [], []
    for i, row in enumerate(cm):
        for j, count in enumerate(row):
            labels += [i] * count
            preds += [ident[j]] * count
    return [np.array(labels, np.int32)], [np.array(preds)]


def test_pcc():
    """MXNet: test_pcc."""
    labels, preds = cm_batch([[7, 3], [2, 5]])
    pcc_m = metric.create('pcc')
    pcc_m.update(labels, preds)
    pcc = pcc_m.get()[1]
    mcc_m = metric.create('mcc')
    mcc_m.update(labels, preds)
    np.testing.assert_almost_equal(pcc, mcc_m.get()[1])
    pear = metric.create('pearsonr')
    pear.update(labels, [p.argmax(axis=1) for p in preds])
    np.testing.assert_almost_equal(pcc, pear.get()[1])
    pcc_m.reset()
    pcc_m.update(labels, [p.argmax(axis=1) for p in preds])
    np.testing.assert_almost_equal(pcc, pcc_m.get()[1])

    cm = [[23, 13, 3], [7, 19, 11], [2, 5, 17]]
    k = 3
    ref = sum(cm[a][a] * cm[b][c] - cm[a][b] * cm[c][a] for a in range(k) for b in range(k) for c in range(k)) / (
        sum(sum(cm[a][b] for b in range(k)) * sum(sum(cm[f][g] for g in range(k)) for f in range(k) if f != a)
            for a in range(k))
        * sum(sum(cm[b][a] for b in range(k)) * sum(sum(cm[f][g] for f in range(k)) for g in range(k) if g != a)
              for a in range(k))) ** 0.5
    labels, preds = cm_batch(cm)
    pcc_m.reset()
    pcc_m.update(labels, preds)
    pcc = pcc_m.get()[1]
    np.testing.assert_almost_equal(pcc, ref)
    singles = list(zip(([np.array([lab])] for lab in labels[0]), ([p.reshape(1, -1)] for p in preds[0])))
    pcc_m.reset()
    for lab, p in reversed(singles):        # order, batch size and update frequency do not matter
        pcc_m.update(lab, p)
    assert pcc == pcc_m.get()[1]


def test_single_array_input():
    """MXNet: test_single_array_input."""
    pred = np.array([[1, 2, 3, 4]], np.float64)
    label = pred + 0.1
    for name, expected in (('mse', 0.01), ('mae', 0.1), ('rmse', 0.1)):
        m = metric.create(name)
        m.update(label, pred)
        np.testing.assert_almost_equal(m.get()[1], expected)


def test_np_metric_wraps_a_numpy_function():
    """mx.metric.np as MXNet's test_mlp uses it; a (sum, count) result adds both."""
    m = metric.np(lambda label, pred: (float(np.sum(label == pred.argmax(1))), label.size), name='acc')
    m.update([np.array([0, 1, 1])], [np.array([[1, 0], [0, 1], [1, 0]])])
    assert m.get() == ('acc', pytest.approx(2 / 3)) and m.num_inst == 3
    with pytest.raises(NotImplementedError):
        m.get_config()

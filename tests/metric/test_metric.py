"""Metrics against scikit-learn on random batches, accumulated over several updates."""
import numpy as np
import pytest
from sklearn import metrics as skm

from sparkps import metric
from sparkps.errors import ConfigError, DataError


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture
def classes():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, size=300)
    probs = _softmax(rng.normal(size=(300, 5)) + 2.0 * np.eye(5)[labels])
    return labels, probs


def _feed(m, labels, preds, batch=64):
    for start in range(0, len(labels), batch):
        m.update([labels[start:start + batch].astype(np.float32)], [preds[start:start + batch]])
    return m.get()[1]


def test_accuracy(classes):
    labels, probs = classes
    assert _feed(metric.create('acc'), labels, probs) == pytest.approx(
        skm.accuracy_score(labels, probs.argmax(1)))


def test_top_k_accuracy(classes):
    labels, probs = classes
    m = metric.TopKAccuracy(top_k=3)
    assert m.name == 'top_k_accuracy_3'
    assert _feed(m, labels, probs) == pytest.approx(skm.top_k_accuracy_score(labels, probs, k=3))


def test_cross_entropy(classes):
    labels, probs = classes
    assert _feed(metric.create('ce'), labels, probs) == pytest.approx(skm.log_loss(labels, probs))


@pytest.mark.parametrize('name,reference', [
    ('mse', skm.mean_squared_error), ('mae', skm.mean_absolute_error),
    ('rmse', lambda y, p: np.sqrt(skm.mean_squared_error(y, p)))])
def test_regression_metrics(name, reference):
    rng = np.random.default_rng(1)
    y, p = rng.normal(size=(200, 3)), rng.normal(size=(200, 3))
    assert _feed(metric.create(name), y, p) == pytest.approx(reference(y, p))
    y1, p1 = y[:, 0], p[:, :1]
    assert _feed(metric.create(name), y1, p1) == pytest.approx(reference(y1, p1[:, 0]))


def test_auc_with_ties():
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, size=400)
    scores = np.round(rng.random(400) * 0.5 + 0.3 * labels, 1)
    assert _feed(metric.create('auc'), labels, scores) == pytest.approx(skm.roc_auc_score(labels, scores))
    two_column = np.stack([1 - scores, scores], axis=1)
    assert _feed(metric.AUC(), labels, two_column) == pytest.approx(skm.roc_auc_score(labels, scores))


def test_f1_micro_is_sklearn_f1_over_all_batches_and_macro_the_mean_of_batch_scores():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, size=300)
    probs = _softmax(rng.normal(size=(300, 2)) + np.eye(2)[labels])
    assert _feed(metric.create('f1', average='micro'), labels, probs) == pytest.approx(
        skm.f1_score(labels, probs.argmax(1)))
    assert _feed(metric.F1(average='micro'), labels, probs[:, 1]) == pytest.approx(
        skm.f1_score(labels, (probs[:, 1] > 0.5).astype(int)))
    per_batch = [skm.f1_score(labels[i:i + 64], probs[i:i + 64].argmax(1)) for i in range(0, 300, 64)]
    assert _feed(metric.F1(), labels, probs) == pytest.approx(np.mean(per_batch))
    with pytest.raises(DataError, match="'f1'.*0 or 1"):
        metric.F1().update([np.array([0, 2])], [probs[:2]])


def test_composite_and_name_value(classes):
    labels, probs = classes
    m = metric.create(['acc', 'ce'])
    _feed(m, labels, probs)
    names = [n for n, _ in m.get_name_value()]
    assert names == ['accuracy', 'cross-entropy']
    m.reset()
    assert all(np.isnan(v) for _, v in m.get_name_value())


def test_custom_metric_from_callable(classes):
    labels, probs = classes

    def mean_label(label, pred):
        return label.mean()

    m = metric.create(mean_label)
    m.update([labels.astype(float)], [probs])
    assert m.get() == ('mean_label', pytest.approx(labels.mean()))


def test_shape_mismatch_names_the_metric(classes):
    labels, probs = classes
    with pytest.raises(DataError, match="'accuracy'.*10 labels but 12"):
        metric.create('acc').update([labels[:10]], [probs[:12]])
    with pytest.raises(DataError, match="'mse'"):
        metric.create('mse').update([np.zeros((4, 2))], [np.zeros((4, 3))])
    with pytest.raises(DataError, match="'cross-entropy'.*\\[0, 5\\)"):
        metric.create('ce').update([np.array([7.0])], [probs[:1]])
    with pytest.raises(DataError, match="'accuracy'.*1 label arrays but 2"):
        metric.create('acc').update([labels], [probs, probs])


def test_unknown_metric_is_config_error():
    with pytest.raises(ConfigError, match='bogus'):
        metric.create('bogus')

"""CTR metrics: exact AUC equals scikit-learn's over predictions gathered from several workers (and a mean
of per-worker AUCs does not), the histogram AUC merges across workers, logloss and COPC."""
import numpy as np
import pytest
from sklearn.metrics import log_loss, roc_auc_score

from sparkps import metric
from sparkps.errors import DataError

RNG = np.random.default_rng(3)


def shards():
    """Three workers whose score scales differ, as when each sees a different slice of traffic."""
    out = []
    for shift in (0.0, 1.5, -1.0):
        y = (RNG.random(4000) < 0.3).astype(float)
        logit = 1.2 * y + RNG.normal(size=4000) + shift
        out.append((y, 1 / (1 + np.exp(-logit))))
    return out


def test_gathered_auc_equals_sklearn_and_mean_of_workers_does_not():
    parts = shards()
    per_worker = []
    for y, p in parts:
        m = metric.create('auc')
        m.update([y], [p])
        per_worker.append(m)
    y_all = np.concatenate([y for y, _ in parts])
    p_all = np.concatenate([p for _, p in parts])
    exact = roc_auc_score(y_all, p_all)
    assert metric.gathered_auc(per_worker).get()[1] == pytest.approx(exact, abs=1e-12)
    assert metric.binary_auc(y_all, p_all) == pytest.approx(exact, abs=1e-12)
    mean_of_workers = np.mean([m.get()[1] for m in per_worker])
    assert abs(mean_of_workers - exact) > 0.01


def test_auc_ties_are_averaged_as_sklearn():
    y = RNG.integers(0, 2, 5000)
    p = np.round(RNG.random(5000), 1)             # eleven distinct scores: many ties
    assert metric.binary_auc(y, p) == pytest.approx(roc_auc_score(y, p), abs=1e-12)


def test_histogram_auc_merges_to_the_exact_value():
    parts = shards()
    merged = metric.create('auc_hist')
    for y, p in parts:
        worker = metric.HistogramAUC()
        worker.update([y], [p])
        merged.merge(worker)
    y_all = np.concatenate([y for y, _ in parts])
    p_all = np.concatenate([p for _, p in parts])
    assert merged.get()[1] == pytest.approx(roc_auc_score(y_all, p_all), abs=1e-4)
    with pytest.raises(DataError, match="probabilities"):
        merged.update([np.array([1.0])], [np.array([1.5])])


def test_logloss_and_copc():
    y, p = shards()[0]
    ll = metric.create('logloss')
    ll.update([y[:1000]], [p[:1000]])
    ll.update([y[1000:]], [np.stack([1 - p[1000:], p[1000:]], axis=1)])     # (n, 2) probabilities too
    assert ll.get()[1] == pytest.approx(log_loss(y, p), rel=1e-9)
    copc = metric.create('copc')
    copc.update([y], [p])
    assert copc.get() == ('copc', pytest.approx(y.sum() / p.sum()))
    with pytest.raises(DataError, match="'copc': labels must be 0 or 1"):
        copc.update([np.array([2.0])], [np.array([0.5])])


@pytest.mark.parametrize("name", ["logloss", "copc", "auc_hist"])
def test_ctr_metrics_round_trip_their_config_and_keep_global_counts(name):
    y, p = shards()[1]
    m = metric.create(name)
    m.update([y], [p])
    again = metric.create(m.get_config())
    again.update([y], [p])
    assert again.get() == pytest.approx(m.get())
    if name == "auc_hist":
        return
    m.reset_local()
    m.update([y[:100]], [p[:100]])
    both = metric.create(name)
    both.update([np.concatenate([y, y[:100]])], [np.concatenate([p, p[:100]])])
    assert m.get_global()[1] == pytest.approx(both.get()[1])
    alone = metric.create(name)
    alone.update([y[:100]], [p[:100]])
    assert m.get()[1] == pytest.approx(alone.get()[1])

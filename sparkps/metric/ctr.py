"""Metrics a click-through-rate team reads: exact AUC over every prediction (never a mean of per-worker
AUCs), a mergeable histogram AUC, logloss and COPC (clicks over predicted clicks).

    auc = binary_auc(labels, scores)          # equals scikit-learn's roc_auc_score
"""
import numpy as np

from sparkps.errors import DataError
from sparkps.metric.base import AUC, EvalMetric, _positive_scores


def binary_auc(labels, scores):
    """Exact ROC AUC of 0/1 ``labels`` against ``scores`` (ties count one half); nan with one class only.
    Equals scikit-learn's ``roc_auc_score``."""
    metric = AUC()
    metric.update([np.asarray(labels)], [np.asarray(scores)])
    return metric.get()[1]


def gathered_auc(metrics, name='auc'):
    """One AUC metric holding every prediction of ``metrics`` (AUC metrics, e.g. one per worker), so its
    value is the exact AUC over all of them — never a mean of per-worker AUCs."""
    merged = AUC(name=name)
    for metric in metrics:
        for labels, scores in zip(metric._labels, metric._scores):
            merged.update([labels], [scores])
    return merged


class HistogramAUC(EvalMetric):
    """AUC from per-label counts of scores in ``bins`` equal bins over [0, 1]: a small state that merges
    across workers by adding counts (``merge``). Pairs whose scores share a bin count one half, so with the
    default 2**20 bins it is within about 1e-5 of the exact AUC on probabilities."""

    def __init__(self, bins=1 << 20, name='auc', **kwargs):
        self.bins = int(bins)
        super().__init__(name, bins=self.bins, **kwargs)

    def reset_local(self):
        super().reset_local()
        self.counts = np.zeros((2, self.bins), dtype=np.int64)

    def get_global(self):
        """The same counts as ``get`` (a histogram has no separate global part)."""
        return self.get()

    def _update_one(self, label, pred):
        label, score = _positive_scores(self, label, pred)
        if score.size and (score.min() < 0 or score.max() > 1 or np.isnan(score).any()):
            raise DataError(f"metric {self.name!r}: scores must be probabilities in [0, 1]")
        index = np.minimum((score * self.bins).astype(np.int64), self.bins - 1)
        self.counts += np.stack([np.bincount(index[label == c], minlength=self.bins) for c in (0, 1)])
        self.num_inst += label.size

    def merge(self, other):
        """Add another HistogramAUC's counts (same bins) into this one; returns self."""
        if other.bins != self.bins:
            raise DataError(f"metric {self.name!r}: cannot merge {other.bins} bins into {self.bins}")
        self.counts += other.counts
        self.num_inst += other.num_inst
        return self

    def get(self):
        negatives, positives = self.counts
        n_pos, n_neg = int(positives.sum()), int(negatives.sum())
        if n_pos == 0 or n_neg == 0:
            return self.name, float('nan')
        below = np.cumsum(negatives) - negatives          # negatives in lower bins
        wins = float((positives * below).sum()) + 0.5 * float((positives * negatives).sum())
        return self.name, wins / (n_pos * n_neg)


class LogLoss(EvalMetric):
    """Mean binary cross-entropy -[y log p + (1-y) log(1-p)] of 0/1 labels, p clipped to [eps, 1-eps]."""

    def __init__(self, eps=1e-15, name='logloss', **kwargs):
        self.eps = float(eps)
        super().__init__(name, eps=self.eps, **kwargs)

    def _update_one(self, label, pred):
        label, p = _positive_scores(self, label, pred)
        p = np.clip(p, self.eps, 1 - self.eps)
        self.sum_metric += float(-(label * np.log(p) + (1 - label) * np.log1p(-p)).sum())
        self.num_inst += label.size


class COPC(EvalMetric):
    """Clicks over predicted clicks: sum(labels) / sum(p). 1 for a calibrated model; TensorNet's COPC."""

    def __init__(self, name='copc', **kwargs):
        super().__init__(name, **kwargs)

    def reset(self):
        self.global_clicks = self.global_predicted = 0.0
        super().reset()

    def reset_local(self):
        super().reset_local()
        self.clicks = self.predicted = 0.0

    def _update_one(self, label, pred):
        label, p = _positive_scores(self, label, pred)
        clicks, predicted = float(label.sum()), float(p.sum())
        self.clicks += clicks
        self.predicted += predicted
        self.global_clicks += clicks
        self.global_predicted += predicted
        self.num_inst += label.size

    def get(self):
        return self.name, (self.clicks / self.predicted) if self.predicted else float('nan')

    def get_global(self):
        return self.name, (self.global_clicks / self.global_predicted) if self.global_predicted else float('nan')

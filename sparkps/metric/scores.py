"""MXNet 1.x's score metrics: F1, MCC, PCC, Perplexity, NegativeLogLikelihood and PearsonCorrelation.

``average`` names how scores combine over ``update`` calls, as in MXNet 1.x: ``'macro'`` averages the score
of each update (MXNet's default), ``'micro'`` scores the counts of everything seen at once. F1 and MCC are
binary (labels 0/1; predictions (n, 2) scored by arg-max, or (n,)/(n, 1) probabilities of class 1 cut at
0.5); PCC is their multi-class generalisation (the Pearson correlation of the confusion matrix).

    f1 = create('f1', average='micro')          # sparkps.metric.create
    f1.update([labels], [probabilities])        # -> f1.get() == ('f1', 0.8)
"""
import math

import numpy

from sparkps.errors import ConfigError, DataError
from sparkps.metric.base import (
    CrossEntropy,
    CustomMetric,
    EvalMetric,
    _as_list,
    _host,
    _positive_scores,
)

AVERAGES = ('macro', 'micro')


def _check_average(owner, average):
    if average not in AVERAGES:
        raise ConfigError(f"{owner}: average must be 'macro' or 'micro', got {average!r}")
    return average


class _BinaryCounts:
    """True/false positives/negatives, local and global."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.local = numpy.zeros(4, numpy.int64)        # tp, fp, fn, tn
        self.total = numpy.zeros(4, numpy.int64)

    def add(self, metric, label, pred):
        label, score = _positive_scores(metric, label, pred)
        wide = pred.ndim == 2 and pred.shape[1] == 2
        predicted = numpy.argmax(pred, axis=1) if wide else (score > 0.5).astype(numpy.int64)
        batch = numpy.array([numpy.sum((predicted == 1) & (label == 1)), numpy.sum((predicted == 1) & (label == 0)),
                             numpy.sum((predicted == 0) & (label == 1)), numpy.sum((predicted == 0) & (label == 0))])
        self.local += batch
        self.total += batch


def _fscore(counts):
    tp, fp, fn, _ = (float(c) for c in counts)
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _matthews(counts):
    """MCC with zero factors of the denominator replaced by 1 (MXNet's rule); 0 without examples."""
    tp, fp, fn, tn = (float(c) for c in counts)
    if tp + fp + fn + tn == 0:
        return 0.0
    denom = 1.0
    for term in (tp + fp, tp + fn, tn + fp, tn + fn):
        denom *= term if term != 0.0 else 1.0
    return (tp * tn - fp * fn) / math.sqrt(denom)


class _BinaryScore(EvalMetric):
    """F1/MCC: binary counts turned into one score per update ('macro') or over everything ('micro')."""
    score = None

    def __init__(self, name, output_names=None, label_names=None, average='macro'):
        self.average = _check_average(type(self).__name__, average)
        self._counts = _BinaryCounts()
        super().__init__(name, output_names, label_names, average=average)

    def reset(self):
        self._counts.reset()
        super().reset()

    def reset_local(self):
        super().reset_local()
        self._counts.local[:] = 0

    def update(self, labels, preds):
        """Add one update's labels and predictions (lists of arrays, or single arrays)."""
        labels, preds = _as_list(labels), _as_list(preds)
        if len(labels) != len(preds):
            raise DataError(f"metric {self.name!r}: {len(labels)} label arrays but {len(preds)} outputs")
        for label, pred in zip(labels, preds):
            self._counts.add(self, _host(label), _host(pred))
        score = type(self).score
        if self.average == 'macro':
            self.sum_metric += score(self._counts.local)
            self.global_sum_metric += score(self._counts.total)
            self.num_inst += 1
            self.global_num_inst += 1
            self._counts.reset()
        else:
            self.num_inst, self.global_num_inst = int(self._counts.local.sum()), int(self._counts.total.sum())
            self.sum_metric = score(self._counts.local) * self.num_inst
            self.global_sum_metric = score(self._counts.total) * self.global_num_inst


class F1(_BinaryScore):
    """F1 = 2 precision recall / (precision + recall) of a binary classifier (0 when undefined)."""
    score = staticmethod(_fscore)

    def __init__(self, name='f1', output_names=None, label_names=None, average='macro'):
        super().__init__(name, output_names, label_names, average)


class MCC(_BinaryScore):
    """Matthews correlation coefficient of a binary classifier (MXNet's zero-denominator rule)."""
    score = staticmethod(_matthews)

    def __init__(self, name='mcc', output_names=None, label_names=None, average='macro'):
        super().__init__(name, output_names, label_names, average)


def _confusion_mcc(cmat):
    """Multi-class MCC (Gorodkin's R_K) of a confusion matrix; nan when a marginal is constant."""
    n = cmat.sum()
    x, y = cmat.sum(axis=1), cmat.sum(axis=0)
    cov_xx, cov_yy = numpy.sum(x * (n - x)), numpy.sum(y * (n - y))
    if cov_xx == 0 or cov_yy == 0:
        return float('nan')
    cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
    return float(cov_xy / math.sqrt(cov_xx * cov_yy))


class PCC(EvalMetric):
    """Pearson correlation of the confusion matrix (multi-class MCC) over everything seen; predictions are
    class scores (arg-max taken) or class ids shaped like the labels."""

    def __init__(self, name='pcc', output_names=None, label_names=None):
        self.k = 2
        super().__init__(name, output_names, label_names)

    def reset(self):
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))

    def _grow(self, k):
        pad = ((0, k - self.k), (0, k - self.k))
        self.lcm, self.gcm, self.k = numpy.pad(self.lcm, pad), numpy.pad(self.gcm, pad), k

    def update(self, labels, preds):
        """Count one update's (prediction, label) pairs into the confusion matrices."""
        labels, preds = _as_list(labels), _as_list(preds)
        if len(labels) != len(preds):
            raise DataError(f"metric {self.name!r}: {len(labels)} label arrays but {len(preds)} outputs")
        for label, pred in zip(labels, preds):
            label, pred = _host(label).reshape(-1).astype(numpy.int64), _host(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape and pred.ndim == 2 else pred
            pred = pred.reshape(-1).astype(numpy.int64)
            self._check_rows(label, pred)
            if label.size and min(label.min(), pred.min()) < 0:
                raise DataError(f"metric {self.name!r}: class ids must be >= 0")
            top = int(max(label.max(initial=0), pred.max(initial=0))) + 1
            if top > self.k:
                self._grow(top)
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred, label), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return _confusion_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        return _confusion_mcc(self.gcm) * self.global_num_inst


class Perplexity(EvalMetric):
    """exp(mean negative log-probability of the label) over the ``axis`` of class scores; labels equal to
    ``ignore_label`` (None: none) are left out. Probabilities are floored at 1e-10, as MXNet."""

    def __init__(self, ignore_label, axis=-1, name='perplexity', output_names=None, label_names=None):
        self.ignore_label, self.axis = ignore_label, int(axis)
        super().__init__(name, output_names, label_names, ignore_label=ignore_label)

    def _update_one(self, label, pred):
        scores = numpy.moveaxis(pred, self.axis, -1)
        classes = scores.shape[-1]
        label = label.reshape(-1)
        if label.size * classes != scores.size:
            raise DataError(f"metric {self.name!r}: label shape {label.shape} does not fit prediction shape "
                            f"{pred.shape} (classes on axis {self.axis})")
        index = numpy.clip(label.astype(numpy.int64), 0, classes - 1)
        prob = numpy.take_along_axis(scores.reshape(-1, classes), index[:, None], axis=1)[:, 0]
        keep = numpy.ones(label.size, bool) if self.ignore_label is None else label != self.ignore_label
        self.sum_metric -= float(numpy.sum(numpy.log(numpy.maximum(1e-10, prob[keep]))))
        self.num_inst += int(keep.sum())

    def _value(self, total, count):
        return math.exp(total / count)


class NegativeLogLikelihood(CrossEntropy):
    """Mean ``-log(p[label] + eps)`` (MXNet's 'nll_loss'; the same sum as CrossEntropy under its own name)."""

    def __init__(self, eps=1e-12, name='nll-loss', output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


class _Moments:
    """Count, means and co-moments of two streams, merged batch by batch (Chan et al.), exact."""

    def __init__(self):
        self.n, self.mean_x, self.mean_y, self.m_xx, self.m_yy, self.m_xy = 0, 0.0, 0.0, 0.0, 0.0, 0.0

    def add(self, x, y):
        n_b = x.size
        if n_b == 0:
            return
        mx, my = float(x.mean()), float(y.mean())
        dx, dy = x - mx, y - my
        n = self.n + n_b
        delta_x, delta_y = mx - self.mean_x, my - self.mean_y
        self.m_xx += float(dx @ dx) + delta_x * delta_x * self.n * n_b / n
        self.m_yy += float(dy @ dy) + delta_y * delta_y * self.n * n_b / n
        self.m_xy += float(dx @ dy) + delta_x * delta_y * self.n * n_b / n
        self.mean_x += delta_x * n_b / n
        self.mean_y += delta_y * n_b / n
        self.n = n

    def correlation(self):
        denom = math.sqrt(self.m_xx * self.m_yy)
        return self.m_xy / denom if denom > 0 else float('nan')


class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels (same shapes, flattened): per (label, pred) pair and
    averaged ('macro'), or over everything seen ('micro')."""

    def __init__(self, name='pearsonr', output_names=None, label_names=None, average='macro'):
        self.average = _check_average('PearsonCorrelation', average)
        super().__init__(name, output_names, label_names, average=average)

    def reset(self):
        self._global_moments = _Moments()
        super().reset()

    def reset_local(self):
        super().reset_local()
        self._moments = _Moments()

    def _update_one(self, label, pred):
        if label.shape != pred.shape:
            raise DataError(f"metric {self.name!r}: label shape {label.shape} does not match prediction shape "
                            f"{pred.shape}")
        x, y = pred.reshape(-1).astype(numpy.float64), label.reshape(-1).astype(numpy.float64)
        if self.average == 'macro':
            pair = _Moments()
            pair.add(x, y)
            self.sum_metric += pair.correlation()
        else:
            self._moments.add(x, y)
            self._global_moments.add(x, y)
        self.num_inst += 1

    def get(self):
        if self.average == 'micro' and self.num_inst:
            return self.name, self._moments.correlation()
        return super().get()

    def get_global(self):
        if self.average == 'micro' and self.global_num_inst:
            return self.name, self._global_moments.correlation()
        return super().get_global()


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A CustomMetric from ``numpy_feval(label, pred)`` on numpy arrays (MXNet's ``mx.metric.np``)."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = getattr(numpy_feval, '__name__', 'custom')
    return CustomMetric(feval, name, allow_extra_outputs)

"""Evaluation metrics with MXNet's interface.

    acc = sparkps.train.metric.create('acc')
    acc.update(labels=[y], preds=[probabilities])    # lists of arrays (single arrays accepted)
    acc.get()  -> ('accuracy', 0.97)

Arrays may be numpy or CuPy (copied to the host). Shapes that do not fit raise DataError naming the metric.
"""
import numpy as np

from sparkps.errors import ConfigError, DataError


def _host(array):
    if isinstance(array, np.ndarray):
        return array
    return array.get() if hasattr(array, 'get') else np.asarray(array)


def _as_list(arrays):
    return list(arrays) if isinstance(arrays, (list, tuple)) else [arrays]


class EvalMetric:
    """Base: accumulates ``sum_metric`` over ``num_inst`` instances; ``get()`` gives their ratio."""

    def __init__(self, name, output_names=None, label_names=None):
        self.name = str(name)
        self.output_names, self.label_names = output_names, label_names
        self.reset()

    def reset(self):
        """Forget everything accumulated so far."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def update(self, labels, preds):
        """Accumulate one batch: ``labels`` and ``preds`` are lists of arrays (or single arrays)."""
        labels, preds = _as_list(labels), _as_list(preds)
        if len(labels) != len(preds):
            raise DataError(f"metric {self.name!r}: {len(labels)} label arrays but {len(preds)} outputs")
        for label, pred in zip(labels, preds):
            self._update_one(_host(label), _host(pred))

    def _update_one(self, label, pred):
        raise NotImplementedError

    def get(self):
        """Return ``(name, value)``; the value is nan before any update."""
        if self.num_inst == 0:
            return self.name, float('nan')
        return self.name, float(self.sum_metric / self.num_inst)

    def get_name_value(self):
        """Return ``[(name, value), ...]``."""
        name, value = self.get()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))

    def _check_rows(self, label, pred):
        if label.shape[0] != pred.shape[0]:
            raise DataError(f"metric {self.name!r}: {label.shape[0]} labels but {pred.shape[0]} predictions "
                            f"(label shape {label.shape}, prediction shape {pred.shape})")

    def _class_labels(self, label, pred):
        """Flatten integer class labels and check them against the number of predicted classes."""
        label = label.reshape(-1)
        self._check_rows(label, pred)
        if pred.ndim != 2:
            raise DataError(f"metric {self.name!r}: class scores must be (batch, classes), got {pred.shape}")
        as_int = label.astype(np.int64)
        if np.any(as_int != label) or (label.size and (as_int.min() < 0 or as_int.max() >= pred.shape[1])):
            raise DataError(f"metric {self.name!r}: labels must be integers in [0, {pred.shape[1]}), got "
                            f"values in [{label.min()}, {label.max()}]")
        return as_int

    def __repr__(self):
        return f'EvalMetric: {dict(self.get_name_value())}'


class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values."""

    def __init__(self, metrics=None, name='composite'):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name)

    def add(self, metric):
        """Append a metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def reset(self):
        for metric in getattr(self, 'metrics', []):
            metric.reset()

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def get(self):
        names, values = [], []
        for metric in self.metrics:
            for name, value in metric.get_name_value():
                names.append(name)
                values.append(value)
        return names, values


class Accuracy(EvalMetric):
    """Share of rows whose arg-max class equals the label (or equal labels when shapes match)."""

    def __init__(self, axis=1, name='accuracy', **kwargs):
        self.axis = axis
        super().__init__(name, **kwargs)

    def _update_one(self, label, pred):
        if pred.shape != label.shape:
            label = self._class_labels(label, pred)
            pred = np.argmax(pred, axis=self.axis)
        pred = pred.reshape(-1).astype(np.int64)
        label = label.reshape(-1).astype(np.int64)
        self.sum_metric += float((pred == label).sum())
        self.num_inst += label.size


class TopKAccuracy(EvalMetric):
    """Share of rows whose label is among the ``top_k`` highest scores."""

    def __init__(self, top_k=1, name='top_k_accuracy', **kwargs):
        if int(top_k) < 1:
            raise ConfigError(f"top_k must be >= 1, got {top_k!r}")
        self.top_k = int(top_k)
        super().__init__(f'{name}_{self.top_k}', **kwargs)

    def _update_one(self, label, pred):
        label = self._class_labels(label, pred)
        k = min(self.top_k, pred.shape[1])
        top = np.argpartition(-pred, k - 1, axis=1)[:, :k]
        self.sum_metric += float((top == label[:, None]).any(axis=1).sum())
        self.num_inst += label.size


class CrossEntropy(EvalMetric):
    """Mean negative log-probability of the true class: ``-log(p[label] + eps)``."""

    def __init__(self, eps=1e-12, name='cross-entropy', **kwargs):
        self.eps = eps
        super().__init__(name, **kwargs)

    def _update_one(self, label, pred):
        label = self._class_labels(label, pred)
        prob = pred[np.arange(label.size), label]
        self.sum_metric += float(-np.log(prob + self.eps).sum())
        self.num_inst += label.size


class _Regression(EvalMetric):
    """Element-wise errors averaged over every element; 1-D labels are matched to (batch, 1) outputs."""

    def _errors(self, label, pred):
        if label.ndim == 1 and pred.ndim == 2 and pred.shape[1] == 1:
            label = label.reshape(-1, 1)
        if pred.ndim == 1 and label.ndim == 2 and label.shape[1] == 1:
            pred = pred.reshape(-1, 1)
        if label.shape != pred.shape:
            raise DataError(f"metric {self.name!r}: label shape {label.shape} does not match prediction "
                            f"shape {pred.shape}")
        return pred.astype(np.float64) - label.astype(np.float64)


class MSE(_Regression):
    """Mean squared error."""

    def __init__(self, name='mse', **kwargs):
        super().__init__(name, **kwargs)

    def _update_one(self, label, pred):
        err = self._errors(label, pred)
        self.sum_metric += float((err * err).sum())
        self.num_inst += err.size


class RMSE(MSE):
    """Root of the mean squared error over everything seen (not a mean of per-batch roots)."""

    def __init__(self, name='rmse', **kwargs):
        super().__init__(name, **kwargs)

    def get(self):
        name, value = super().get()
        return name, float(np.sqrt(value))


class MAE(_Regression):
    """Mean absolute error."""

    def __init__(self, name='mae', **kwargs):
        super().__init__(name, **kwargs)

    def _update_one(self, label, pred):
        err = self._errors(label, pred)
        self.sum_metric += float(np.abs(err).sum())
        self.num_inst += err.size


def _positive_scores(metric, label, pred):
    """Binary labels and the score of class 1 from (n,), (n, 1) or (n, 2) predictions."""
    label = label.reshape(-1)
    if pred.ndim == 2 and pred.shape[1] == 2:
        pred = pred[:, 1]
    elif pred.ndim == 2 and pred.shape[1] == 1 or pred.ndim == 1:
        pred = pred.reshape(-1)
    else:
        raise DataError(f"metric {metric.name!r}: binary predictions must be (n,), (n, 1) or (n, 2), "
                        f"got {pred.shape}")
    metric._check_rows(label, pred)
    if not np.isin(label, (0, 1)).all():
        raise DataError(f"metric {metric.name!r}: labels must be 0 or 1, got {np.unique(label)[:5]}")
    return label.astype(np.int64), pred.astype(np.float64)


class AUC(EvalMetric):
    """Area under the ROC curve of a binary classifier (ties count one half), over everything seen."""

    def __init__(self, name='auc', **kwargs):
        super().__init__(name, **kwargs)

    def reset(self):
        super().reset()
        self._labels, self._scores = [], []

    def _update_one(self, label, pred):
        label, score = _positive_scores(self, label, pred)
        self._labels.append(label)
        self._scores.append(score)
        self.num_inst += label.size

    def get(self):
        if not self._labels:
            return self.name, float('nan')
        label, score = np.concatenate(self._labels), np.concatenate(self._scores)
        positives = int(label.sum())
        negatives = label.size - positives
        if positives == 0 or negatives == 0:
            return self.name, float('nan')
        order = np.argsort(score, kind='mergesort')
        ranks = np.empty(score.size)
        sorted_scores = score[order]
        _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
        average_rank = first + (counts + 1) / 2.0          # 1-based mean rank of each tie group
        ranks[order] = np.repeat(average_rank, counts)
        u = ranks[label == 1].sum() - positives * (positives + 1) / 2.0
        return self.name, float(u / (positives * negatives))


class F1(EvalMetric):
    """F1 score: ``average='binary'`` (class 1 positive) or ``'macro'`` (mean over classes seen)."""

    def __init__(self, average='binary', name='f1', **kwargs):
        if average not in ('binary', 'macro'):
            raise ConfigError(f"F1: average must be 'binary' or 'macro', got {average!r}")
        self.average = average
        super().__init__(name, **kwargs)

    def reset(self):
        super().reset()
        self._tp, self._fp, self._fn = (np.zeros(2, dtype=np.int64) for _ in range(3))

    def _grow(self, size):
        for attr in ('_tp', '_fp', '_fn'):
            counts = getattr(self, attr)
            if counts.size < size:
                setattr(self, attr, np.concatenate([counts, np.zeros(size - counts.size, np.int64)]))

    def _update_one(self, label, pred):
        if self.average == 'binary':
            label, score = _positive_scores(self, label, pred)
            predicted = (score > 0.5).astype(np.int64) if pred.ndim == 1 or pred.shape[1] == 1 else \
                np.argmax(pred, axis=1)
        else:
            label = self._class_labels(label, pred)
            predicted = np.argmax(pred, axis=1)
        self._grow(max(int(label.max(initial=0)), int(predicted.max(initial=0))) + 1)
        size = self._tp.size
        hit = label == predicted
        self._tp += np.bincount(label[hit], minlength=size)
        self._fp += np.bincount(predicted[~hit], minlength=size)
        self._fn += np.bincount(label[~hit], minlength=size)
        self.num_inst += label.size

    def get(self):
        if self.num_inst == 0:
            return self.name, float('nan')
        tp, fp, fn = (c.astype(np.float64) for c in (self._tp, self._fp, self._fn))
        denom = 2 * tp + fp + fn
        f1 = np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)
        if self.average == 'binary':
            return self.name, float(f1[1])
        seen = (tp + fp + fn) > 0
        return self.name, float(f1[seen].mean())


class Loss(EvalMetric):
    """Mean of the outputs themselves (for ``MakeLoss`` heads); labels are ignored."""

    def __init__(self, name='loss', **kwargs):
        super().__init__(name, **kwargs)

    def _update_one(self, label, pred):
        self.sum_metric += float(np.sum(pred))
        self.num_inst += pred.size


class CustomMetric(EvalMetric):
    """Wrap ``feval(label, pred) -> float`` (numpy arrays), averaged over batches."""

    def __init__(self, feval, name=None, **kwargs):
        self._feval = feval
        super().__init__(name or getattr(feval, '__name__', 'custom'), **kwargs)

    def _update_one(self, label, pred):
        self.sum_metric += float(self._feval(label, pred))
        self.num_inst += 1


_NAMES = {'acc': Accuracy, 'accuracy': Accuracy, 'top_k_accuracy': TopKAccuracy, 'top_k_acc': TopKAccuracy,
          'ce': CrossEntropy, 'cross-entropy': CrossEntropy, 'mse': MSE, 'mae': MAE, 'rmse': RMSE,
          'auc': AUC, 'f1': F1, 'loss': Loss}


def create(metric, **kwargs):
    """Build a metric from a name ('acc', 'ce', 'mse', 'mae', 'rmse', 'auc', 'f1', 'top_k_accuracy',
    'loss'), a callable ``feval(label, pred)``, a list of those (-> CompositeEvalMetric) or a metric."""
    if isinstance(metric, EvalMetric):
        return metric
    if isinstance(metric, (list, tuple)):
        return CompositeEvalMetric([create(m, **kwargs) for m in metric])
    if callable(metric):
        return CustomMetric(metric, **kwargs)
    cls = _NAMES.get(str(metric).lower())
    if cls is None:
        raise ConfigError(f"unknown metric {metric!r}; known: {sorted(_NAMES)}")
    return cls(**kwargs)


# ---- click-through-rate metrics -------------------------------------------------------------------------
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
        merged._labels.extend(metric._labels)
        merged._scores.extend(metric._scores)
        merged.num_inst += metric.num_inst
    return merged


class HistogramAUC(EvalMetric):
    """AUC from per-label counts of scores in ``bins`` equal bins over [0, 1]: a small state that merges
    across workers by adding counts (``merge``). Pairs whose scores share a bin count one half, so with the
    default 2**20 bins it is within about 1e-5 of the exact AUC on probabilities."""

    def __init__(self, bins=1 << 20, name='auc', **kwargs):
        self.bins = int(bins)
        super().__init__(name, **kwargs)

    def reset(self):
        super().reset()
        self.counts = np.zeros((2, self.bins), dtype=np.int64)

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
        self.eps = eps
        super().__init__(name, **kwargs)

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
        super().reset()
        self.clicks = 0.0
        self.predicted = 0.0

    def _update_one(self, label, pred):
        label, p = _positive_scores(self, label, pred)
        self.clicks += float(label.sum())
        self.predicted += float(p.sum())
        self.num_inst += label.size

    def get(self):
        if self.num_inst == 0 or self.predicted == 0:
            return self.name, float('nan')
        return self.name, self.clicks / self.predicted


_NAMES.update({'logloss': LogLoss, 'copc': COPC, 'auc_hist': HistogramAUC})

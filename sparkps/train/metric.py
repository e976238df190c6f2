"""Evaluation metrics with MXNet's interface.

    acc = sparkps.train.metric.create('acc')
    acc.update(labels=[y], preds=[probabilities])    # lists of arrays (single arrays accepted)
    acc.get()  -> ('accuracy', 0.97)

Arrays may be numpy or CuPy (copied to the host). Shapes that do not fit raise DataError naming the metric.
"""
import numpy as np

from sparkps.backend import asnumpy as _host
from sparkps.errors import ConfigError, DataError


def _as_list(arrays):
    return list(arrays) if isinstance(arrays, (list, tuple)) else [arrays]


def _pairs(name, value):
    if not isinstance(name, list):
        name, value = [name], [value]
    return list(zip(name, value))


class EvalMetric:
    """Base: accumulates ``sum_metric`` over ``num_inst`` instances; ``get()`` gives their ratio.

    As MXNet 1.x's metrics, each also keeps global counts (``global_sum_metric``, ``global_num_inst``) that
    ``reset_local()`` leaves alone (``get_global()`` reads them; ``reset()`` clears both), and
    ``get_config()`` returns a JSON-able dict that ``create`` turns back into an equal metric. Keyword
    arguments beyond the names are the metric's settings and go into its config.
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names, self.label_names = output_names, label_names
        self._kwargs = kwargs
        self.reset()

    def reset(self):
        """Forget everything accumulated so far, local and global."""
        self.reset_local()
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Forget the local counts (``get()``); the global ones (``get_global()``) keep counting."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get_config(self):
        """``{'metric': class name, 'name', 'output_names', 'label_names', settings...}`` (MXNet's)."""
        config = dict(self._kwargs)
        config.update(metric=type(self).__name__, name=self.name, output_names=self.output_names,
                      label_names=self.label_names)
        return config

    def update(self, labels, preds):
        """Accumulate one batch: ``labels`` and ``preds`` are lists of arrays (or single arrays)."""
        labels, preds = _as_list(labels), _as_list(preds)
        if len(labels) != len(preds):
            raise DataError(f"metric {self.name!r}: {len(labels)} label arrays but {len(preds)} outputs")
        sum_before, num_before = self.sum_metric, self.num_inst
        for label, pred in zip(labels, preds):
            self._update_one(_host(label), _host(pred))
        self.global_sum_metric += self.sum_metric - sum_before
        self.global_num_inst += self.num_inst - num_before

    def _update_one(self, label, pred):
        raise NotImplementedError

    def _value(self, total, count):
        return float(total / count)

    def get(self):
        """Return ``(name, value)``; the value is nan before any update."""
        if self.num_inst == 0:
            return self.name, float('nan')
        return self.name, self._value(self.sum_metric, self.num_inst)

    def get_global(self):
        """As ``get``, over everything since the last ``reset()`` (``reset_local()`` does not clear it)."""
        if self.global_num_inst == 0:
            return self.name, float('nan')
        return self.name, self._value(self.global_sum_metric, self.global_num_inst)

    def get_name_value(self):
        """Return ``[(name, value), ...]``."""
        return _pairs(*self.get())

    def get_global_name_value(self):
        """Return ``[(name, global value), ...]``."""
        return _pairs(*self.get_global())

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

    def __init__(self, metrics=None, name='composite', output_names=None, label_names=None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names, label_names)

    def add(self, metric):
        """Append a metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The ``index``-th metric."""
        return self.metrics[index]

    def reset(self):
        for metric in getattr(self, 'metrics', []):
            metric.reset()

    def reset_local(self):
        for metric in getattr(self, 'metrics', []):
            metric.reset_local()

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def get(self):
        return _joined(m.get_name_value() for m in self.metrics)

    def get_global(self):
        return _joined(m.get_global_name_value() for m in self.metrics)

    def get_config(self):
        config = super().get_config()
        config['metrics'] = [m.get_config() for m in self.metrics]
        return config


def _joined(name_values):
    names, values = [], []
    for pairs in name_values:
        for name, value in pairs:
            names.append(name)
            values.append(value)
    return names, values


class Accuracy(EvalMetric):
    """Share of rows whose arg-max class equals the label (or equal labels when shapes match)."""

    def __init__(self, axis=1, name='accuracy', output_names=None, label_names=None):
        self.axis = axis
        super().__init__(name, output_names, label_names, axis=axis)

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

    def __init__(self, top_k=1, name='top_k_accuracy', output_names=None, label_names=None):
        if int(top_k) < 1:
            raise ConfigError(f"top_k must be >= 1, got {top_k!r}")
        self.top_k = int(top_k)
        if not name.endswith(f'_{self.top_k}'):
            name = f'{name}_{self.top_k}'
        super().__init__(name, output_names, label_names, top_k=self.top_k)

    def _update_one(self, label, pred):
        label = self._class_labels(label, pred)
        k = min(self.top_k, pred.shape[1])
        top = np.argpartition(-pred, k - 1, axis=1)[:, :k]
        self.sum_metric += float((top == label[:, None]).any(axis=1).sum())
        self.num_inst += label.size


class CrossEntropy(EvalMetric):
    """Mean negative log-probability of the true class: ``-log(p[label] + eps)``."""

    def __init__(self, eps=1e-12, name='cross-entropy', output_names=None, label_names=None):
        self.eps = eps
        super().__init__(name, output_names, label_names, eps=eps)

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

    def _value(self, total, count):
        return float(np.sqrt(total / count))


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
        self._global_labels, self._global_scores = [], []
        super().reset()

    def reset_local(self):
        super().reset_local()
        self._labels, self._scores = [], []

    def _update_one(self, label, pred):
        label, score = _positive_scores(self, label, pred)
        for labels, scores in ((self._labels, self._scores), (self._global_labels, self._global_scores)):
            labels.append(label)
            scores.append(score)
        self.num_inst += label.size

    def get(self):
        return self.name, _rank_auc(self._labels, self._scores)

    def get_global(self):
        return self.name, _rank_auc(self._global_labels, self._global_scores)


def _rank_auc(labels, scores):
    """Mann-Whitney AUC of the concatenated batches; nan without both classes."""
    if not labels:
        return float('nan')
    label, score = np.concatenate(labels), np.concatenate(scores)
    positives = int(label.sum())
    negatives = label.size - positives
    if positives == 0 or negatives == 0:
        return float('nan')
    order = np.argsort(score, kind='mergesort')
    ranks = np.empty(score.size)
    sorted_scores = score[order]
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    average_rank = first + (counts + 1) / 2.0          # 1-based mean rank of each tie group
    ranks[order] = np.repeat(average_rank, counts)
    u = ranks[label == 1].sum() - positives * (positives + 1) / 2.0
    return float(u / (positives * negatives))


class Loss(EvalMetric):
    """Mean of the outputs themselves (for ``MakeLoss`` heads); labels are ignored."""

    def __init__(self, name='loss', **kwargs):
        super().__init__(name, **kwargs)

    def _update_one(self, label, pred):
        self.sum_metric += float(np.sum(pred))
        self.num_inst += pred.size

    def update(self, labels, preds):
        """Labels are ignored (None is fine): only the outputs count."""
        preds = _as_list(preds)
        super().update([None] * len(preds), preds)


class CustomMetric(EvalMetric):
    """Wrap ``feval(label, pred)`` (numpy arrays), as MXNet: a float is averaged over updates of one
    (label, pred) pair; a ``(sum, count)`` tuple adds both. ``allow_extra_outputs`` lets predictions outnumber
    labels (the extra ones are ignored). Cannot be written as a config (the function is code)."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None, label_names=None):
        self._feval = feval
        self._allow_extra_outputs = bool(allow_extra_outputs)
        if name is None:
            name = getattr(feval, '__name__', 'custom')
            name = f'custom({name})' if '<' in name else name
        super().__init__(name, output_names, label_names)

    def update(self, labels, preds):
        labels, preds = _as_list(labels), _as_list(preds)
        if self._allow_extra_outputs:
            preds = preds[:len(labels)]
        super().update(labels, preds)

    def _update_one(self, label, pred):
        value = self._feval(label, pred)
        if isinstance(value, tuple):
            total, count = value
            self.sum_metric += float(total)
            self.num_inst += count
        else:
            self.sum_metric += float(value)
            self.num_inst += 1

    def get_config(self):
        raise NotImplementedError('CustomMetric cannot be serialized')


_NAMES = {'acc': Accuracy, 'accuracy': Accuracy, 'top_k_accuracy': TopKAccuracy, 'top_k_acc': TopKAccuracy,
          'ce': CrossEntropy, 'cross-entropy': CrossEntropy, 'mse': MSE, 'mae': MAE, 'rmse': RMSE,
          'auc': AUC, 'loss': Loss}
_SCORES = {'f1': 'F1', 'mcc': 'MCC', 'pcc': 'PCC', 'perplexity': 'Perplexity', 'nll_loss': 'NegativeLogLikelihood',
           'pearsonr': 'PearsonCorrelation'}


def __getattr__(name):
    """MXNet's score metrics (F1, MCC, ...) live in :mod:`sparkps.train.metric_scores`, loaded on first use."""
    if name in _SCORES.values():
        from sparkps.train import metric_scores
        return getattr(metric_scores, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _known():
    """Every metric class by name: the ones here, MXNet's score metrics and the lower-cased class names."""
    from sparkps.train import metric_scores
    known = dict(_NAMES, composite=CompositeEvalMetric)
    known.update({alias: getattr(metric_scores, cls) for alias, cls in _SCORES.items()})
    known.update({cls.__name__.lower(): cls for cls in list(known.values())})
    return known


def _from_config(config):
    """A metric from ``get_config()`` output (a dict, or its JSON text)."""
    config = dict(config)
    cls_name = str(config.pop('metric', ''))
    cls = _known().get(cls_name.lower())
    if cls is None:
        raise ConfigError(f"unknown metric {cls_name!r} in config; known: {sorted(_known())}")
    if 'metrics' in config:
        config['metrics'] = [_from_config(c) for c in config['metrics']]
    try:
        return cls(**config)
    except TypeError as exc:
        raise ConfigError(f"metric config for {cls_name!r} does not fit it: {exc}") from None


def create(metric, *args, **kwargs):
    """Build a metric from a name ('acc', 'ce', 'mse', 'mae', 'rmse', 'auc', 'f1', 'mcc', 'pcc', 'perplexity',
    'nll_loss', 'pearsonr', 'top_k_accuracy', 'loss' or a class name), a ``get_config()`` dict or its JSON
    text, a callable ``feval(label, pred)``, a list of those (-> CompositeEvalMetric) or a metric."""
    if isinstance(metric, EvalMetric):
        return metric
    if isinstance(metric, (list, tuple)):
        return CompositeEvalMetric([create(m, *args, **kwargs) for m in metric])
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, dict):
        return _from_config(metric)
    if isinstance(metric, str) and metric.lstrip().startswith('{'):
        import json
        return _from_config(json.loads(metric))
    cls = _known().get(str(metric).lower())
    if cls is None:
        raise ConfigError(f"unknown metric {metric!r}; known: {sorted(_known())}")
    return cls(*args, **kwargs)


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


_NAMES.update({'logloss': LogLoss, 'copc': COPC, 'auc_hist': HistogramAUC})

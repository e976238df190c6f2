"""Evaluation metrics with MXNet's interface.

    acc = sparkps.metric.create('acc')
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

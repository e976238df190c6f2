"""The ``sparkps.metric`` namespace, laid out as MXNet's ``mx.metric``: every metric of
:mod:`sparkps.metric.base`, :mod:`sparkps.metric.scores` and :mod:`sparkps.metric.ctr`,
``create`` (by name, config or callable), and ``np(feval)``, a name that ``sparkps.metric.base`` keeps for
numpy.

    import sparkps as sp
    acc = sp.metric.create('acc')
    mae = sp.metric.np(lambda label, pred: abs(label - pred).mean())
"""
from sparkps.errors import ConfigError
from sparkps.metric import scores as metric_scores
from sparkps.metric.base import *  # noqa: F403 (the namespace re-exports every metric)
from sparkps.metric.base import (  # noqa: F401
    AUC,
    MAE,
    MSE,
    RMSE,
    Accuracy,
    CrossEntropy,
    CustomMetric,
    EvalMetric,
    Loss,
    TopKAccuracy,
)
from sparkps.metric.ctr import COPC, HistogramAUC, LogLoss, binary_auc, gathered_auc  # noqa: F401
from sparkps.metric.scores import (  # noqa: F401
    F1,
    MCC,
    PCC,
    NegativeLogLikelihood,
    PearsonCorrelation,
    Perplexity,
    np,
)


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
        for metric in self.metrics:
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
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


_NAMES = {'acc': Accuracy, 'accuracy': Accuracy, 'top_k_accuracy': TopKAccuracy, 'top_k_acc': TopKAccuracy,
          'ce': CrossEntropy, 'cross-entropy': CrossEntropy, 'mse': MSE, 'mae': MAE, 'rmse': RMSE,
          'auc': AUC, 'loss': Loss, 'logloss': LogLoss, 'copc': COPC, 'auc_hist': HistogramAUC}
_SCORES = {'f1': 'F1', 'mcc': 'MCC', 'pcc': 'PCC', 'perplexity': 'Perplexity', 'nll_loss': 'NegativeLogLikelihood',
           'pearsonr': 'PearsonCorrelation'}


def _known():
    """Every metric class by name: the ones here, MXNet's score metrics and the lower-cased class names."""
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

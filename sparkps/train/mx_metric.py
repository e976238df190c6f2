"""The ``sparkps.metric`` namespace, laid out as MXNet's ``mx.metric``: every metric of
:mod:`sparkps.train.metric` and :mod:`sparkps.train.metric_scores`, and ``np(feval)``, a name that
``sparkps.train.metric`` keeps for numpy.

    import sparkps as sp
    acc = sp.metric.create('acc')
    mae = sp.metric.np(lambda label, pred: abs(label - pred).mean())
"""
from sparkps.train.metric import *  # noqa: F403 (the namespace re-exports every metric)
from sparkps.train.metric import (  # noqa: F401
    AUC,
    MAE,
    MSE,
    RMSE,
    Accuracy,
    CompositeEvalMetric,
    CrossEntropy,
    CustomMetric,
    EvalMetric,
    Loss,
    TopKAccuracy,
    create,
)
from sparkps.train.metric_scores import (  # noqa: F401
    F1,
    MCC,
    PCC,
    NegativeLogLikelihood,
    PearsonCorrelation,
    Perplexity,
    np,
)

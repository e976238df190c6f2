"""Per-epoch validation of a CTR network inside a training task: AUC, logloss and COPC over every validation row.

Worker 0 scores the whole validation set after each epoch with the weights it just pulled from the servers, so
the AUC is the exact AUC over all validation predictions (gathered in one place), never a mean of per-worker AUCs.
The metrics go into the task's epoch history (the driver's progress line and ``SparkModel.history``); no other
worker reports them, so the driver's row-weighted merge of histories keeps them as they are.

    scorer = CTRValidation(X_packed, y, layout)
    scorer.after_epoch(model)   # {'validation-auc': ..., 'validation-logloss': ..., 'validation-copc': ...}
"""
import numpy as np

from sparkps.errors import DataError


class CTRValidation:
    """Scores packed validation rows ``X`` (a PackedLayout's rows) against 0/1 labels ``y``; never stops training
    (``stopped`` stays False). Blocks only on the model's prediction."""

    def __init__(self, X, y, layout):
        self.inputs = layout.split(np.asarray(X))
        self.y = np.asarray(y, np.float64).reshape(-1)
        if not np.isin(self.y, (0.0, 1.0)).all():
            raise DataError("validation labels of a CTR model must be 0 or 1, got %s" % np.unique(self.y)[:5].tolist())
        self.stopped, self.stopped_after = False, None
        self.best_epoch = self.best_params = None     # never stops early: the last weights are the model

    def after_epoch(self, model):
        """This epoch's validation metrics of ``model`` (a FeedForward)."""
        p = np.asarray(model.predict(dict(self.inputs)), np.float64).reshape(-1)
        return ctr_metrics(self.y, p, prefix="validation-")


def ctr_metrics(labels, p, prefix=""):
    """{auc, logloss, copc} of click probabilities ``p`` against 0/1 ``labels`` (exact AUC, equal to
    scikit-learn's roc_auc_score)."""
    from sparkps.metric.ctr import binary_auc
    q = np.clip(p, 1e-15, 1 - 1e-15)
    logloss = float(-np.mean(labels * np.log(q) + (1 - labels) * np.log1p(-q)))
    copc = float(labels.sum() / p.sum()) if p.sum() > 0 else float("nan")
    return {prefix + "auc": float(binary_auc(labels, p)), prefix + "logloss": logloss, prefix + "copc": copc}

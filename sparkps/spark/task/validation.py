"""Per-epoch validation of a CTR network inside a training task: AUC, logloss and COPC over every validation row.

Worker 0 scores the whole validation set after each epoch with the weights it just pulled from the servers, so
the AUC is the exact AUC over all validation predictions (gathered in one place), never a mean of per-worker AUCs.
The metrics go into the task's epoch history (the driver's progress line and ``SparkModel.history``); no other
worker reports them, so the driver's row-weighted merge of histories keeps them as they are.

    scorer = CTRValidation(X_rows, y, inputs)       # inputs: a TypedInputs (anything with split)
    scorer.after_epoch(model)   # {'validation-auc': ..., 'validation-logloss': ..., 'validation-copc': ...}

Early stopping (``metric`` 'auc' or 'logloss', ``patience`` > 0): every worker scores the validation rows, so
every worker takes the decision itself, without a message. With ``dist_sync`` and as many batches per epoch on
every worker (rows are dealt evenly), every worker ends an epoch on the same round of the servers, so all see the
same weights and rows, agree, and stop after the same epoch. At each new best epoch each worker keeps a copy of
its dense weights, and (``snapshot``, set on worker 0 of a Spark fit) the servers write the tables as they are
then (``DistKVStore.write_tables``: the rows stay on the servers and in their shard files, never in a worker); the
fit returns that copy and those shards, so the model holds the best epoch's dense weights and rows, not the last
epoch's. The rows a worker reads to score the validation rows are those of the validation ids alone, pulled at
each epoch end (``FeedForward.keep_rows_for``), never a whole table. Without ``snapshot`` (a network trained
without servers that write its tables) the copy holds the table rows the model holds too.
"""
import time

import numpy as np

from sparkps.errors import DataError
from sparkps.rows.values import RowSparse

STOP_METRICS = {"auc": 1.0, "logloss": -1.0}     # metric -> the sign of "better"


class CTRValidation:
    """Scores validation rows ``X`` (the rows of ``typed``, a TypedInputs) against 0/1 labels ``y``; stops training
    once validation ``metric`` has not improved for ``patience`` epochs (``patience`` 0 or no metric: never stops).
    Blocks only on the model's prediction."""
    snapshots_tables = True     # ``snapshot``, when set, makes the servers write the tables at each new best epoch

    def __init__(self, X, y, typed, metric=None, patience=0, tolerance=0.0, keep_best=True):
        self.inputs = typed.split(np.asarray(X))
        self.y = np.asarray(y, np.float64).reshape(-1)
        if not np.isin(self.y, (0.0, 1.0)).all():
            raise DataError("validation labels of a CTR model must be 0 or 1, got %s" % np.unique(self.y)[:5].tolist())
        self.metric = metric if patience and metric else None
        self.patience, self.tolerance, self.keep_best = int(patience), float(tolerance), bool(keep_best)
        self.stopped, self.stopped_after = False, None
        self.best_epoch = self.best_params = self.best_value = None    # without a metric the last weights are kept
        self.reason = None
        self.waited, self._epoch = 0, -1
        self.snapshot = None    # called at each new best epoch: the servers write the tables (their rows stay there)
        self.snapshot_seconds = 0.0     # the time the snapshots took (the servers writing the tables)

    def after_epoch(self, model):
        """This epoch's validation metrics of ``model`` (a FeedForward); with a metric, the early-stopping
        decision too (``stopped``, ``best_epoch``, ``best_params``, ``reason``)."""
        self._epoch += 1
        p = np.asarray(model.predict(dict(self.inputs)), np.float64).reshape(-1)
        metrics = ctr_metrics(self.y, p, prefix="validation-")
        if self.metric is not None:
            self._decide(metrics["validation-" + self.metric], model)
        return metrics

    def _decide(self, value, model):
        sign = STOP_METRICS[self.metric]
        if self.best_value is None or sign * (value - self.best_value) > self.tolerance:
            self.best_value, self.best_epoch, self.waited = value, self._epoch, 0
            if self.keep_best:
                dense = self.snapshot is not None       # the rows are kept by the servers' snapshot
                self.best_params = (copied(model.arg_params, dense_only=dense), copied(model.aux_params))
                if self.snapshot is not None:
                    started = time.perf_counter()
                    self.snapshot()
                    self.snapshot_seconds += time.perf_counter() - started
            return
        self.waited += 1
        if self.waited >= self.patience and not self.stopped:
            self.stopped, self.stopped_after = True, self._epoch
            self.reason = ("early stopping after epoch %d: validation %s %.6f has not improved on epoch %d's %.6f "
                           "for %d epoch(s) (patience %d); the model keeps epoch %d (epochs counted from 1)"
                           % (self._epoch + 1, self.metric, value, self.best_epoch + 1, self.best_value,
                              self.waited, self.patience, self.best_epoch + 1))


def copied(params, dense_only=False):
    """A copy of ``params`` (dense arrays and RowSparse tables; with ``dense_only`` the dense arrays alone) that
    later training leaves as it is."""
    out = {}
    for name, value in (params or {}).items():
        if isinstance(value, RowSparse):
            if not dense_only:
                out[name] = RowSparse(value.ids.copy(), value.rows.copy(), value.shape)
        else:
            out[name] = value.copy()
    return out


def ctr_metrics(labels, p, prefix=""):
    """{auc, logloss, copc} of click probabilities ``p`` against 0/1 ``labels`` (exact AUC, equal to
    scikit-learn's roc_auc_score)."""
    from sparkps.metric.ctr import binary_auc
    q = np.clip(p, 1e-15, 1 - 1e-15)
    logloss = float(-np.mean(labels * np.log(q) + (1 - labels) * np.log1p(-q)))
    copc = float(labels.sum() / p.sum()) if p.sum() > 0 else float("nan")
    return {prefix + "auc": float(binary_auc(labels, p)), prefix + "logloss": logloss, prefix + "copc": copc}

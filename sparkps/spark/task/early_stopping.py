"""Early stopping of a training task on a validation set every worker holds.

With ``dist_sync`` every worker ends an epoch with the same weights (pulled from the servers) and scores the
same validation rows, so all of them take the same decision without a message; with ``dist_async`` a worker
that stops leaves the others to finish, as a worker with fewer rows does.

    stopper = EarlyStopping(X_val, y_val, patience=2, tolerance=1e-4)
    stopper.after_epoch(model)        # -> {'validation-cross-entropy': ..., 'validation-accuracy': ...}
    stopper.stopped                   # True once the loss has not improved for ``patience`` epochs
    stopper.best_epoch, stopper.best_params    # the epoch of the lowest loss and its weights (keep_best)

Like Keras' ``restore_best_weights`` and MLlib's GBT with a validation set, the model a fit returns holds
the weights of the best epoch, not of the last one scored.
"""
import time

import numpy as np

MAX_BYTES = 256 << 20     # largest validation set shipped to every task


class EarlyStopping:
    """Scores ``(X, y)`` after each epoch and says when training should stop.

    Stops when the validation cross-entropy has not improved by more than ``tolerance`` for ``patience``
    epochs in a row.  With ``keep_best`` a copy of the model's ``(arg_params, aux_params)`` is kept at each
    new best epoch (``best_params``).  Pure numpy on top of ``model.predict``; never blocks beyond that
    computation.
    """
    snapshots_tables = False    # a dense network: no sparse tables for the servers to write at a best epoch
    reason = None               # why training stopped early, in words (CTRValidation's; none given here)
    snapshot_seconds = 0.0      # the time table snapshots took: none here

    def __init__(self, X, y, patience=2, tolerance=1e-4, keep_best=False):
        self.X, self.y = np.asarray(X, np.float32), np.asarray(y).astype(np.int64)
        self.patience, self.tolerance = int(patience), float(tolerance)
        self.best, self.best_epoch, self.waited = np.inf, None, 0
        self.stopped, self.stopped_after = False, None
        self.keep_best, self.best_params = bool(keep_best), None
        self._epoch = -1

    def after_epoch(self, model):
        """Score the model's current weights; returns this epoch's validation metrics."""
        self._epoch += 1
        probabilities = np.asarray(model.predict(self.X), np.float64).reshape(len(self.X), -1)
        metrics = validation_metrics(probabilities, self.y)
        loss = metrics["validation-cross-entropy"]
        if loss < self.best - self.tolerance:
            self.best, self.best_epoch, self.waited = loss, self._epoch, 0
            if self.keep_best:
                self.best_params = (_copied(model.arg_params), _copied(model.aux_params))
        else:
            self.waited += 1
            if self.waited >= self.patience and not self.stopped:
                self.stopped, self.stopped_after = True, self._epoch
        return metrics


def _copied(params):
    return {name: value.copy() for name, value in (params or {}).items()}


def validation_metrics(probabilities, labels):
    """Cross-entropy and accuracy of class ``probabilities`` (n, classes) against integer ``labels``."""
    rows = np.arange(len(labels))
    picked = np.clip(probabilities[rows, labels], 1e-12, 1.0)
    return {"validation-cross-entropy": float(-np.mean(np.log(picked))),
            "validation-accuracy": float(np.mean(probabilities.argmax(axis=1) == labels))}


def check_size(X):
    """Refuse a validation set too large to ship to every task (a ConfigError naming its size)."""
    from sparkps.errors import ConfigError
    if X.nbytes > MAX_BYTES:
        raise ConfigError("the validation set holds %d MB of features; at most %d MB travel to every worker: "
                          "use a smaller validationFraction" % (X.nbytes >> 20, MAX_BYTES >> 20))


def epoch_end_callback(stopper, model, data, history):
    """FeedForward epoch-end callback: score the epoch, add the validation metrics to ``history`` (an
    EpochHistory) and, once ``stopper`` says so, make ``data`` (a PartitionIter) give empty epochs."""
    def after_epoch(epoch, *_):
        if data.stopped:           # the empty epochs left after stopping: nothing new to score
            return
        started = time.perf_counter()
        history.add(int(epoch), stopper.after_epoch(model))
        history.validation_seconds += time.perf_counter() - started
        if stopper.stopped:
            data.stopped = True
    return after_epoch

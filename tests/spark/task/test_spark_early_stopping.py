"""Early stopping returns the best epoch's weights (Keras' restore_best_weights, MLlib GBT's validation set)."""
import json

import numpy as np
import pytest

from sparkps.spark import SparkModel, SparkTrainer, mlp_symbol
from sparkps.spark.task.early_stopping import EarlyStopping, validation_metrics

pytestmark = pytest.mark.spark


class _Scored:
    """A stand-in model whose predictions (and weights) are set per epoch."""

    def __init__(self):
        self.arg_params, self.aux_params, self.probabilities = {}, {}, None

    def predict(self, X):
        return self.probabilities


def test_the_stopper_keeps_a_copy_of_the_best_epochs_weights():
    y = np.array([0, 1, 1, 0])
    model, stopper = _Scored(), EarlyStopping(np.zeros((4, 2)), y, patience=2, keep_best=True)
    for epoch, confidence in enumerate([0.6, 0.9, 0.7, 0.8]):       # best at epoch 1
        model.arg_params = {"w": np.full(3, float(epoch))}
        model.probabilities = np.where(np.eye(2)[y] == 1, confidence, 1 - confidence)
        stopper.after_epoch(model)
        model.arg_params["w"][:] = -1.0                              # the live weights move on in place
    assert stopper.best_epoch == 1 and stopper.stopped_after == 3
    np.testing.assert_array_equal(stopper.best_params[0]["w"], np.full(3, 1.0))


def test_once_stopped_the_epoch_it_stopped_at_is_reported_and_the_empty_epochs_left_are_not():
    from types import SimpleNamespace

    from sparkps.spark.task.barrier_task import EpochHistory
    reports = []
    kv = SimpleNamespace(report_progress=lambda **report: reports.append(report))
    data = SimpleNamespace(stopped=False)
    history = EpochHistory(batch_size=4)
    report = history.epoch_done(kv, data)
    for epoch in range(10):                     # early stopping decides after epoch 5; 6..9 run empty
        data.stopped = epoch >= 5
        report(epoch)
    assert [(r["epoch"], r["stopped"]) for r in reports] == [(e, e == 5) for e in range(6)]


def test_the_fitted_model_scores_the_best_epochs_validation_loss(spark, digits, tmp_path):
    X_train, y_train, X_val, y_val = digits
    rdd = spark.sparkContext.parallelize(list(zip(X_train[:120], y_train[:120])), 2)
    validation = spark.sparkContext.parallelize(list(zip(X_val, y_val)), 2)
    trainer = SparkTrainer(mlp_symbol([64, 64, 10]), (64,), batch_size=8, num_epoch=40, num_workers=2,
                           progress=False, timeout=300, patience=4, seed=3,
                           optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    model = trainer.fit(rdd, validation=validation)
    losses = [entry["validation-cross-entropy"] for entry in model.history]
    assert losses[model.best_epoch] <= min(losses) + 1e-4, (model.best_epoch, losses)   # improvements > 1e-4
    assert model.best_epoch < len(losses) - 1, losses                # the last epoch scored worse
    probabilities = model.to_feedforward().predict(X_val)
    score = validation_metrics(np.asarray(probabilities, np.float64), y_val.astype(np.int64))
    assert score["validation-cross-entropy"] == pytest.approx(losses[model.best_epoch], rel=1e-4)
    assert score["validation-cross-entropy"] < losses[-1]
    model.save(str(tmp_path / "model"))                 # on disk epochs count from 1, in memory from 0 again
    with open(tmp_path / "model" / "metadata.json", encoding="utf-8") as handle:
        saved = json.load(handle)
    assert saved["best_epoch"] == model.best_epoch + 1 and saved["history"][0]["epoch"] == 1
    again = SparkModel.load(str(tmp_path / "model"))
    assert (again.best_epoch, again.history) == (model.best_epoch, model.history)


def test_the_history_keeps_worker_0s_validation_scores():
    from sparkps.spark.driver.results import merge_histories
    results = [{"rank": 1, "rows": 300, "history": [{"epoch": 0, "accuracy": 0.6, "validation-accuracy": 0.5}]},
               {"rank": 0, "rows": 100, "history": [{"epoch": 0, "accuracy": 1.0, "validation-accuracy": 0.9}]}]
    assert merge_histories(results) == [{"epoch": 0, "accuracy": 0.7, "validation-accuracy": 0.9}]

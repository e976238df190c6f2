"""The early-stopping decision of a CTR fit's workers (sparkps.spark.task.validation.CTRValidation), in process: the
metric's direction, patience, the copy of the best epoch's parameters (dense and table rows) and the reason."""
import numpy as np
import pytest

from sparkps.rows.values import RowSparse
from sparkps.spark.common.typed_inputs import TypedInputs
from sparkps.spark.task.validation import CTRValidation

TYPED = TypedInputs([("numbers", 1, "float")])
ROWS = TYPED.rows({"numbers": np.zeros((4, 1), np.float32)})      # the validation rows a task holds
LABELS = np.array([0, 1, 0, 1], np.float32)


class Epochs:
    """A model whose predictions (and parameters) are those of the epoch it is at."""

    def __init__(self, predictions):
        self.predictions, self.epoch = predictions, -1
        self.arg_params = {"w": np.zeros(2, np.float32),
                           "table": RowSparse(np.array([3]), np.zeros((1, 2), np.float32), (None, 2))}
        self.aux_params = {}

    def next_epoch(self):
        self.epoch += 1
        self.arg_params["w"][:] = self.epoch               # trained in place, as FeedForward's arrays are
        self.arg_params["table"].rows[:] = self.epoch

    def predict(self, inputs):
        return np.asarray(self.predictions[self.epoch], np.float64)


GOOD, BETTER, WORSE = [0.4, 0.6, 0.65, 0.55], [0.2, 0.8, 0.3, 0.7], [0.6, 0.4, 0.55, 0.45]


def run(scorer, predictions):
    model = Epochs(predictions)
    for _ in predictions:
        model.next_epoch()
        scorer.after_epoch(model)
        if scorer.stopped:
            break
    return model


@pytest.mark.parametrize("metric", ["auc", "logloss"])
def test_stops_after_patience_worse_epochs_and_keeps_the_best_copy(metric):
    scorer = CTRValidation(ROWS, LABELS, TYPED, metric=metric, patience=2)
    model = run(scorer, [GOOD, BETTER, WORSE, WORSE, BETTER])
    assert (scorer.stopped_after, scorer.best_epoch) == (3, 1)
    best, _ = scorer.best_params
    assert best["w"].tolist() == [1, 1] and best["table"].rows.tolist() == [[1, 1]]     # not the last epoch's 3
    assert model.arg_params["w"].tolist() == [3, 3]
    assert "after epoch 4: validation %s" % metric in scorer.reason and "keeps epoch 2" in scorer.reason


def test_without_a_metric_or_patience_it_only_scores():
    for scorer in (CTRValidation(ROWS, LABELS, TYPED),
                   CTRValidation(ROWS, LABELS, TYPED, metric="auc", patience=0)):
        run(scorer, [BETTER, WORSE, WORSE])
        assert not scorer.stopped and scorer.best_params is None and scorer.reason is None

"""Train and score a CTR network in one process (``FeedForward`` over the named inputs of a FeatureSpec).

    model = fit_ctr(build('fm', spec), spec.inputs(ids, numeric), labels, num_epoch=5)
    p = predict_ctr(model, spec.inputs(test_ids, test_numeric))          # (rows,) click probabilities

Blocks only on computation. The distributed path is SparkTrainer's; this one is what tests, the local CLI
and the benchmarks' single-process baseline use.
"""
import numpy as np

from sparkps.ctr.features import LABEL
from sparkps.errors import DataError
from sparkps.io.iterators import NDArrayIter
from sparkps.nets.blocks import ctr_initializer
from sparkps.train.feedforward import FeedForward


def _check_labels(labels, rows):
    labels = np.asarray(labels, np.float32).reshape(-1)
    if labels.shape[0] != rows:
        raise DataError("CTR labels: %d labels for %d rows" % (labels.shape[0], rows))
    if not np.isin(labels, (0.0, 1.0)).all():
        raise DataError("CTR labels must be 0 or 1, got %s" % (np.unique(labels)[:5].tolist(),))
    return labels


def fit_ctr(symbol, inputs, labels, num_epoch=5, batch_size=256, optimizer="adam", learning_rate=0.01,
            seed=0, initializer=None, eval_data=None, epoch_end_callback=None, kvstore="local", **optimizer_args):
    """A FeedForward trained on ``inputs`` (dict of arrays) and 0/1 ``labels``; ``eval_data`` is an
    (inputs, labels) pair scored with AUC after every epoch (logged)."""
    rows = next(iter(inputs.values())).shape[0]
    labels = _check_labels(labels, rows)
    data = NDArrayIter(inputs, {LABEL: labels}, batch_size=min(batch_size, rows), shuffle=True, seed=seed,
                       last_batch_handle="roll_over")
    evaluation = None
    if eval_data is not None:
        eval_inputs, eval_labels = eval_data
        eval_rows = next(iter(eval_inputs.values())).shape[0]
        evaluation = NDArrayIter(eval_inputs, {LABEL: _check_labels(eval_labels, eval_rows)},
                                 batch_size=min(batch_size, eval_rows))
    model = FeedForward(symbol, num_epoch=num_epoch, optimizer=optimizer, learning_rate=learning_rate, seed=seed,
                        initializer=initializer or ctr_initializer(), **optimizer_args)
    return model.fit(data, eval_data=evaluation, eval_metric="auc", epoch_end_callback=epoch_end_callback,
                     kvstore=kvstore)


def predict_ctr(model, inputs, batch_size=4096):
    """Click probabilities (rows,) of a trained CTR FeedForward."""
    rows = next(iter(inputs.values())).shape[0]
    return np.asarray(model.predict(NDArrayIter(inputs, None, batch_size=min(batch_size, rows)))).reshape(-1)

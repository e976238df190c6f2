"""The CTR zoo's training defaults, one home for the estimator (``SparkpsCTRClassifier``), ``jobs/train_ctr.py``
and the benchmarks: chosen by measurement (docs/ctr.md, "Defaults"; ``benchmarks/ctr_sweep.py`` sweeps each
setting around them, ``benchmarks/bench_ctr_quality.py`` checks them on Spark against MLlib).

Early stopping is part of the defaults: a twentieth of the training rows is held out, the validation AUC is read
after every epoch, training stops once it has not improved for two epochs and the best epoch is kept. Setting
the held-out share to 0 turns early stopping off unless a patience is given too (then it is an error: there is
nothing to score).
"""

CTR_DEFAULTS = {
    "embeddingDim": 8,
    "hiddenUnits": [64, 32],
    "numEpochs": 10,
    "batchSize": 512,
    "optimizer": "adam",
    "learningRate": 0.004243,      # 0.003 x sqrt(512 / 256): the sweep's rule for Adam
    "embeddingL2": 1e-4,
    "dropout": 0.5,
    "validationFraction": 0.05,
    "earlyStoppingPatience": 2,
    "earlyStoppingMetric": "auc",
}


def patience_for(patience, validation_fraction):
    """The early-stopping patience a fit uses: ``patience`` when given (None: not given), else the default when
    rows are held out, else 0 (off)."""
    if patience is not None:
        return int(patience)
    return CTR_DEFAULTS["earlyStoppingPatience"] if validation_fraction else 0

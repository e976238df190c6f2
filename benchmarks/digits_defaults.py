"""How SparkpsClassifier's defaults were chosen: a small search on scikit-learn's handwritten digits.

The split is unshuffled: the first 1400 rows train, the last 397 are the test rows (scikit-learn's
MLPClassifier reaches 0.91-0.92 there in 10 epochs). The test rows take no part in the choice: every setting
trains on the first 1150 rows and is scored on rows 1150-1399 (held out of the training rows), over three
seeds; the setting of the best mean held-out accuracy (ties: the cheaper one, fewer steps) is chosen, and only
then is it trained on all 1400 rows and scored on the 397 test rows.

The search runs the estimator's training locally, without Spark (the machine's cores are shared): FeedForward
with the estimator's initializer (the workers' Xavier), optimizer and epochs, and a batch of ``batchSize`` x
``numWorkers`` rows, the rows one dist_sync step of the estimator averages its gradient over (each of the 2
workers takes ``batchSize`` rows of its half, the servers sum the two gradients over 2 x ``batchSize``). The
row order within an epoch differs from a Spark fit's (there each worker shuffles its own partition), so the
figures are close to, not equal to, a Spark fit's; ``--spark`` confirms the chosen setting with one real
``SparkpsClassifier`` fit on Spark local[2] (tests/spark/ml/test_classifier_defaults.py asserts it).

    python -m benchmarks.digits_defaults            # the search, then the chosen setting on the test rows
    python -m benchmarks.digits_defaults --spark    # and one SparkpsClassifier() fit on Spark local[2]
"""
import argparse
import time

import numpy as np

TRAIN_ROWS, HELD_OUT_FROM = 1400, 1150      # rows [0, 1150) fit, [1150, 1400) choose, [1400, 1797) test
SEEDS = (0, 1, 2)
NUM_WORKERS = 2                             # the estimator's numWorkers default
LAYERS = [64, 64, 10]                       # the network of the README's example (layers has no default)
# (the setting's name, its params): the old defaults first, then a handful of changes to them
SETTINGS = [
    ("old defaults: batch 64, lr 0.1, 10 epochs", dict(batchSize=64, learningRate=0.1, numEpochs=10)),
    ("batch 32, lr 0.1, 10 epochs", dict(batchSize=32, learningRate=0.1, numEpochs=10)),
    ("batch 32, lr 0.05, 10 epochs", dict(batchSize=32, learningRate=0.05, numEpochs=10)),
    ("batch 64, lr 0.2, 10 epochs", dict(batchSize=64, learningRate=0.2, numEpochs=10)),
    ("batch 64, lr 0.1, 20 epochs", dict(batchSize=64, learningRate=0.1, numEpochs=20)),
    ("batch 16, lr 0.05, 10 epochs", dict(batchSize=16, learningRate=0.05, numEpochs=10)),
]
MOMENTUM = 0.9                              # sgd momentum, kept


def digits():
    """scikit-learn's digits scaled to [0, 1], in file order: (X float32, y float32)."""
    from sklearn.datasets import load_digits
    data = load_digits()
    return (data.data / 16.0).astype(np.float32), data.target.astype(np.float32)


def local_accuracy(setting, X_fit, y_fit, X_score, y_score, seed, layers=LAYERS):
    """Accuracy on (X_score, y_score) of the estimator's training, run locally (see the module's doc)."""
    from sparkps.nets.mlp import mlp_symbol
    from sparkps.train.feedforward import FeedForward
    from sparkps.worker.lifecycle import default_initializer
    model = FeedForward(mlp_symbol(layers, "relu"), num_epoch=setting["numEpochs"], optimizer="sgd",
                        initializer=default_initializer(), numpy_batch_size=setting["batchSize"] * NUM_WORKERS,
                        seed=seed, learning_rate=setting["learningRate"], momentum=MOMENTUM)
    model.fit(X_fit, y_fit)
    return float((model.predict(X_score).argmax(axis=1) == y_score).mean())


def steps(setting):
    """dist_sync steps of a fit on the training rows (the cost a tie is broken by)."""
    return setting["numEpochs"] * int(np.ceil(TRAIN_ROWS / (setting["batchSize"] * NUM_WORKERS)))


def search(X, y):
    """Each setting's held-out accuracies over SEEDS, printed; returns the chosen (name, setting)."""
    X_fit, y_fit = X[:HELD_OUT_FROM], y[:HELD_OUT_FROM]
    X_held, y_held = X[HELD_OUT_FROM:TRAIN_ROWS], y[HELD_OUT_FROM:TRAIN_ROWS]
    scored = []
    for name, setting in SETTINGS:
        accuracies = [local_accuracy(setting, X_fit, y_fit, X_held, y_held, seed) for seed in SEEDS]
        scored.append((round(float(np.mean(accuracies)), 4), -steps(setting), name, setting))
        print(f"{name:45s} held-out accuracy mean {np.mean(accuracies):.4f} "
              f"(seeds {', '.join('%.3f' % a for a in accuracies)})", flush=True)
    _, _, name, setting = max(scored, key=lambda s: s[:2])
    return name, setting


def spark_accuracy(X, y):
    """Test accuracy of one ``SparkpsClassifier(layers=LAYERS)`` fit (every other param its default) on Spark
    local[2]."""
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import SparkSession

    from sparkps.spark.ml.classifier import SparkpsClassifier
    spark = (SparkSession.builder.master("local[2]").appName("digits_defaults").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        def frame(rows):
            return spark.createDataFrame([(Vectors.dense(X[i].tolist()), float(y[i])) for i in rows],
                                         ["features", "label"])
        model = SparkpsClassifier(layers=LAYERS).fit(frame(range(TRAIN_ROWS)))
        scored = model.transform(frame(range(TRAIN_ROWS, len(X)))).select("label", "prediction").collect()
        return float(np.mean([r.label == r.prediction for r in scored]))
    finally:
        spark.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spark", action="store_true", help="also one SparkpsClassifier fit on Spark local[2]")
    args = parser.parse_args(argv)
    X, y = digits()
    started = time.perf_counter()
    name, setting = search(X, y)
    print(f"chosen on the held-out rows: {name}", flush=True)
    for label, scored in (("chosen setting", setting), ("old defaults (for comparison, after the choice)",
                                                         SETTINGS[0][1])):
        tests = [local_accuracy(scored, X[:TRAIN_ROWS], y[:TRAIN_ROWS], X[TRAIN_ROWS:], y[TRAIN_ROWS:], seed)
                 for seed in SEEDS]
        print(f"{label}, trained on rows 0-1399, test accuracy on the last 397 rows (local): "
              f"{', '.join('%.4f' % a for a in tests)} (seeds {SEEDS})", flush=True)
    if args.spark:
        print(f"SparkpsClassifier(layers={LAYERS}) with its defaults on Spark local[2]: test accuracy "
              f"{spark_accuracy(X, y):.4f}", flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

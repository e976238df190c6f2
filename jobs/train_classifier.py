"""Train a classifier with sparkps on Spark, save it, score a validation set and write the predictions.

    spark-submit --master local[2] jobs/train_classifier.py --train train.libsvm --validation test.libsvm \
        --num-features 64 --layers 64,64,10 --epochs 10 --output out/
    python jobs/train_classifier.py --demo --output demo-output        # digits, local[*], 2 workers + 1 server

Writes ``OUTPUT/model`` (SparkModel: model-symbol.json, model-NNNN.params, metadata.json; loadable by
``sparkps.FeedForward.load('OUTPUT/model/model', epochs)``), ``OUTPUT/predictions`` (CSV: label,
prediction, probability of the predicted class) and ``OUTPUT/training-curve.png``.  See jobs/README.md.
"""
import argparse
import json
import logging
import os
import sys
import time

import numpy as np

from sparkps.errors import ConfigError, SparkpsError

LOG = logging.getLogger("train_classifier")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train a sparkps classifier on Spark (libsvm or CSV input).")
    p.add_argument("--demo", action="store_true", help="scikit-learn digits on local[*]: the `make demo` run")
    p.add_argument("--export-digits", metavar="DIR", help="write digits as train/test .libsvm and .csv, exit")
    p.add_argument("--train", help="training data (.libsvm, .svm, .txt = libsvm; .csv = CSV)")
    p.add_argument("--validation", help="validation data, same format; scored and written to OUTPUT/predictions")
    p.add_argument("--format", choices=["libsvm", "csv"], help="input format (default: from the extension)")
    p.add_argument("--num-features", type=int, help="feature count (libsvm; default: from --layers)")
    p.add_argument("--label-col", default="label", help="CSV label column name (default: label)")
    p.add_argument("--layers", default="64,64,10", help="MLP sizes inputs,hidden...,classes (default 64,64,10)")
    p.add_argument("--symbol", help="network as sparkps symbol JSON (overrides --layers; needs --num-features)")
    p.add_argument("--batch-size", type=int, default=None, help="per worker (default 32; --demo 16)")
    p.add_argument("--epochs", type=int, default=None, help="default 10 (--demo 20)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--servers", type=int, default=1)
    p.add_argument("--kvstore", default="dist_sync", choices=["dist_sync", "dist_async"])
    p.add_argument("--optimizer", default="sgd")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", type=float, default=0.0)
    p.add_argument("--ctx", default="cpu", help="cpu or gpu (each task uses its Spark GPU resource)")
    p.add_argument("--master", default=None, help="Spark master when not run by spark-submit "
                                                  "(default local[*])")
    p.add_argument("--output", default="sparkps-output", help="output directory")
    p.add_argument("--timeout", type=float, default=1800, help="seconds before training is abandoned")
    return p.parse_args(argv)


def default_master(workers):
    """local[*], or local[workers] on a machine with fewer cores than workers (one task slot each)."""
    return "local[*]" if (os.cpu_count() or 1) >= workers else "local[%d]" % workers


def spark_session(master, workers=2):
    """The session spark-submit configured, or a local one (UI off, loopback) when run with plain python."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.appName("sparkps train_classifier")
    if master or not SparkConf().contains("spark.master"):
        builder = builder.master(master or default_master(workers))
    spark = (builder.config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def digits_split(seed=0):
    """scikit-learn's digits scaled to [0, 1]: (X_train, y_train, X_test, y_test), 80/20 stratified."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    data = load_digits()
    X, y = (data.data / 16.0).astype(np.float32), data.target.astype(np.float32)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)
    return X_train, y_train, X_test, y_test


def export_digits(folder):
    """Write digits as train/test in libsvm (1-based) and CSV (label first, with a header)."""
    os.makedirs(folder, exist_ok=True)
    X_train, y_train, X_test, y_test = digits_split()
    for name, X, y in (("train", X_train, y_train), ("test", X_test, y_test)):
        with open(os.path.join(folder, name + ".libsvm"), "w") as f:
            for row, label in zip(X, y):
                items = " ".join("%d:%g" % (i + 1, v) for i, v in enumerate(row) if v)
                f.write("%d %s\n" % (label, items))
        with open(os.path.join(folder, name + ".csv"), "w") as f:
            f.write(",".join(["label"] + ["f%d" % i for i in range(X.shape[1])]) + "\n")
            for row, label in zip(X, y):
                f.write("%d,%s\n" % (label, ",".join("%g" % v for v in row)))
    return folder


def read_frame(spark, path, fmt, num_features, label_col):
    """A DataFrame (features Vector, label double) from a libsvm or CSV file."""
    if "://" not in path and not os.path.exists(path):
        raise ConfigError("input %s does not exist" % path)
    fmt = fmt or ("csv" if path.endswith(".csv") else "libsvm")
    if fmt == "libsvm":
        reader = spark.read.format("libsvm")
        if num_features:
            reader = reader.option("numFeatures", str(num_features))
        return reader.load(path).select("features", "label")
    from pyspark.ml.feature import VectorAssembler
    from pyspark.sql import functions as F
    frame = spark.read.option("header", "true").option("inferSchema", "true").csv(path)
    if label_col not in frame.columns:
        raise ConfigError("CSV %s has no label column %r; columns: %s" % (path, label_col, frame.columns[:8]))
    inputs = [c for c in frame.columns if c != label_col]
    assembled = VectorAssembler(inputCols=inputs, outputCol="features").transform(frame)
    return assembled.select("features", F.col(label_col).cast("double").alias("label"))


def demo_frames(spark):
    """Digits as two DataFrames of (features Vector, label)."""
    from pyspark.ml.linalg import Vectors
    X_train, y_train, X_test, y_test = digits_split()

    def frame(X, y):
        return spark.createDataFrame([(Vectors.dense(r), float(l)) for r, l in zip(X, y)], ["features", "label"])
    return frame(X_train, y_train), frame(X_test, y_test)


def network(args):
    """(symbol JSON, input shape) from --symbol or --layers."""
    from sparkps.spark.networks import mlp_symbol, parse_layers
    if args.symbol:
        if not args.num_features:
            raise ConfigError("--symbol needs --num-features")
        with open(args.symbol, encoding="utf-8") as f:
            return f.read(), (args.num_features,)
    layers = parse_layers(args.layers)
    if args.num_features and args.num_features != layers[0]:
        raise ConfigError("--num-features %d differs from the first of --layers %s" % (args.num_features, layers))
    return mlp_symbol(layers).tojson(), (layers[0],)


def train(args, train_df):
    """Fit with SparkTrainer; returns (SparkModel, seconds)."""
    from sparkps.spark import SparkTrainer
    symbol_json, input_shape = network(args)
    optimizer_params = {"learning_rate": args.lr, "wd": args.wd}
    if args.optimizer in ("sgd", "nag"):
        optimizer_params["momentum"] = args.momentum
    trainer = SparkTrainer(symbol_json, input_shape, batch_size=args.batch_size, num_epoch=args.epochs,
                           num_workers=args.workers, num_servers=args.servers, kvstore=args.kvstore,
                           optimizer=args.optimizer, optimizer_params=optimizer_params, ctx=args.ctx,
                           eval_metric=["acc", "ce"], timeout=args.timeout)
    started = time.time()
    model = trainer.fit(train_df)
    return model, time.time() - started


def score(model, frame, folder):
    """Broadcast prediction on ``frame``; writes OUTPUT/predictions as CSV; returns the accuracy."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F
    scored = model.transform(frame)
    table = scored.select("label", "prediction",
                          F.array_max(vector_to_array("probability")).alias("probability")).cache()
    table.write.mode("overwrite").option("header", "true").csv(os.path.join(folder, "predictions"))
    total = table.count()
    correct = table.filter(F.col("label") == F.col("prediction")).count()
    table.unpersist()
    return correct / max(total, 1)


def plot_curve(history, path):
    """Training loss and accuracy per epoch as a PNG (matplotlib Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = [h["epoch"] + 1 for h in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.plot(epochs, [h.get("cross-entropy", np.nan) for h in history], marker="o")
    left.set(title="training loss (cross-entropy)", xlabel="epoch")
    right.plot(epochs, [h.get("accuracy", np.nan) for h in history], marker="o", color="tab:green")
    right.set(title="training accuracy", xlabel="epoch", ylim=(0, 1.02))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run(args):
    if args.export_digits:
        print("digits written to %s" % export_digits(args.export_digits))
        return 0
    if not args.demo and not args.train:
        raise ConfigError("give --train PATH (and --validation PATH), or --demo")
    spark = spark_session(args.master, args.workers)
    try:
        if args.demo:
            train_df, valid_df = demo_frames(spark)
        else:
            train_df = read_frame(spark, args.train, args.format, args.num_features, args.label_col)
            valid_df = None if not args.validation else read_frame(
                spark, args.validation, args.format, args.num_features, args.label_col)
        model, seconds = train(args, train_df)
        os.makedirs(args.output, exist_ok=True)
        model.save(os.path.join(args.output, "model"))
        plot_curve(model.history, os.path.join(args.output, "training-curve.png"))
        for entry in model.history:
            print("epoch %2d  loss %.4f  accuracy %.4f" % (entry["epoch"] + 1, entry.get("cross-entropy", np.nan),
                                                         entry.get("accuracy", np.nan)))
        summary = {"train_seconds": round(seconds, 2), "epochs": args.epochs, "history": model.history}
        if valid_df is not None:
            summary["validation_accuracy"] = score(model, valid_df, args.output)
            print("test accuracy: %.4f" % summary["validation_accuracy"])
        with open(os.path.join(args.output, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        print("trained in %.1f s; model saved to %s" % (seconds, os.path.join(args.output, "model")))
        print("training curve: %s" % os.path.join(args.output, "training-curve.png"))
    finally:
        spark.stop()
    return 0


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    args = parse_args(argv)
    args.batch_size = args.batch_size or (16 if args.demo else 32)
    args.epochs = args.epochs or (20 if args.demo else 10)
    try:
        return run(args)
    except SparkpsError as exc:
        print("train_classifier: %s" % exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

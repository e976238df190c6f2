"""Train a classifier with sparkps on Spark, save it, score a validation set and write the predictions.

    spark-submit --master local[2] jobs/train_classifier.py --train train.libsvm --validation test.libsvm \
        --num-features 64 --layers 64,64,10 --epochs 10 --output out/
    spark-submit --master yarn jobs/train_classifier.py --input-table db.digits --label-col digit ...
    python jobs/train_classifier.py --demo --output demo-output        # digits, local[*], 2 workers + 1 server

The master and every setting come from spark-submit; ``--master`` is only used when the job runs as plain
``python jobs/...`` (default ``local[*]``).  Inputs: libsvm, CSV (files or Spark-written folders), Parquet and
ORC (files or folders), or a table (``--input-table``); the format comes from ``--format`` or the content.

Writes ``OUTPUT/model`` (SparkModel: model-symbol.json, model-NNNN.params, metadata.json; loadable by
``sparkps.FeedForward.load('OUTPUT/model/model', epochs)``), ``OUTPUT/predictions`` (CSV: label,
prediction, probability of the predicted class) and ``OUTPUT/training-curve.png``.  See jobs/README.md.
"""
import argparse
import io
import json
import logging
import os
import sys
import time

import numpy as np

from sparkps.errors import ConfigError, SparkpsError
from sparkps.io.formats import FORMATS
from sparkps.spark.driver.checks import workers_for_slots
from sparkps.spark.driver.placement import cluster_facts
from sparkps.spark.driver.results import describe_roles
from sparkps.spark.submit.cluster_checks import check_shared_output
from sparkps.spark.submit.failures import run_job
from sparkps.spark.submit.flags import DefaultsOnceFormatter, add_session_flags, add_strategy_flags, trainer_settings
from sparkps.spark.submit.interrupts import plain_interrupts, quiet_py4j_records
from sparkps.spark.submit.job_settings import check_input_paths, master_of, positive, read_symbol_file
from sparkps.spark.submit.output import (
    check_output_folder,
    output_path,
    prepare_store_output,
    quiet_parameter_server,
    staged_output,
    write_output_file,
)
from sparkps.spark.submit.session import remote_of, stop_session

LOG = logging.getLogger("train_classifier")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train a sparkps classifier on Spark (libsvm, CSV, Parquet, ORC or "
                                            "a table).",
                                formatter_class=DefaultsOnceFormatter)
    p.add_argument("--demo", action="store_true", help="scikit-learn digits on local[*]: the `make demo` run")
    p.add_argument("--export-digits", metavar="DIR", help="write digits as train/test .libsvm and .csv, exit")
    p.add_argument("--train", help="training data: a file or folder (libsvm, CSV, Parquet, ORC)")
    p.add_argument("--validation", help="validation data, same format; scored and written to OUTPUT/predictions")
    p.add_argument("--input-table", help="training data from a table Spark can read (instead of --train)")
    p.add_argument("--validation-table", help="validation data from a table (instead of --validation)")
    p.add_argument("--format", choices=["auto"] + list(FORMATS), default="auto",
                   help="input format (default: from the content: magic bytes, folder contents, first line)")
    p.add_argument("--num-features", type=int, help="feature count (libsvm; default: from --layers)")
    p.add_argument("--label-col", default="label", help="label column (default: label)")
    p.add_argument("--features-cols", help="comma-separated feature columns (default: a 'features' vector "
                                           "column, else every other numeric column)")
    p.add_argument("--layers", default="64,64,10", help="MLP sizes inputs,hidden...,classes (default 64,64,10)")
    p.add_argument("--symbol", help="network as sparkps symbol JSON (overrides --layers; needs --num-features)")
    p.add_argument("--batch-size", type=int, default=None, help="per worker (default 32; --demo 16)")
    p.add_argument("--epochs", type=int, default=None, help="default 10 (--demo 20)")
    p.add_argument("--num-workers", "--workers", dest="workers", type=int, default=2,
                   help="training workers (Spark tasks, one slot each); fewer when a local master has fewer task "
                        "slots; on a cluster too few slots is refused")
    p.add_argument("--num-servers", "--servers", dest="servers", type=int, default=1, help="parameter servers")
    add_strategy_flags(p)
    p.add_argument("--optimizer", default="sgd", help="sgd, nag, adam, ...")
    p.add_argument("--lr", type=float, default=0.1, help="learning rate")
    p.add_argument("--momentum", type=float, default=0.9, help="sgd / nag momentum")
    p.add_argument("--wd", type=float, default=0.0, help="weight decay")
    p.add_argument("--initial-model", help="start from this saved model (a previous run's OUTPUT/model): its "
                   "weights; the network (--layers or --symbol) must be the model's (docs/warm_start.md)")
    p.add_argument("--ctx", default="cpu", help="cpu or gpu (each task uses its Spark GPU resource)")
    p.add_argument("--master", default=None, help="Spark master when run as plain python, not by spark-submit "
                                                  "(default local[*]); spark-submit's --master always wins")
    add_session_flags(p)
    p.add_argument("--output", default="sparkps-output",
                   help="output folder, written whole at the end (default: %(default)s); on a cluster a folder "
                        "every node mounts at the same path (the executors write predictions/), or a store's URI "
                        "(hdfs://, s3a://, viewfs://...), written through Spark, summary.json last")
    p.add_argument("--overwrite", action="store_true", help="replace an existing non-empty --output folder")
    p.add_argument("--spark-log-level", default="FATAL",
                   help="Spark's log level once the job runs (default FATAL: a failure is reported once, by the "
                        "job, naming the role and its first cause; ERROR or WARN show Spark's own logs too)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds before training is abandoned")
    args = p.parse_args(argv)
    try:
        trainer_settings(args)       # an unknown strategy option stops the job before Spark starts
    except ConfigError as exc:
        p.error(str(exc))
    return args


def spark_session(master=None, log_level="FATAL", remote=None):
    """The session spark-submit configured (its master, its settings; a Spark Connect one under
    spark.api.mode=connect), a Connect client of ``remote``, or, run as plain python, one on ``master`` (default
    local[*]) with this interpreter as the executors' Python (sparkps.spark.submit.session.job_session)."""
    from sparkps.spark.submit.session import job_session
    spark = job_session("sparkps train_classifier", master=master, remote=remote, default_master="local[*]",
                        settings={"spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4"},
                        log_level=log_level)
    plain_interrupts()       # Ctrl-C: one line, no traceback from pyspark's handler (sparkps.spark.submit.interrupts)
    from sparkps.spark.driver.checks import choose_worker_python
    choose_worker_python(spark)      # before any Python function is wrapped (nothing to do on Spark Connect)
    return spark


def fit_workers(spark, workers, servers):
    """``(workers, servers)`` the master can run: on a local master, fewer workers, with a warning, when it has
    fewer task slots than ``--num-workers`` (the worker count never changes the master); on a cluster the count
    is kept and SparkTrainer refuses one that does not fit, naming --num-workers. Either session kind."""
    from sparkps.spark.driver import checks
    from sparkps.spark.driver.placement import cluster_facts
    master, conf, parallelism = cluster_facts(spark)
    if not checks.is_local(master) and parallelism:     # a cluster: too few slots is refused, not worked around
        return workers, servers
    slots = checks.count_task_slots(master, conf, parallelism)
    if slots < 1:
        if not checks.is_local(master) and not parallelism:      # a Connect server's cluster: Spark's check says
            return workers, servers
        raise ConfigError("the Spark master %s has no task slots for training workers" % master)
    if slots >= workers:
        return workers, servers
    LOG.warning("--num-workers %d but the master %s has %d task slots: training with %d workers",
                workers, master, slots, slots)
    return slots, min(servers, slots)


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


def read_frame(spark, args, path=None, table=None):
    """A DataFrame (features Vector, label) from ``path`` or ``table`` (see sparkps.spark.submit.inputs)."""
    from sparkps.spark.submit.inputs import read_input
    features_cols = [c.strip() for c in args.features_cols.split(",") if c.strip()] if args.features_cols else None
    return read_input(spark, path=path, table=table, fmt=args.format, num_features=args.num_features,
                      label_col=args.label_col, features_cols=features_cols)


def demo_frames(spark):
    """Digits as two DataFrames of (features Vector, label)."""
    from pyspark.ml.linalg import Vectors
    X_train, y_train, X_test, y_test = digits_split()

    def frame(X, y):
        return spark.createDataFrame([(Vectors.dense(r), float(label)) for r, label in zip(X, y)],
                                     ["features", "label"])
    return frame(X_train, y_train), frame(X_test, y_test)


def network(args):
    """(symbol JSON, input shape) from --symbol or --layers."""
    from sparkps.nets.mlp import mlp_symbol, parse_layers
    if args.symbol:
        if not args.num_features:
            raise ConfigError("--symbol needs --num-features")
        return read_symbol_file(args.symbol), (args.num_features,)
    layers = parse_layers(args.layers)
    if args.num_features and args.num_features != layers[0]:
        raise ConfigError("--num-features %d differs from the first of --layers %s" % (args.num_features, layers))
    return mlp_symbol(layers).tojson(), (layers[0],)


def train(args, train_df, workers, servers):
    """Fit with SparkTrainer; returns (SparkModel, seconds)."""
    from sparkps.spark import SparkTrainer
    symbol_json, input_shape = network(args)
    optimizer_params = {"learning_rate": args.lr, "wd": args.wd}
    if args.optimizer in ("sgd", "nag"):
        optimizer_params["momentum"] = args.momentum
    name = "symbol %s" % os.path.basename(args.symbol) if args.symbol else "MLP %s" % args.layers.replace(",", "-")
    trainer = SparkTrainer(symbol_json, input_shape, batch_size=args.batch_size, num_epoch=args.epochs,
                           num_workers=workers, num_servers=servers, optimizer=args.optimizer,
                           optimizer_params=optimizer_params, ctx=args.ctx, eval_metric=["acc", "ce"],
                           timeout=args.timeout, name=name, **trainer_settings(args))
    started = time.time()
    model = trainer.fit(train_df, label_col=args.label_col, initial_model=args.initial_model or None)
    seconds = time.time() - started
    args.roles = trainer.last_fit["roles"]      # where the scheduler, servers and workers ran
    print(describe_roles(args.roles))
    return model, seconds


def score(model, frame, folder, label_col="label", classes=None):
    """The model's prediction on ``frame`` (transform: the model ships inside the scoring UDF); writes
    OUTPUT/predictions as CSV (label and prediction as the class names when the label was indexed from strings);
    returns the accuracy."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F
    scored = model.transform(frame)
    table = scored.select(F.col(label_col).alias("label"), "prediction",
                          F.array_max(vector_to_array("probability")).alias("probability"))
    if classes:
        names = F.array(*[F.lit(c) for c in classes])
        table = table.select(F.element_at(names, F.col("label").cast("int") + 1).alias("label"),
                             F.element_at(names, F.col("prediction").cast("int") + 1).alias("prediction"),
                             "probability")
    table = table.cache()
    table.write.mode("overwrite").option("header", "true").csv(output_path(folder, "predictions"))
    total = table.count()
    correct = table.filter(F.col("label") == F.col("prediction")).count()
    table.unpersist()
    return correct / max(total, 1)


def plot_curve(history, path, test_accuracy=None):
    """Training loss and accuracy per epoch (epochs numbered from 1, integer ticks) and the test accuracy
    as a dashed line, as a PNG (matplotlib Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    epochs = [h["epoch"] for h in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.plot(epochs, [h.get("cross-entropy", np.nan) for h in history], marker="o")
    left.set(title="training loss (cross-entropy)", xlabel="epoch")
    right.plot(epochs, [h.get("accuracy", np.nan) for h in history], marker="o", color="tab:green",
               label="training")
    if test_accuracy is not None:
        right.axhline(test_accuracy, color="tab:red", linestyle="--", label="test %.3f" % test_accuracy)
    right.set(title="accuracy", xlabel="epoch", ylim=(0, 1.02))
    right.legend(loc="lower right")
    for axis in (left, right):
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)


def numbered_from_one(history):
    """The history with epochs counted from 1, as the progress lines and the plot show them."""
    return [dict(entry, epoch=int(entry["epoch"]) + 1) for entry in history]


def run(args):
    if args.export_digits:
        print("digits written to %s" % export_digits(args.export_digits))
        return 0
    if not args.demo and not (args.train or args.input_table):
        raise ConfigError("give --train PATH or --input-table TABLE (and --validation / --validation-table), "
                          "or --demo")
    check_output_folder(args.output, args.overwrite)
    network(args)                # the symbol file or the layers, checked before Spark starts
    check_input_paths(train=args.train, validation=args.validation)
    args.workers, args.servers = workers_for_slots(master_of(args.master, "local[*]", remote_of(args.remote)),
                                                   args.workers, args.servers, "--num-workers")
    final = args.output
    with staged_output(final) as folder:
        args.output = folder
        try:
            train_and_report(args, final)
        finally:
            args.output = final
    return 0


def train_and_report(args, final):
    """Train, save, score and plot into ``args.output`` (the staging folder of ``final``)."""
    spark = spark_session(args.master, args.spark_log_level, remote_of(args.remote))
    failing = True
    try:
        prepare_store_output(spark, final, args.overwrite)       # an --output on a store: checked once reached
        if args.demo:
            train_df, valid_df = demo_frames(spark)
        else:
            train_df = read_frame(spark, args, args.train, args.input_table)
            valid_df = None if not (args.validation or args.validation_table) else read_frame(
                spark, args, args.validation, args.validation_table)
        from sparkps.spark.submit.inputs import index_string_label
        train_df, (valid_df,), classes = index_string_label(train_df, [valid_df], args.label_col)
        if classes:
            print("label column %r indexed as RFormula does: %s" % (
                args.label_col, ", ".join("%r -> %d" % (name, k) for k, name in enumerate(classes))))
        workers, servers = fit_workers(spark, args.workers, args.servers)
        master = cluster_facts(spark)[0]
        check_shared_output(spark, final, "train_classifier")     # the executors write predictions/ there
        model, seconds = train(args, train_df, workers, servers)
        model.save(output_path(args.output, "model"))
        history = numbered_from_one(model.history)
        for entry in history:
            print("epoch %2d  loss %.4f  accuracy %.4f" % (entry["epoch"], entry.get("cross-entropy", np.nan),
                                                         entry.get("accuracy", np.nan)))
        summary = {"train_seconds": round(seconds, 2), "epochs": args.epochs, "workers": workers,
                   "servers": servers, "master": master, "history": history,
                   "classes": classes, "roles": args.roles}
        if classes:
            write_output_file(output_path(args.output, "model"), "classes.json", json.dumps(classes), spark)
        if valid_df is not None:
            summary["validation_accuracy"] = score(model, valid_df, args.output, args.label_col, classes)
            print("test accuracy: %.4f" % summary["validation_accuracy"])
        curve = io.BytesIO()
        plot_curve(history, curve, summary.get("validation_accuracy"))
        write_output_file(args.output, "training-curve.png", curve.getvalue(), spark)
        write_output_file(args.output, "summary.json", json.dumps(summary, indent=1), spark)   # last: complete
        print("trained in %.1f s on %s; model saved to %s" % (seconds, master, output_path(final, "model")))
        print("training curve: %s" % output_path(final, "training-curve.png"))
        failing = False
    finally:
        stop_session(spark, failing)     # failing: the JVM's own logs silenced first, so the job's line stays last


def main(argv=None):
    """Run the job; returns its exit code.  Under spark-submit the JVM copies this process's output and exits
    with it, so every line is written as printed and the output is drained before returning (see
    sparkps.spark.submit.output: the final message is never cut off)."""
    from sparkps.spark.submit.output import drain_output, line_buffered_output
    line_buffered_output()
    try:
        return _main(argv)
    finally:
        drain_output()


def _main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    quiet_py4j_records()         # py4j's traceback of an interrupted call: the job says it once itself
    logging.getLogger("py4j").setLevel(logging.WARNING)
    quiet_parameter_server()     # the job reports a failure once, below
    args = parse_args(argv)

    def checked_run():
        positive(args, "epochs", "batch-size")        # 0 is refused, not taken for "the default"
        args.batch_size = args.batch_size or (16 if args.demo else 32)
        args.epochs = args.epochs or (20 if args.demo else 10)
        return run(args)
    return run_job("train_classifier", checked_run, args.output,
                   describe=lambda message: with_input_line(message, args))


def with_input_line(message, args):
    """``message`` with the file line of its ``row N:`` when the training input is one local text file."""
    import re

    from sparkps.io.formats import detect_format, input_line
    found = re.match(r"row (\d+): ", message)
    if not found or not args.train or args.input_table:
        return message
    try:
        line = input_line(args.train, detect_format(args.train, args.format), int(found.group(1)))
    except SparkpsError:
        return message
    return message if line is None else "%s:%d: %s" % (args.train, line, message)


if __name__ == "__main__":
    sys.exit(main())

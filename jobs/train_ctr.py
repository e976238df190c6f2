"""Train a click-through-rate model with sparkps on Spark, save it, score a test set with the broadcast model.

    spark-submit --master local[2] jobs/train_ctr.py --train day0.tsv --test day1.tsv --format criteo \
        --model deepfm --epochs 5 --output out/
    spark-submit jobs/train_ctr.py --train t.parquet --test v.parquet --label-col click \
        --categorical-cols site,app,device --numeric-cols hour --model fm --output out/
    python jobs/train_ctr.py --train census.dummy --test census_test.dummy --format dummy \
        --network jobs/networks/deepfm.json --output out/
    python jobs/train_ctr.py --demo --output demo-ctr        # generated Criteo-shaped data (`make demo-ctr`)

Formats: parquet, orc, csv (header, types inferred), a table (``--input-table``, ``--test-table``), criteo (label,
I1-I13, C1-C26, tab-separated, empty cells allowed), libffm (field:feature:value; one feature per field), dummy
(Angel: label then one feature index per field; the indices are table rows, not hashed), libsvm (one index per
field, hashed). With ``--network`` the
JSON's own train section (epochs, lr, batch size, optimizer) applies unless a flag sets it.  ``--bad-lines error``
stops at the first bad line or cell of any input, naming it (file:line, or file and row, or table; and column);
``--bad-lines skip`` drops them and prints how many (docs/ctr.md, "Bad lines and cells").

Prints the training logloss of each epoch and ends with ``test AUC <auc> logloss <logloss> (<n> rows)``
(AUC exact over every test row: BinaryClassificationEvaluator on the driver). Writes OUTPUT/model (a
pyspark.ml model: SparkpsCTRModel.load), OUTPUT/ctr-curve.png and OUTPUT/summary.json (with ``best_epoch``).
``--early-stopping-patience N`` (with ``--validation-fraction``) stops once the held-out AUC (or logloss,
``--early-stopping-metric``) has not improved for N epochs and keeps the best epoch; ``--embedding-l2`` and
``--dropout`` regularise a zoo model (docs/ctr.md).
"""
import argparse
import io
import json
import logging
import os
import sys
import time

from sparkps.errors import ConfigError, DataError, SparkpsError
from sparkps.io.formats import CTR_FORMATS, detect_format
from sparkps.nets import zoo
from sparkps.nets.ctr_defaults import CTR_DEFAULTS, patience_for
from sparkps.spark.driver.checks import workers_for_slots
from sparkps.spark.driver.results import describe_roles
from sparkps.spark.ml.persistence import numbered_from_one
from sparkps.spark.submit.cluster_checks import check_model_dir, check_shared_output, cluster_conf
from sparkps.spark.submit.criteo import BAD_LINES, read_criteo
from sparkps.spark.submit.ctr_cells import EXTRA
from sparkps.spark.submit.failures import run_job
from sparkps.spark.submit.flags import (
    SPARSE_STRATEGIES,
    DefaultsOnceFormatter,
    add_session_flags,
    add_strategy_flags,
    estimator_settings,
)
from sparkps.spark.submit.interrupts import plain_interrupts, quiet_py4j_records
from sparkps.spark.submit.job_settings import check_ctr_settings, check_input_paths, master_of
from sparkps.spark.submit.output import (
    check_output_folder,
    on_store,
    output_path,
    prepare_store_output,
    quiet_parameter_server,
    staged_output,
    write_output_file,
)
from sparkps.spark.submit.session import remote_of, session_master, stop_session

JOB_FORMATS = CTR_FORMATS + ("orc",)         # orc as train_classifier reads it
SPARK_FORMATS = ("csv", "parquet", "orc")    # read by Spark, their cells checked there (see read)
NEAR_UNIQUE, NEAR_UNIQUE_ROWS = 0.5, 100     # a categorical column with distinct values >= half its rows: warned


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train a sparkps CTR model on Spark.",
                                epilog="On a master whose executors may run on other machines (spark://, YARN, "
                                       "Kubernetes) pass --conf spark.sparkps.modelDir=DIR to spark-submit: a folder "
                                       "every node mounts at the same path, where the servers stage the trained "
                                       "tables (checked before Spark starts); --output must be such a folder too.",
                                formatter_class=DefaultsOnceFormatter)
    p.add_argument("--demo", action="store_true", help="generated Criteo-shaped data (planted DeepFM clicks)")
    p.add_argument("--demo-rows", type=int, default=40000, help="training rows of --demo (test: a third more)")
    p.add_argument("--train", help="training data (file or folder)")
    p.add_argument("--test", help="test data, same format (required with --train): scored for the final AUC")
    p.add_argument("--input-table", help="training data from a table Spark can read (instead of --train)")
    p.add_argument("--test-table", help="test data from a table (instead of --test)")
    p.add_argument("--format", choices=("auto",) + JOB_FORMATS, default="auto",
                   help="input format (default: auto, from the content: magic bytes, then the first line)")
    p.add_argument("--bad-lines", choices=BAD_LINES, default="error",
                   help="stop at the first bad line or cell naming its file:line (or file and row, or table) and "
                        "column (error), or drop bad lines and rows and report how many (skip)")
    p.add_argument("--label-col", default="label", help="label column (0/1, or two strings)")
    p.add_argument("--categorical-cols", help="comma-separated (criteo: C1..C26; libffm/dummy/libsvm: f0..)")
    p.add_argument("--numeric-cols", default="", help="comma-separated (criteo: I1..I13)")
    p.add_argument("--multi-value-cols", default="",
                   help="comma-separated multi-valued columns (arrays, or strings joined by --separator); libffm "
                        "fields that repeat in a row become such columns by themselves")
    p.add_argument("--separator", default=",", help="separator of multi-valued string cells (as the estimator's "
                                                    "multiValueSeparator)")
    p.add_argument("--validation-fraction", type=float, default=CTR_DEFAULTS["validationFraction"],
                   help="training rows held out and scored after every epoch (AUC, logloss, COPC; default "
                        "%(default)s; 0: none, and no early stopping)")
    p.add_argument("--early-stopping-patience", type=int, default=None,
                   help="with --validation-fraction: stop once the validation metric has not improved for this "
                        "many epochs and keep the best epoch's weights and table rows (default: %d when rows are "
                        "held out; 0: off)" % CTR_DEFAULTS["earlyStoppingPatience"])
    p.add_argument("--early-stopping-metric", choices=("auc", "logloss"), default="auc",
                   help="validation metric early stopping watches (default: auc)")
    p.add_argument("--embedding-l2", type=float, default=None,
                   help="L2 on the embedding rows (the optimizer's wd on the tables only, docs/regularisation.md; "
                        "zoo models; default %g; 0: none)" % CTR_DEFAULTS["embeddingL2"])
    p.add_argument("--dropout", type=float, default=None,
                   help="dropout after each hidden layer of the deep part (zoo models; default %g; 0: none)"
                   % CTR_DEFAULTS["dropout"])
    p.add_argument("--model", default="deepfm", help="a zoo model: " + ", ".join(zoo.names()))
    p.add_argument("--network", help="an Angel JSON network (instead of --model)")
    p.add_argument("--embedding-dim", type=int, default=CTR_DEFAULTS["embeddingDim"],
                   help="embedding width per field (default %(default)s)")
    p.add_argument("--hidden-units", default=",".join(map(str, CTR_DEFAULTS["hiddenUnits"])),
                   help="MLP widths of the deep part (default %(default)s)")
    p.add_argument("--num-buckets", type=int, default=0,
                   help="reduce ids to this many table rows (default 0: 64-bit ids in sparse tables)")
    p.add_argument("--epochs", type=int, help="most epochs (default: %d, or the --network file's own)"
                   % CTR_DEFAULTS["numEpochs"])
    p.add_argument("--batch-size", type=int, help="per worker (default: %d, or the --network file's own)"
                   % CTR_DEFAULTS["batchSize"])
    p.add_argument("--num-workers", "--workers", dest="num_workers", type=int, default=2,
                   help="training workers (Spark tasks, one slot each); fewer when a local master has fewer task "
                        "slots; on a cluster too few slots is refused")
    p.add_argument("--num-servers", "--servers", dest="num_servers", type=int, default=1, help="parameter servers")
    add_strategy_flags(p, SPARSE_STRATEGIES)
    p.add_argument("--optimizer", help="default: adam, or the --network file's own")
    p.add_argument("--lr", type=float, help="learning rate (default: %g, or the --network file's own)"
                   % CTR_DEFAULTS["learningRate"])
    p.add_argument("--initial-model", help="start from this saved model (a previous run's OUTPUT/model): its "
                   "weights, table rows, featurization and network; a featurization or network flag set to another "
                   "value than the model's is refused, one left at its default takes the model's (docs/warm_start.md)")
    p.add_argument("--forget-after-steps", type=int, default=0, help="leave out of the written model the ids unseen "
                   "for more than this many steps, across --initial-model fits (default 0: keep every id)")
    p.add_argument("--master", default=None, help="Spark master when run as plain python (default local[2])")
    add_session_flags(p)
    p.add_argument("--output", default="sparkps-ctr-output",
                   help="output folder, written whole at the end (default: %(default)s); on a cluster a folder "
                        "every node mounts at the same path (the executors write the model's Spark metadata), or "
                        "a store's URI (hdfs://, s3a://, viewfs://...), written through Spark, summary.json last")
    p.add_argument("--overwrite", action="store_true", help="replace an existing non-empty --output folder")
    args = p.parse_args(argv)
    try:
        estimator_settings(args)     # an unknown strategy option stops the job before Spark starts
    except SparkpsError as exc:
        p.error(str(exc))
    if not args.demo and not ((args.train or args.input_table) and (args.test or args.test_table)):
        p.error("--train (or --input-table) and --test (or --test-table) are required (or --demo)")
    if (args.train and args.input_table) or (args.test and args.test_table):
        p.error("give --train or --input-table, --test or --test-table, not both")
    return args


def settle_format(args):
    """--format, or the training file's content (sparkps.io.formats.detect_format, the rule every job shares);
    tables are read by Spark (their format is the catalog's).  ``--format parquet|orc`` on local files whose
    content is another format is a ConfigError naming both (Spark would fail inside a task)."""
    if args.demo or not args.train:
        return
    flag, args.format = args.format, detect_format(args.train, args.format, JOB_FORMATS)
    if flag in ("parquet", "orc"):
        for option, path in (("--train", args.train), ("--test", args.test)):
            try:
                found = detect_format(path, "auto", JOB_FORMATS) if path else flag
            except ConfigError:
                continue          # not local, or of no known format: Spark says
            if found != flag:
                raise ConfigError("--format %s, but %s %s holds %s" % (flag, option, path, found))


def check_feature_columns(args):
    """ConfigError (exit 2, before Spark starts) when the input names no columns of its own (CSV, Parquet, ORC, a
    table) and neither --categorical-cols nor --multi-value-cols says which to train on; criteo, libffm, dummy and
    libsvm bring theirs (C1..C26, f0..)."""
    if args.demo or args.categorical_cols or args.multi_value_cols:
        return
    if args.input_table or args.format in SPARK_FORMATS:
        what = "--input-table %s" % args.input_table if args.input_table else "%s input %s" % (args.format, args.train)
        raise ConfigError("--categorical-cols is required for %s: name the columns to embed, e.g. --categorical-cols "
                          "site,app (only criteo, libffm, dummy and libsvm inputs bring their own)" % what)


def spark_session(master, remote=None):
    """The job's session, classic or Spark Connect (sparkps.spark.submit.session.job_session)."""
    from sparkps.spark.submit.session import job_session
    spark = job_session("sparkps train_ctr", master=master, remote=remote,
                        settings={"spark.ui.showConsoleProgress": "false"})
    plain_interrupts()       # Ctrl-C: one line, no traceback from pyspark's handler (sparkps.spark.submit.interrupts)
    from sparkps.spark.driver.checks import choose_worker_python
    choose_worker_python(spark)      # before any Python function is wrapped (nothing to do on Spark Connect)
    print("train_ctr: Spark master %s" % session_master(spark, remote), file=sys.stderr)
    return spark


def local_rows_frame(spark, path, fmt, bad_lines="error"):
    """libffm / dummy / libsvm read on the driver by sparkps.ctr.files (a bad line named by file:line and column,
    or, with ``bad_lines`` skip, dropped and counted): (DataFrame, single-valued columns, multi-valued columns,
    lines skipped)."""
    from sparkps.spark.submit.inputs import local_input
    with local_input(spark, path) as local:       # a store's file: a temporary copy, its errors naming the URI
        return read_local_rows(spark, local, fmt, bad_lines)


def read_local_rows(spark, path, fmt, bad_lines):
    """``local_rows_frame`` of a file on the local disk."""
    from sparkps.ctr.files import LinePolicy, one_feature_per_field, read_dummy, read_libffm, read_libsvm_ids
    policy = LinePolicy(bad_lines)
    if fmt == "libffm":
        return (*ffm_frame(spark, read_libffm(path, bad_lines=policy)), policy.skipped)
    rows = (read_dummy if fmt == "dummy" else read_libsvm_ids)(path, bad_lines=policy)
    rows, width = one_feature_per_field(rows, path, policy)
    ids, _ = rows.per_field(width, path)
    names = ["f%d" % j for j in range(width)]
    cast = int if fmt == "dummy" else str
    data = [(float(label), *[cast(v) for v in row]) for label, row in zip(rows.labels, ids.tolist())]
    return spark.createDataFrame(data, ["label"] + names), names, [], policy.skipped


def ffm_frame(spark, rows):
    import numpy as np
    """A libffm file as a DataFrame: column ``f<field>`` per field, a string id where every row has exactly one
    feature of that field, else an array of them (a multi-valued field, pooled by the model)."""
    columns = rows.by_field()
    single = [f for f, (_, counts) in columns.items() if (counts == 1).all()]
    names = ["f%d" % f for f in columns]
    starts = {f: np.concatenate([[0], np.cumsum(counts)]) for f, (_, counts) in columns.items()}
    data = []
    for r, label in enumerate(rows.labels):
        cells = []
        for field, (values, _) in columns.items():
            ids = [str(v) for v in values[starts[field][r]:starts[field][r + 1]]]
            cells.append(ids[0] if field in single else ids)
        data.append((float(label), *cells))
    return (spark.createDataFrame(data, ["label"] + names), ["f%d" % f for f in single],
            ["f%d" % f for f in columns if f not in single])


def read(spark, args, path, table=None, flag="--train"):
    """``read_input``, a failure to read the input one DataError naming it (``flag`` and the file or table)."""
    try:
        return read_input(spark, args, path, table, flag)
    except SparkpsError:
        raise
    except Exception as exc:    # Spark's: a file that is not of its format, a corrupt footer, a folder of nothing
        from sparkps.spark.submit.failures import first_line
        what = ("%s %s" % (flag, path)) if path else ("%s table %s" % (flag, table))
        raise DataError("%s cannot be read as %s: %s" % (what, "a table" if table else args.format,
                                                         first_line(exc))) from None


def read_input(spark, args, path, table=None, flag="--train"):
    """(DataFrame, default categorical, numeric and multi-valued columns) of ``path`` or ``table``, its bad lines or
    cells found first (sparkps.spark.submit.criteo, sparkps.ctr.files, sparkps.spark.submit.ctr_cells) and, with
    --bad-lines skip, dropped and counted on stderr."""
    name = path or "table %s" % table
    if table or args.format in SPARK_FORMATS:
        from sparkps.spark.submit.ctr_cells import checked_cells
        from sparkps.spark.submit.inputs import read_table
        if table:
            frame = read_table(spark, table)
        elif args.format == "csv":
            frame = csv_frame(spark, path)
        else:
            frame = spark.read.format(args.format).load(path)
        numeric = [c for c in args.numeric_cols.split(",") if c]
        listed = [[c for c in (getattr(args, key, None) or "").split(",") if c]
                  for key in ("categorical_cols", "multi_value_cols")]
        check_columns(frame, name, flag, args, listed[0], numeric, listed[1])
        frame, skipped = checked_cells(frame, name, args.label_col, numeric, args.bad_lines,
                                       csv=args.format == "csv" and not table)
        check_rows(frame, name)
        categorical, numeric, multi = None, [], []
    elif args.format == "criteo":
        from sparkps.ctr.files import CRITEO_CATEGORICAL, CRITEO_NUMERIC
        frame, skipped = read_criteo(spark, path, args.bad_lines)
        categorical, numeric, multi = list(CRITEO_CATEGORICAL), list(CRITEO_NUMERIC), []
    else:
        frame, categorical, multi, skipped = local_rows_frame(spark, path, args.format, args.bad_lines)
        numeric = []
    if skipped:
        unit = "rows" if table or args.format in ("parquet", "orc") else "lines"
        print("train_ctr: %s: skipped %d bad %s (--bad-lines skip)" % (name, skipped, unit), file=sys.stderr)
    return frame, categorical, numeric, multi


def csv_frame(spark, path):
    """A CSV input with a header line, types inferred, and one more column (``ctr_cells.EXTRA``) holding the first
    cell past the header's last one: a line with more cells than the header is a bad line (Spark would drop the
    extra cells without a word)."""
    from pyspark.sql.types import StringType, StructField, StructType
    inferred = spark.read.csv(path, header=True, inferSchema=True)
    schema = StructType(inferred.schema.fields + [StructField(EXTRA, StringType())])
    return spark.read.schema(schema).option("header", "true").option("enforceSchema", "true").csv(path)


def check_rows(frame, name):
    """DataError when ``frame`` has no rows (a CSV file of a header only, an empty folder of Parquet files)."""
    if frame.isEmpty():
        raise DataError("%s holds no rows%s" % (name, " (a header line only)" if str(name).endswith(".csv") else ""))


def check_columns(frame, name, flag, args, categorical, numeric, multi):
    """Before any long Spark job: every column the settings name (the label, --categorical-cols, --numeric-cols,
    --multi-value-cols) is a column of ``frame``, read from ``flag`` ``name``; a CSV whose first line holds none of
    them is named as a file without a header line. ConfigError naming the column, the flag and the file."""
    named = [(args.label_col, "--label-col")] + [(c, "--categorical-cols") for c in categorical or []] + \
        [(c, "--numeric-cols") for c in numeric] + [(c, "--multi-value-cols") for c in multi]
    columns = [c for c in frame.columns if c != EXTRA]
    missing = [(c, option) for c, option in named if c not in columns]
    if not missing:
        return
    if args.format == "csv" and len(missing) == len(named):
        raise ConfigError("%s %s has no header line: its first line (%s) holds none of the columns the settings "
                          "name (%s); a CSV input starts with a line of column names"
                          % (flag, name, first_line_of(name) or ",".join(columns[:8]),
                             ", ".join(c for c, _ in named[:4])))
    column, option = missing[0]
    shown = columns if len(columns) <= 12 else columns[:12] + ["... (%d in all)" % len(columns)]
    raise ConfigError("%s %s has no column %r (%s); its columns are %s" % (flag, name, column, option, shown))


def first_line_of(path, longest=80):
    """The first line of a local file (a folder's first data file), shortened; None when it cannot be read."""
    from sparkps.io.formats import data_files
    try:
        path = data_files(path)[0] if os.path.isdir(path) else path
        with open(path, encoding="utf-8", errors="replace") as handle:
            line = handle.readline().rstrip("\r\n")
    except (OSError, IndexError):
        return None
    return line if len(line) <= longest else line[:longest - 3] + "..."


def check_label_types(train_df, test_df, label_col, args):
    """ConfigError when the label column holds strings in one input and numbers in the other."""
    from pyspark.sql.types import StringType
    kinds = [isinstance(frame.schema[label_col].dataType, StringType) for frame in (train_df, test_df)]
    if kinds[0] != kinds[1]:
        names = [args.train or "table %s" % args.input_table, args.test or "table %s" % args.test_table]
        raise ConfigError("label column %r holds %s in --train %s but %s in --test %s: both need the same kind"
                          % (label_col, "strings" if kinds[0] else "numbers", names[0],
                             "strings" if kinds[1] else "numbers", names[1]))


def check_label_classes(frame, label_col, name):
    """DataError when the training label holds one class only: nothing can be learned and no AUC exists.
    One small Spark job."""
    found = [row[0] for row in frame.select(label_col).distinct().limit(2).collect()]
    if len(found) == 1:
        raise DataError("--train %s: every label of column %r is %r; a click model needs rows of both classes "
                        "(nothing can be learned from one, and no AUC exists)" % (name, label_col, found[0]))


def warn_near_unique(frame, categorical, name, rows=None):
    """A line on stderr for each categorical column with nearly one value per row (an id, a timestamp): such a
    column cannot generalise. One Spark job (approximate distinct counts)."""
    from pyspark.sql import functions as F
    if not categorical:
        return
    counts = frame.agg(F.count(F.lit(1)).alias("__rows"),
                       *[F.approx_count_distinct(c).alias(c) for c in categorical]).collect()[0]
    total = counts["__rows"]
    for column in categorical:
        distinct = min(counts[column], total)      # an approximate count may pass the row count
        if total >= NEAR_UNIQUE_ROWS and distinct >= NEAR_UNIQUE * total:
            print("train_ctr: warning: categorical column %r of %s has about %d distinct values in %d rows: nearly "
                  "one per row (an id?), which a model cannot generalise from" % (column, name, distinct, total),
                  file=sys.stderr)


def indexed_label(train_df, test_df, label_col):
    """(train, test, class names): a string label column indexed as RFormula does (most frequent first), which
    must give exactly two classes; a numeric label as it is (class names None). SparkpsCTRClassifier indexes a
    string label the same way (``ctr_features.indexed_click_label``)."""
    from sparkps.spark.submit.inputs import index_string_label
    train_df, (test_df,), names = index_string_label(train_df, [test_df], label_col)
    if names is None:
        return train_df, test_df, None
    from sparkps.spark.ml.ctr_features import two_click_classes
    names = two_click_classes(label_col, names)        # as SparkpsCTRClassifier checks them
    print("train_ctr: label column %r indexed as RFormula does: %r -> 0, %r -> 1" % (label_col, *names),
          file=sys.stderr)
    return train_df, test_df, names


def demo_inputs(output, rows, spark):
    """(train, test) paths of the demo's data in ``output``/data: written there by ``demo_files``, or, for an
    ``output`` on a store, written to a temporary folder and copied to the store (through Spark), then read there."""
    if not on_store(output):
        return demo_files(os.path.join(output, "data"), rows)
    import tempfile

    from sparkps.spark.model.storage import files_for, put_folder
    target = output_path(output, "data")
    with tempfile.TemporaryDirectory(prefix="sparkps-demo-") as folder:
        paths = demo_files(folder, rows)
        put_folder(files_for(target, spark), folder, target)
    return [output_path(target, os.path.basename(p)) for p in paths]


def demo_files(folder, rows):
    """Criteo-shaped TSV files of planted DeepFM clicks (sparkps.ctr.synthetic) in ``folder``."""
    from sparkps.ctr.synthetic import planted_ctr, write_criteo_tsv
    os.makedirs(folder, exist_ok=True)
    data = planted_ctr(rows + rows // 3, vocab=30, zipf=1.2, linear_scale=0.3, fm_scale=0.15, deep_scale=0.5,
                       seed=11)
    paths = [os.path.join(folder, name) for name in ("train.tsv", "test.tsv")]
    cut = [slice(0, rows), slice(rows, None)]
    for path, part in zip(paths, cut):
        write_criteo_tsv(type(data)(*[x[part] if hasattr(x, "shape") else x for x in data]), path)
    return paths


def estimator(args, categorical, numeric, multi=()):
    from sparkps.spark.ml import SparkpsCTRClassifier
    settings = dict(labelCol=args.label_col, categoricalCols=categorical, numericCols=numeric, model=args.model,
                    embeddingDim=args.embedding_dim, numBuckets=args.num_buckets,
                    hiddenUnits=[int(h) for h in args.hidden_units.split(",") if h], numWorkers=args.num_workers,
                    numServers=args.num_servers, hashIds=args.format != "dummy", multiValueCols=list(multi),
                    multiValueSeparator=args.separator, validationFraction=args.validation_fraction,
                    earlyStoppingPatience=patience_for(args.early_stopping_patience, args.validation_fraction),
                    earlyStoppingMetric=args.early_stopping_metric,
                    **estimator_settings(args))
    if args.network:
        settings.update(network=args.network, numericCols=[])
    else:
        given = {"embeddingL2": args.embedding_l2, "dropout": args.dropout}
        settings.update({k: v for k, v in given.items() if v is not None})
    optional = {"numEpochs": args.epochs, "batchSize": args.batch_size, "optimizer": args.optimizer,
                "learningRate": args.lr}
    settings.update({k: v for k, v in optional.items() if v is not None})
    if args.initial_model:       # the model's featurization and network, unless a flag was given another value
        from sparkps.spark.ml.warm_start import FEATURIZATION
        defaults = vars(parse_args(["--demo"]))
        flags = {"model": "model", "embeddingDim": "embedding_dim", "numBuckets": "num_buckets",
                 "hiddenUnits": "hidden_units", "multiValueSeparator": "separator"}
        for name in FEATURIZATION:
            if name in flags and getattr(args, flags[name]) == defaults[flags[name]]:
                settings.pop(name, None)
        settings["initialModel"] = args.initial_model
    if args.forget_after_steps:
        settings["forgetAfterSteps"] = args.forget_after_steps
    return SparkpsCTRClassifier(**settings)


def test_metrics(scored, label_col):
    """(exact AUC over every row, mean logloss, rows), computed in Spark on the driver's request."""
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F
    auc = BinaryClassificationEvaluator(labelCol=label_col, rawPredictionCol="rawPrediction").evaluate(scored)
    p = vector_to_array(F.col("probability"))[1]
    y = F.col(label_col)
    row = scored.agg(F.avg(-(y * F.log(p) + (1 - y) * F.log(1 - p))).alias("logloss"), F.count("*").alias("n")) \
        .collect()[0]
    return auc, float(row.logloss), int(row.n)


def plot(history, auc, logloss, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = [h["epoch"] for h in history]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(epochs, [h["logloss"] for h in history], "o-", label="training logloss (per epoch)")
    ax.axhline(logloss, color="tab:orange", ls="--", label="test logloss %.4f" % logloss)
    ax.set_xlabel("epoch")
    ax.set_ylabel("logloss")
    ax.set_title("sparkps CTR: test AUC %.4f" % auc)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)


def summary(model, auc, logloss, rows, classes):
    """summary.json: the test metrics, the history (epochs counted from 1) and ``best_epoch``, the epoch whose
    weights the model keeps (the last one trained unless early stopping chose another)."""
    history = numbered_from_one(model.history)
    best = model.bestEpoch if model.bestEpoch is not None else len(history)
    return {"test_auc": auc, "test_logloss": logloss, "rows": rows, "epochs": len(history), "best_epoch": best,
            "history": history, "classes": classes}


def run(args):
    """Train into a temporary sibling of --output that replaces it only when the run succeeds."""
    final = args.output
    with staged_output(final) as folder:
        args.output = folder
        try:
            return train_and_report(args, final)
        finally:
            args.output = final


def train_and_report(args, final):
    started = time.monotonic()
    spark = spark_session(args.master, remote_of(args.remote))
    failing = True
    try:
        prepare_store_output(spark, final, args.overwrite)       # an --output on a store: checked once reached
        if args.demo:
            args.train, args.test = demo_inputs(args.output, args.demo_rows, spark)
            args.format = "criteo"
        master = session_master(spark, remote_of(args.remote))
        train_df, categorical, numeric, multi = read(spark, args, args.train, args.input_table)
        test_df = read(spark, args, args.test, args.test_table, flag="--test")[0]
        categorical = args.categorical_cols.split(",") if args.categorical_cols else categorical
        numeric = args.numeric_cols.split(",") if args.numeric_cols else numeric
        multi = args.multi_value_cols.split(",") if args.multi_value_cols else multi
        names = {"--train": args.train or "table %s" % args.input_table,
                 "--test": args.test or "table %s" % args.test_table}
        for flag, frame in (("--train", train_df), ("--test", test_df)):
            check_columns(frame, names[flag], flag, args, categorical, [] if args.network else numeric, multi)
        check_label_types(train_df, test_df, args.label_col, args)
        train_df, test_df, classes = indexed_label(train_df, test_df, args.label_col)
        check_label_classes(train_df, args.label_col, names["--train"])
        warn_near_unique(train_df, categorical, names["--train"])
        if args.network and numeric:
            print("train_ctr: --network %s reads feature indices only: numeric columns %s are not used"
                  % (args.network, ",".join(numeric)), file=sys.stderr)
            numeric = []
        if not categorical and not multi:
            raise SparkpsError("--categorical-cols is required for format %s" % args.format)
        check_shared_output(spark, final, "train_ctr")     # the executors write the model's Spark metadata
        fit_started = time.monotonic()
        model = estimator(args, categorical or [], numeric, multi).fit(train_df.repartition(args.num_workers))
        fit_seconds = time.monotonic() - fit_started
        roles = model.fit_timings["roles"]          # where the scheduler, servers and workers ran
        print(describe_roles(roles))
        history = numbered_from_one(model.history)
        for entry in history:
            line = "epoch %d training logloss %.4f" % (entry["epoch"], entry["logloss"])
            if "validation-auc" in entry:
                line += " validation AUC %.4f logloss %.4f COPC %.3f" % (
                    entry["validation-auc"], entry["validation-logloss"], entry["validation-copc"])
            print(line)
        model.write().overwrite().save(output_path(args.output, "model"))
        score_started = time.monotonic()
        auc, logloss, rows = test_metrics(model.transform(test_df), args.label_col)
        curve = io.BytesIO()
        plot(history, auc, logloss, curve)
        write_output_file(args.output, "ctr-curve.png", curve.getvalue(), spark)
        facts = {"master": master, "model_path": output_path(final, "model"), "roles": roles,
                 "timings": {"train_seconds": round(fit_seconds, 2),
                             "score_seconds": round(time.monotonic() - score_started, 2),
                             "total_seconds": round(time.monotonic() - started, 2)}}
        write_output_file(args.output, "summary.json",         # last: it marks a complete output
                          json.dumps(dict(summary(model, auc, logloss, rows, classes), **facts), indent=1), spark)
        print("trained in %.1f s on %s; model saved to %s" % (fit_seconds, master, facts["model_path"]))
        print("test AUC %.4f logloss %.4f (%d rows)" % (auc, logloss, rows))
        warning = chance_warning(auc, history, training_rows(model))
        if warning:
            print("train_ctr: warning: %s" % warning, file=sys.stderr)
        failing = False
    finally:
        stop_session(spark, failing)     # failing: the JVM's own logs silenced first, so the job's line stays last
    return 0


def training_rows(model):
    """The rows the fit trained on, all workers together (SparkTrainer.last_fit), None when not recorded."""
    rows = (model.fit_timings or {}).get("rows")
    return sum(rows) if rows else None


def chance_warning(auc, history, rows=None):
    """The warning for a test AUC at or below chance (0.5): the model ranks the test rows no better than a coin,
    which a fit too short for its data gives (docs/ctr.md, "A fit too short": 3,000 rows and 2 epochs scored AUC
    ~0.41); None above 0.5."""
    if auc is None or auc > 0.5:
        return None
    rows = " on %d training rows" % rows if rows else ""
    return ("test AUC %.4f is not above chance (0.5): after %d epoch(s)%s the model has not learned what the test "
            "rows share; train longer (--epochs) or on more rows before reading its scores (docs/ctr.md, \"A fit too "
            "short\")" % (auc, len(history), rows))


def main(argv=None):
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    quiet_py4j_records()         # py4j's traceback of an interrupted call: the job says it once itself
    quiet_parameter_server()     # the job reports a failure once, below
    logging.getLogger("sparkps.spark").setLevel(logging.INFO)    # live progress: a line per epoch, with metrics
    args = parse_args(argv)

    def checked_run():
        check_output_folder(args.output, args.overwrite)
        check_ctr_settings(args)
        check_input_paths(train=args.train, test=args.test)
        settle_format(args)
        check_feature_columns(args)
        master = master_of(args.master, remote=remote_of(args.remote))
        args.num_workers, args.num_servers = workers_for_slots(master, args.num_workers, args.num_servers)
        check_model_dir(master, cluster_conf(master), "train_ctr")     # before Spark starts
        return run(args)
    return run_job("train_ctr", checked_run, args.output)

if __name__ == "__main__":
    sys.exit(main())

"""Where the time of a CTR fit goes: ``SparkpsCTRClassifier.fit`` on generated Criteo-shaped data, split into its
parts, each timed on its own in the same run (Spark ``local[2]``, 2 workers + 2 servers, as benchmarks.bench_ctr).

    python -m benchmarks.profile_ctr_fit --rows 200000 [--write-docs] [--json PATH]

Parts (seconds, wall clock):
* ``numpy featurize, one process``: hashing the 26 categorical columns into the typed rows in this process
  (``hash_fields`` + ``TypedInputs.rows``): the floor of the featurize work, all rows on one core;
* ``statistics``: ``fit_stats`` (one Spark aggregation over the cached frame: numeric statistics);
* ``label check``: one aggregation over the label column;
* ``one pass, as the fit``: the fit's one aggregation (``fit_stats`` with the held-out rows marked): the training
  rows' statistics and the labels of both sides of the held-out split;
* ``input pass before`` / ``now``: the training input the fit reads, its rows counted (the first epoch's reading
  without the training, both cores): before, a pandas UDF hashing value by value into one array<float> cell a row,
  stacked back into float32 blocks (the path of commit 9ce4015, kept here as the baseline); now, Arrow record
  batches of the raw columns read into typed rows as the fit's tasks read them (``CTRFeaturizer.training_input``);
* ``whole fit``: the time before the barrier stage (label check, statistics, the input's first rows), then, from
  the worker tasks' timelines, ``stage start to task start`` (the barrier stage starting
  and its input stages), ``task start to registered`` (server processes started, every node registered),
  ``registered to first batch end`` (initialisation, the tables' INIT, the first batch read),
  ``training steps`` (first to last batch end; of which, at the epoch ends, the held-out ids' rows pulled, the
  held-out rows scored and the servers' snapshots of a best epoch's tables, the slowest worker's seconds of each),
  ``after training`` (the final pull, the tables returned), and the
  time after the stage (the model built from the results), and the number of Spark jobs the fit ran outside the
  barrier stage.

``--cold`` adds what a spark-submit job pays: its one fit is the first of a fresh process (new JVM, new Python
workers, new server processes). Each repeat starts a new Python process (``--cold-child``) that times its imports, the
session's start (the JVM), the input frame, then two fits of the same data in that session, the cold one first and
a warm one after, each part by part as above; the repeats alternate two kernel caches, the machine's own (a job on a
machine that ran sparkps before) and an empty one (``NUMBA_CACHE_DIR``: the first job on a fresh machine, every
compiled kernel compiled), so cold and warm run on even terms: same data, same process, same settings. The section
gives each part's median over the repeats and its range, and the cold fit's ratio to the warm one (target <= 1.3).

Prints one line per part; ``--write-docs`` writes them as section ``profile_ctr_fit`` of docs/benchmarks.md
(discussed in docs/ctr.md); ``--json PATH`` writes the parts' seconds. A step's transport without
Spark: ``benchmarks.profile_ctr_steps``.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks import report
from benchmarks.bench_ctr import frames, planted, split_rows


def timed(label, fn, out):
    start = time.perf_counter()
    value = fn()
    out.append((label, time.perf_counter() - start))
    print("%-40s %8.2f s" % (label, out[-1][1]), flush=True)
    return value


def numpy_featurize(data, rows):
    import sparkps.nets as nets
    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.numeric import NumericStats
    cats = data.categorical[:rows]
    ids = hash_fields(data.fields, [cats[:, j] for j in range(cats.shape[1])])
    numeric = NumericStats.fit(data.numeric[:rows], data.numeric_names, log=True).transform(data.numeric[:rows])
    from sparkps.spark.common.typed_inputs import TypedInputs
    spec = nets.FeatureSpec(categorical=data.fields, numeric=data.numeric_names, embedding_dim=4)
    return TypedInputs(spec.input_parts()).rows(spec.inputs(ids, numeric))


def stage_parts(results, stage_started):
    """(label, seconds) of the worker tasks' timelines, earliest task first."""
    timelines = [r["timeline"] for r in results if r.get("timeline")]
    first = [r["first_batch_end"] for r in results if r.get("first_batch_end")]
    last = [r["last_batch_end"] for r in results if r.get("last_batch_end")]
    task_start = min(t["task_start"] for t in timelines)
    registered = max(t["registered"] for t in timelines)
    return [("stage start to task start", task_start - stage_started),
            ("task start to registered (all)", registered - task_start),
            ("registered to first batch end", min(first) - registered),
            ("training steps (first to last batch)", max(last) - min(first))] + [
            ("of the training steps: " + label, max(r["validation"][part] for r in results))
            for part, label in VALIDATION_PARTS if all(r.get("validation") for r in results)] + [
            ("after training (to last task end)", max(t["task_end"] for t in timelines) - max(last))]


# the epoch ends' validation, inside the training steps (the slowest worker's seconds of each)
VALIDATION_PARTS = [("rows_pull", "the held-out ids' rows pulled from the servers"),
                    ("scoring", "the held-out rows scored"),
                    ("snapshot", "the best epoch's tables written by the servers")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=200000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--model", default="fm")
    p.add_argument("--validation-fraction", type=float, default=0.1,
                   help="the held-out share, scored after every epoch (0: none)")
    p.add_argument("--cold", action="store_true",
                   help="also time the first fit of fresh processes beside a warm one (see the module's doc)")
    p.add_argument("--cold-repeat", type=int, default=4,
                   help="fresh processes for --cold, alternating the machine's kernel cache and an empty one")
    p.add_argument("--cold-child", help=argparse.SUPPRESS)      # one fresh process of --cold: where its JSON goes
    report.add_output_args(p)
    args = p.parse_args(argv)
    if args.cold_child:
        return cold_child(args)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import sparkps.spark.driver.trainer as trainer_module
    from sparkps.spark.driver.input_rows import held_out_rows
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    run = report.Run("profile_ctr_fit", argv)
    print("load at start: %.1f %.1f %.1f" % tuple(run.load_start))
    data = planted(args)
    spark = (SparkSession.builder.master("local[2]").appName("profile_ctr")
             .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "8g")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    out, captured = [], {}
    original = trainer_module.run_watched

    def run_watched(*a, **k):
        captured["stage_started"] = time.time()
        captured["results"] = original(*a, **k)
        captured["stage_ended"] = time.time()
        return captured["results"]

    trainer_module.run_watched = run_watched
    try:
        fit_rows, valid_rows, test = frames(spark, data, split_rows(args.rows))
        train = fit_rows.union(valid_rows).cache()      # all --rows training rows (the fit holds out its own)
        train.count()
        fit_rows.unpersist(), valid_rows.unpersist(), test.unpersist()
        timed("numpy featurize, one process", lambda: numpy_featurize(data, args.rows), out)
        clf = SparkpsCTRClassifier(categoricalCols=list(data.fields), numericCols=list(data.numeric_names),
                                   model=args.model, embeddingDim=4, hiddenUnits=[32, 16], numEpochs=args.epochs,
                                   batchSize=args.batch_size, numWorkers=2, numServers=2, learningRate=args.lr,
                                   validationFraction=args.validation_fraction)
        clf.fit(train.limit(2000))       # untimed: Python workers and numba caches warm, as in bench_ctr
        featurizer = clf._featurizer()
        stats = timed("statistics (fit_stats)", lambda: featurizer.fit_stats(train), out)
        timed("label check (check_labels)", lambda: featurizer.check_labels(train, "label"), out)
        timed("one pass, as the fit: statistics, both sides' labels", lambda: featurizer.fit_stats(
            train, "label", held_out_rows(train, clf.getOrDefault("validationFraction"), clf.getOrDefault("seed"))),
            out)
        spec = clf.feature_spec(stats)
        timed("input pass before: per-row arrays", lambda: count_blocks(legacy_blocks(train, stats, spec)), out)
        timed("input pass now: Arrow batches to typed rows", lambda: count_typed_rows(
            *featurizer.training_input(train, stats, "label", spec)), out)
        fit_started = time.time()
        jobs = jobs_outside_the_stage(spark.sparkContext, lambda: timed("whole fit", lambda: clf.fit(train), out))
        fit_ended = time.time()
        print("  Spark jobs outside the stage: %d" % jobs)
        parts = [("before the stage (checks, statistics)", captured["stage_started"] - fit_started)]
        parts += stage_parts(captured["results"], captured["stage_started"])
        parts.append(("after the stage (model built)", fit_ended - captured["stage_ended"]))
        for label, seconds in parts:
            print("  %-38s %8.2f s" % (label, seconds))
        out += [("whole fit: " + label, seconds) for label, seconds in parts]
    finally:
        trainer_module.run_watched = original
        spark.stop()
    data = {"options": report.options(args), "parts": out, "jobs": jobs}
    if args.cold:
        data["cold"] = cold_runs(args)
    print(run.publish(args, "profile_ctr_fit", data, render))
    report.save_json(args, "profile_ctr_fit", {label: report.lower(seconds, "s") for label, seconds in out})
    return 0


def fit_parts(clf, train, trainer_module):
    """``clf.fit(train)`` timed: [(part, seconds)], the whole fit first, then its parts (as the warm profile's)."""
    captured, original = {}, trainer_module.run_watched

    def run_watched(*a, **k):
        captured["stage_started"] = time.time()
        captured["results"] = original(*a, **k)
        captured["stage_ended"] = time.time()
        return captured["results"]

    trainer_module.run_watched = run_watched
    try:
        started = time.time()
        clf.fit(train)
        ended = time.time()
    finally:
        trainer_module.run_watched = original
    return ([("whole fit", ended - started),
             ("before the stage (checks, statistics)", captured["stage_started"] - started)]
            + stage_parts(captured["results"], captured["stage_started"])
            + [("after the stage (model built)", ended - captured["stage_ended"])])


# the order of the --cold tables (a run record's JSON keeps its maps' keys sorted)
CACHES = ("machine's kernel cache", "empty kernel cache")
PROCESS_PARTS = ("process start (interpreter, numpy, the benchmark's modules)", "driver imports (pyspark, sparkps)",
                 "JVM and session start", "input frame built and cached (outside the fits)")


def cold_child(args):
    """One fresh process of ``--cold``: imports, session, input, a cold fit and a warm fit, written as JSON to
    ``args.cold_child``. Blocks for the two fits."""
    spawned = float(os.environ["SPARKPS_PROFILE_SPAWNED"])
    started = time.time()
    from pyspark.sql import SparkSession

    import sparkps.spark.driver.trainer as trainer_module
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    parts = {PROCESS_PARTS[0]: started - spawned, PROCESS_PARTS[1]: time.time() - started}
    t = time.time()
    spark = (SparkSession.builder.master("local[2]").appName("profile_ctr_cold")
             .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "8g")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    parts[PROCESS_PARTS[2]] = time.time() - t
    try:
        t = time.time()
        data = planted(args)
        fit_rows, valid_rows, test = frames(spark, data, split_rows(args.rows))
        train = fit_rows.union(valid_rows).cache()
        train.count()
        parts[PROCESS_PARTS[3]] = time.time() - t
        clf = SparkpsCTRClassifier(categoricalCols=list(data.fields), numericCols=list(data.numeric_names),
                                   model=args.model, embeddingDim=4, hiddenUnits=[32, 16], numEpochs=args.epochs,
                                   batchSize=args.batch_size, numWorkers=2, numServers=2, learningRate=args.lr,
                                   validationFraction=args.validation_fraction)
        cold = fit_parts(clf, train, trainer_module)
        warm = fit_parts(clf, train, trainer_module)
    finally:
        spark.stop()
    with open(args.cold_child, "w") as f:
        json.dump({"process": parts, "cold": cold, "warm": warm}, f)
    return 0


def cold_runs(args):
    """``args.cold_repeat`` fresh processes (``cold_child``), alternating the machine's kernel cache and an empty
    one: {"machine's kernel cache": [child records], "empty kernel cache": [...]}. Blocks for every child."""
    runs = {cache: [] for cache in CACHES}
    options = ["--rows", str(args.rows), "--epochs", str(args.epochs), "--batch-size", str(args.batch_size),
               "--vocab", str(args.vocab), "--lr", str(args.lr), "--model", args.model,
               "--validation-fraction", str(args.validation_fraction)]
    with tempfile.TemporaryDirectory(prefix="sparkps-cold-") as folder:
        for repeat in range(args.cold_repeat):
            cache = CACHES[repeat % 2]
            env = dict(os.environ)
            if cache == CACHES[1]:
                env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(dir=folder)
            out = os.path.join(folder, "child-%d.json" % repeat)
            env["SPARKPS_PROFILE_SPAWNED"] = repr(time.time())
            subprocess.run([sys.executable, "-m", "benchmarks.profile_ctr_fit", "--cold-child", out] + options,
                           env=env, cwd=report.ROOT, check=True)
            with open(out) as f:
                runs[cache].append(json.load(f))
            child = runs[cache][-1]
            print("cold run %d (%s): cold fit %.2f s, warm fit %.2f s" % (
                repeat + 1, cache, child["cold"][0][1], child["warm"][0][1]), flush=True)
    return runs


def cold_markdown(runs):
    """The ``--cold`` table: each part's median [range] over the fresh processes, cold and warm, per kernel cache."""
    lines = ["", "### The cold fit: the first fit of a fresh process, beside a warm one in the same process", "",
             "Each fresh process (a new Python driver, JVM, Python workers and server processes, as a spark-submit "
             "job) times its start, then fits the same rows twice in its session: the cold fit first, a warm one "
             "after. Median [min-max] over the processes of each kernel cache (the machine's own: a machine that "
             "ran sparkps before; an empty `NUMBA_CACHE_DIR`: a fresh machine, every kernel compiled); the "
             "processes of the two caches alternate.", ""]
    for cache in CACHES:
        children = runs.get(cache)
        if not children:
            continue
        lines += ["#### %s (%d processes)" % (cache, len(children)), "", "| part | cold fit, s | warm fit, s |",
                  "|---|---|---|"]
        for label in PROCESS_PARTS:
            lines.append("| %s | %s | |" % (label, spread([c["process"][label] for c in children])))
        for i, (label, _) in enumerate(children[0]["cold"]):
            name = label if i == 0 else "- " + label
            lines.append("| %s | %s | %s |" % (name, spread([c["cold"][i][1] for c in children]),
                                                spread([c["warm"][i][1] for c in children])))
        ratios = [c["cold"][0][1] / c["warm"][0][1] for c in children]
        lines += ["", "Cold fit / warm fit: %s (target <= 1.3; the parts above say where the difference goes)."
                  % spread(ratios, "%.2fx"), ""]
    return lines


def spread(values, fmt="%.2f"):
    """``median [min-max]`` of ``values``, each written with ``fmt``."""
    ordered = sorted(values)
    return (fmt + " [" + fmt + "-" + fmt + "]") % (float(np.median(ordered)), ordered[0], ordered[-1])


def jobs_outside_the_stage(sc, fit):
    """The Spark jobs ``fit()`` runs outside the barrier stage (which runs under a job group of its own): the
    statistics, the label checks, the held-out rows' collect."""
    group = "sparkps-profile-fit"
    sc.setJobGroup(group, "the timed fit")
    try:
        fit()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    sc._jsc.sc().listenerBus().waitUntilEmpty()      # every job the fit ran is in the status store
    return len(sc.statusTracker().getJobIdsForGroup(group))


SECTIONS = ("profile_ctr_fit",)


def render(run):
    """The section of a run record (pure function of it)."""
    data = run["data"]
    text = markdown(data["parts"], argparse.Namespace(**data["options"]), data["jobs"], run)
    return text + "\n" + "\n".join(cold_markdown(data["cold"])).rstrip() if data.get("cold") else text


def markdown(parts, args, jobs, run):
    """The parts' seconds as the ``profile_ctr_fit`` section of docs/benchmarks.md."""
    lines = ["## Where the time of a CTR fit goes (benchmarks/profile_ctr_fit.py)", "",
             "`SparkpsCTRClassifier.fit` of %s on %d planted Criteo-shaped rows (26 categorical fields, 13 numeric; "
             "vocabulary %d), %d epoch(s), batch %d, Adam lr %g, embedding 4, Spark `local[2]`, 2 workers + 2 "
             "servers, held-out share %g (scored after every epoch, early stopping at its defaults), after one untimed "
             "fit of 2,000 rows; each part timed on its own in the same run, the parts of the whole fit read from "
             "the worker tasks' timelines." % (
                 args.model, args.rows, args.vocab, args.epochs, args.batch_size, args.lr,
                 args.validation_fraction), "",
             "| part | seconds |", "|---|---|"]
    for label, seconds in parts:
        name = "- " + label[len("whole fit: "):] if label.startswith("whole fit: ") else label
        lines.append("| %s | %.2f |" % (name, seconds))
    lines += ["", "Spark jobs of the whole fit outside the barrier stage (before it: the statistics and label "
              "checks, the held-out rows' collect): %d." % jobs,
              "", "One-minute load at the start / end of the run: %.1f / %.1f (%d cores, shared)." % (
                  run["load"]["start"][0], run["load"]["end"][0], run["machine"]["cores"])]
    return "\n".join(lines)


def count_blocks(rdd):
    return rdd.map(lambda block: len(block[1])).sum()


def count_typed_rows(frame, reader):
    """Rows of the training input read as a fit's tasks read it (``CTRReader.read`` of each Arrow batch)."""
    import pyarrow as pa

    def read(batches):
        for batch in batches:
            X, _ = reader.read(batch)
            yield pa.RecordBatch.from_arrays([pa.array([len(X)], pa.int64())], names=["rows"])

    return sum(row.rows for row in frame.mapInArrow(read, "rows long").collect())


def legacy_blocks(df, stats, spec):
    """The training input as the fit read it before (commit 9ce4015), for comparison: a pandas UDF hashed the
    columns value by value into one array<float> cell per row, then ``frame_to_blocks`` stacked the cells of each
    Arrow batch back into a float32 block."""
    import pandas as pd
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, FloatType

    from sparkps.ctr.packed import PackedLayout
    from sparkps.spark.common.feature_blocks import frame_to_blocks
    categorical, numeric_cols, saved = list(spec.categorical), list(spec.numeric), stats.to_dict()
    layout = PackedLayout(spec.input_parts())      # the float rows of that version

    def featurize(*columns):
        from sparkps.ctr.hashing import hash_column
        from sparkps.ctr.numeric import NumericStats
        cats, nums = columns[:len(categorical)], columns[len(categorical):]
        ids = np.stack([hash_column(n, c.to_numpy(dtype=object)) for n, c in zip(categorical, cats)], axis=1)
        numeric = NumericStats.from_dict(saved).transform(
            np.stack([c.to_numpy(dtype=np.float64, na_value=np.nan) for c in nums], axis=1))
        return pd.Series(list(layout.pack(spec.inputs(ids, numeric))))

    udf = F.pandas_udf(featurize, ArrayType(FloatType()))
    rows = df.withColumn("features", udf(*[F.col(c) for c in categorical],
                                         *[F.col(c).cast("double") for c in numeric_cols]))
    return frame_to_blocks(rows, "features", "label", layout.width)


if __name__ == "__main__":
    sys.exit(main())

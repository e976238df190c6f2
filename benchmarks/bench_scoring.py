"""Scoring at Spark's speed: rows/s of ``transform`` into Spark's ``noop`` sink, beside MLlib's LogisticRegression
pipeline model on the same rows in the same session.

    python -m benchmarks.bench_scoring [--ids 1000000 4000000 16000000] [--rows 400000] [--write-docs]
    python -m benchmarks.bench_scoring --quick          # a small run that checks the benchmark works

The data sets:

* **MovieLens 100K** (the small table): the FM that ``SparkpsCTRClassifier`` fits with its defaults (embedding 8)
  on MovieLens 100K (rating >= 4 is a click, ``benchmarks.bench_ctr_quality.movielens_set``; read from the installed
  recbole wheel, left out with a line saying so when it is not installed), scored twice: as the fit returns it
  (tables inline) and with its tables as shard files (``SparkModel.with_sharded_tables``: the path every big model
  takes). Its rows are repeated up to ``--rows`` rows.
* **the generated big-table set** (``benchmarks.bench_big_table.generate``: 26 Zipf fields, a realistic vocabulary)
  at each of ``--ids`` distinct ids: an FM with embedding 16 whose two tables hold a row for every distinct id of
  the set (random rows written as shard files split by ``rows.ids.shard_of`` over 2 shards, as 2 servers write
  them; the dense part and the featurizer from a one-epoch fit on ``--fit-rows`` rows with ``inlineTablesMB=0``),
  scoring the set's first ``--rows`` rows.

Beside each: ``Pipeline(StringIndexer(handleInvalid='keep') -> OneHotEncoder -> VectorAssembler ->
LogisticRegression(maxIter=10))`` fitted on the same fit rows. Every model is warmed up once (one untimed scoring of
the frame), then the models alternate, ``--repeats`` times each; the frame is cached and counted before. Reported:
rows/s (median, min-max), the median's ratio to MLlib's median, the Python workers' peak RSS while each model
scores (those Spark keeps alive from an earlier pass count too), and the driver's peak RSS over the data set's
scoring. Targets (the issue that asked for this benchmark):
>= 1.0x MLlib for the small table, >= 0.7x at 4M ids, >= 0.5x at 16M; the scoring workers' peak independent of the
table's size.
"""
import argparse
import os
import shutil
import tempfile
import threading
import time

import numpy as np

from benchmarks import report
from benchmarks.process_memory import command_line, rss_of

SIZES = (1_000_000, 4_000_000, 16_000_000)
QUICK = {"ids": [100_000], "rows": 20_000, "fit_rows": 3_000}
DIM = 16
SHARDS = 2
SECTIONS = ("bench_scoring",)


class Peaks:
    """Peak RSS of the Python workers below this process (per phase) and of this process (the driver), sampled
    every ``interval`` s on a thread."""

    def __init__(self, interval=0.2):
        self.interval, self.workers, self.driver, self.phase = interval, {}, 0, None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        from benchmarks.bench_big_table import descendants
        while not self._stop.is_set():
            self.driver = max(self.driver, rss_of(os.getpid()))
            phase = self.phase
            for pid in descendants(os.getpid()):
                argv = command_line(pid)
                if phase and argv and b"python" in os.path.basename(argv[0]) and b"pyspark" in b" ".join(argv):
                    self.workers[phase] = max(self.workers.get(phase, 0), rss_of(pid))
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join()


def score_seconds(model, frame):
    """Seconds of ``model.transform(frame)`` written to Spark's ``noop`` sink (every row scored)."""
    start = time.perf_counter()
    model.transform(frame).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def race(models, frame, rows, repeats, peaks):
    """{name: {"seconds": [...], "worker_peak": bytes}} of ``models`` ({name: model}) scoring ``frame`` (``rows``
    rows): one warm-up each, then ``repeats`` alternating passes."""
    for model in models.values():
        score_seconds(model, frame)
    seconds = {name: [] for name in models}
    for _ in range(repeats):
        for name, model in models.items():
            peaks.phase = name
            seconds[name].append(score_seconds(model, frame))
            peaks.phase = None
    return {name: {"seconds": seconds[name], "rows": rows, "worker_peak": peaks.workers.pop(name, 0)}
            for name in models}


def mllib_pipeline(frame, categorical, label):
    """MLlib's LogisticRegression pipeline model (indexed, one-hot encoded categorical columns) fitted on
    ``frame``."""
    from pyspark.ml import Pipeline
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.feature import OneHotEncoder, StringIndexer, VectorAssembler
    indexed = ["%s_idx" % c for c in categorical]
    encoded = ["%s_ohe" % c for c in categorical]
    stages = [StringIndexer(inputCols=categorical, outputCols=indexed, handleInvalid="keep"),
              OneHotEncoder(inputCols=indexed, outputCols=encoded, handleInvalid="keep"),
              VectorAssembler(inputCols=encoded, outputCol="mllib_features"),
              LogisticRegression(featuresCol="mllib_features", labelCol=label, maxIter=10,
                                 probabilityCol="probability", predictionCol="prediction",
                                 rawPredictionCol="rawPrediction")]
    return Pipeline(stages=stages).fit(frame)


def with_tables_as_shards(model, folder):
    """A copy of the pyspark.ml CTR ``model`` whose tables are shard files (written under ``folder``)."""
    copy = model.copy()
    copy.spark_model = model.spark_model.with_sharded_tables(folder, num_shards=SHARDS)
    return copy


def movielens_models(spark, rows, folder):
    """(frame of ``rows`` MovieLens rows, {name: model}), or None without the recbole wheel."""
    from benchmarks.bench_ctr_quality import movielens_set
    from sparkps.spark.ml import SparkpsCTRClassifier
    data = movielens_set(0)
    if data is None:
        return None
    import pandas as pd
    table = pd.concat([data["train"], data["test"]])
    fit_frame = spark.createDataFrame(table).repartition(2).cache()
    fm = SparkpsCTRClassifier(labelCol="label", categoricalCols=data["categorical"], model="fm", embeddingDim=8,
                              numWorkers=2, numServers=2).fit(fit_frame)
    repeated = pd.concat([table] * int(np.ceil(rows / len(table))), ignore_index=True).iloc[:rows]
    frame = spark.createDataFrame(repeated).repartition(2).cache()
    frame.count()
    models = {"sparkps FM, tables inline": fm,
              "sparkps FM, tables as shard files": with_tables_as_shards(fm, os.path.join(folder, "ml100k")),
              "MLlib LogisticRegression": mllib_pipeline(fit_frame, data["categorical"], "label")}
    return frame, models


def big_table_models(spark, ids, rows, fit_rows, folder):
    """(frame of ``rows`` rows of the generated set at ``ids`` distinct ids, {name: model}, the tables' rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from benchmarks.bench_big_table import FIELDS, generate
    from sparkps.spark.ml import SparkpsCTRClassifier
    values, clicks = generate(ids)
    columns = ["C%d" % (f + 1) for f in range(FIELDS)]
    data_path = os.path.join(folder, "data.parquet")
    pq.write_table(pa.table({"click": clicks[:rows], **{c: values[:rows, k] for k, c in enumerate(columns)}}),
                   data_path)
    fit_path = os.path.join(folder, "fit.parquet")
    pq.write_table(pa.table({"click": clicks[:fit_rows], **{c: values[:fit_rows, k] for k, c in enumerate(columns)}}),
                   fit_path)
    fit_frame = spark.read.parquet(fit_path).cache()
    fm = SparkpsCTRClassifier(labelCol="click", categoricalCols=columns, model="fm", embeddingDim=DIM, numWorkers=2,
                              numServers=2, numEpochs=1, validationFraction=0.0, batchSize=1024,
                              inlineTablesMB=0.0).fit(fit_frame)
    table_rows = grow_tables(fm.spark_model, columns, values, os.path.join(folder, "tables"))
    del values, clicks
    frame = spark.read.parquet(data_path).repartition(2).cache()
    frame.count()
    models = {"sparkps FM, tables as shard files": fm,
              "MLlib LogisticRegression": mllib_pipeline(fit_frame, columns, "click")}
    return frame, models, table_rows


def grow_tables(spark_model, columns, values, folder, seed=0):
    """Give ``spark_model`` (tables as shard files) tables holding a random row for every distinct (field, value) of
    ``values`` (rows, fields), written as ``SHARDS`` shard files per table split by ``rows.ids.shard_of`` under
    ``folder``, the fitted tables' options kept. Returns the rows of each table."""
    import pyarrow as pa

    from sparkps.rows.ids import shard_of
    from sparkps.rows.shards import write_manifest, write_shard
    from sparkps.spark.task.ctr_columns import hashed
    ids = np.unique(np.concatenate([hashed(c, pa.array(np.unique(values[:, k]))) for k, c in enumerate(columns)]))
    owner = shard_of(ids, SHARDS)
    rng = np.random.default_rng(seed)
    tables = {}
    for name, entry in spark_model.table_manifest.items():
        dim = int(entry["dim"])
        shards = []
        for rank in range(SHARDS):
            mine = ids[owner == rank]
            vectors = (rng.standard_normal((mine.size, dim), np.float32) * 0.01).astype(np.float32)
            shards.append(write_shard(folder, name, rank, mine, vectors, np.ones(mine.size, np.int64),
                                      np.zeros(mine.size, np.int64)))
            del vectors
        tables[name] = dict(entry, rows=int(ids.size), shards=shards)
    write_manifest(folder, tables)
    spark_model.tables_folder, spark_model.table_manifest = folder, tables
    return int(ids.size)


def run_set(spark, name, frame, models, peaks, repeats, table_rows=None):
    """The record of one data set: each model's passes and peaks, the driver's peak."""
    peaks.driver = 0
    rows = frame.count()
    results = race(models, frame, rows, repeats, peaks)
    return {"set": name, "rows": rows, "table_rows": table_rows, "models": results, "driver_peak": peaks.driver}


def rate(result):
    return result["rows"] / float(np.median(result["seconds"]))


def spread(result):
    rates = [result["rows"] / s for s in result["seconds"]]
    return "%.0f-%.0f" % (min(rates), max(rates))


def render(run):
    """The section of a run record (pure function of it)."""
    data = run["data"]
    lines = ["## Scoring at Spark's speed", "",
             "`transform` into Spark's `noop` sink on local[2], each model warmed up once, then %d alternating "
             "passes; rows/s is the median pass (min-max beside it), the ratio is to MLlib's median in the same "
             "data set. Peaks: the RSS of the Python workers alive while each model scored (workers Spark keeps "
             "from an earlier pass count, idle or not), the driver's over the data set; the table rows are the "
             "distinct ids of the whole generated set (at least the ids asked for: its rows come in blocks). "
             "Targets: >= 1.0x MLlib for the small table, >= 0.7x at 4M ids, >= 0.5x at 16M." % data["repeats"], "",
             "| data set | table rows | scored rows | model | rows/s | spread | x MLlib | Python workers' peak RSS "
             "| driver peak RSS |", "|---|---|---|---|---|---|---|---|---|"]
    for record in data["sets"]:
        mllib = rate(record["models"]["MLlib LogisticRegression"])
        for model, result in record["models"].items():
            lines.append("| %s | %s | %d | %s | %.0f | %s | %.2fx | %.0f MB | %.0f MB |" % (
                record["set"], "-" if record["table_rows"] is None else "%d" % record["table_rows"],
                record["rows"], model, rate(result), spread(result), rate(result) / mllib,
                result["worker_peak"] / 2**20, record["driver_peak"] / 2**20))
    for note in data["notes"]:
        lines += ["", note]
    return "\n".join(lines)


def main(argv=None):
    parser = report.add_output_args(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--ids", type=int, nargs="*", default=None,
                        help="distinct ids of each big-table run (default: 1M, 4M and 16M; --quick: 100k)")
    parser.add_argument("--rows", type=int, default=None, help="rows scored per data set (default 400000)")
    parser.add_argument("--fit-rows", type=int, default=None,
                        help="rows the big-table models are fitted on (default 50000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--movielens", choices=["auto", "off"], default="auto")
    parser.add_argument("--quick", action="store_true", help="a small run: %s" % QUICK)
    parser.add_argument("--driver-memory", default="4g")
    args = parser.parse_args(argv)
    ids = args.ids if args.ids is not None else QUICK["ids"] if args.quick else list(SIZES)
    rows = args.rows or (QUICK["rows"] if args.quick else 400_000)
    fit_rows = args.fit_rows or (QUICK["fit_rows"] if args.quick else 50_000)
    run = report.Run("bench_scoring", argv)
    spark = report.local_spark("bench_scoring", args.driver_memory)
    peaks, sets, notes = Peaks(), [], []
    try:
        folder = tempfile.mkdtemp(prefix="sparkps-bench-scoring-")
        try:
            small = movielens_models(spark, rows, folder) if args.movielens == "auto" else None
            if small is None:
                notes.append("MovieLens 100K: not run (%s)." % (
                    "--movielens off" if args.movielens == "off" else "the recbole wheel is not installed"))
            else:
                sets.append(run_set(spark, "MovieLens 100K", *small, peaks, args.repeats))
                small[0].unpersist()
            for size in ids:
                part = os.path.join(folder, "ids-%d" % size)
                os.makedirs(part)
                frame, models, table_rows = big_table_models(spark, size, rows, fit_rows, part)
                sets.append(run_set(spark, "generated, %d ids" % size, frame, models, peaks, args.repeats,
                                    table_rows))
                frame.unpersist()
                print(render({"data": {"sets": sets, "notes": notes, "repeats": args.repeats}}), flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        peaks.stop()
        spark.stop()
    data = {"sets": sets, "notes": notes, "repeats": args.repeats}
    print(run.publish(args, "bench_scoring", data, render))
    report.save_json(args, "bench_scoring", {
        "%s %s rows_per_s" % (record["set"], model): report.higher(rate(result), "rows/s")
        for record in sets for model, result in record["models"].items()})


if __name__ == "__main__":
    main()

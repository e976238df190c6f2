"""Scoring a CTR model with its tables inline against the same model with its tables as shard files (the join), as
the tables grow: the measurement behind ``inlineTablesMB`` (``sparkps.spark.model.table_rows.INLINE_TABLE_BYTES``).

    python -m benchmarks.bench_inline_threshold [--sizes-mb 1,8,16] [--rows 20000] [--repeats 3]
                                                [--driver-memory 1g] [--write-docs] [--json PATH]

The model: an FM with two tables, ``embedding_weight`` (dim 4) and ``linear_embedding_weight`` (dim 1), trained one
epoch in one process on planted FM clicks (1,500 rows, 3 fields of 40 values, seed 1: the recipe of
tests/packed_fm.py), its input a packed float row (``sparkps.ctr.packed``). For each size S both tables are grown
with the same random ids (uniform 64-bit, rows uniform in [-0.01, 0.01)) until their rows take S MB (rows x dim x 4
bytes summed over the tables, as ``inlineTablesMB`` counts them: S x 2^20 / 20 ids). The inline model is that
model; the join model is ``with_sharded_tables`` of it (2 shards a table, format 4, scored through Spark SQL's
join: ``sparkps.spark.model.join_scoring``).

The scored rows: ``--rows`` rows of the same planted generator (seed 2, so their ids are the trained ones), packed,
in a cached DataFrame of 2 partitions on local[2]. A pass is ``transform`` of every row written to Spark's ``noop``
sink (every column computed, nothing collected). For each size each path first runs one pass untimed (the warm-up:
the Python workers started, the inline model cached in them, the shard files in the page cache), then the two paths
alternate ``--repeats`` times (inline, join, inline, join, ...); reported: the median pass of each path, and how each
path shipped its tables (inside the UDF or read from a model folder; broadcast or sort-merge join). A pass that fails
(the driver out of memory) is reported as failed with the error's first line, and that path is not run again at that
size.
"""
import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from benchmarks import report

DOC = os.path.join(report.ROOT, "docs", "tables.md")
SECTION = "inline_threshold"
SECTIONS = (SECTION,)
FIELDS = ("a", "b", "c")
DIM = 4
TABLES = ("embedding_weight", "linear_embedding_weight")


def parse_sizes(text):
    """The ``--sizes-mb`` list: positive numbers of MB, comma-separated."""
    try:
        sizes = [float(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("--sizes-mb: numbers of MB separated by commas, got %r" % text) from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError("--sizes-mb: positive numbers of MB, got %r" % text)
    return sizes


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=parse_sizes, default=parse_sizes("1,8,16"),
                        help="sizes of the tables' rows in MB (2^20 bytes), comma-separated")
    parser.add_argument("--rows", type=int, default=20_000, help="rows scored in each pass")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes of each path per size (median)")
    parser.add_argument("--driver-memory", default="1g", help="spark.driver.memory of the local[2] session")
    return report.add_output_args(parser).parse_args(argv)


def planted_inputs(rows, seed):
    """(typed inputs of ``rows`` planted FM rows of the 3 fields, their labels)."""
    from sparkps.ctr.features import FeatureSpec
    from sparkps.ctr.hashing import hash_column
    from sparkps.ctr.synthetic import planted_ctr
    spec = FeatureSpec(categorical=FIELDS, embedding_dim=DIM)
    data = planted_ctr(rows, num_fields=len(FIELDS), num_numeric=0, vocab=40, zipf=1.3, seed=seed, deep_scale=0.0)
    ids = np.stack([hash_column(f, [str(v) for v in data.ranks[:, i]]) for i, f in enumerate(FIELDS)], axis=1)
    return spec, spec.inputs(ids), data.labels


def trained_model():
    """(inline SparkModel of the FM, its packed layout): tests/packed_fm.py's recipe."""
    from sparkps.ctr.packed import PackedLayout
    from sparkps.nets.ctr_fit import fit_ctr
    from sparkps.nets.zoo import build
    from sparkps.spark.model.spark_model import SparkModel
    spec, inputs, labels = planted_inputs(1500, seed=1)
    layout = PackedLayout(spec.input_parts())
    net = build("fm", spec)
    model = fit_ctr(net, inputs, labels, num_epoch=1)
    return SparkModel(net, model.arg_params, model.aux_params, input_shape=(layout.width,), label_name="ctr_label",
                      input_layout=layout), layout


def ids_for(size_mb, dims):
    """How many ids each table holds so that their rows take ``size_mb`` MB (rows x dim x 4 over the tables)."""
    return int(size_mb * 2**20) // (4 * sum(dims))


def grown(model, size_mb, seed=0):
    """A copy of the inline ``model`` whose tables (TABLES) all hold the same ``ids_for(size_mb)`` ids: their
    trained ids plus random ones with random rows, sorted by id."""
    from sparkps.rows.values import RowSparse
    from sparkps.spark.model.spark_model import SparkModel
    tables = {name: model.arg_params[name].merged() for name in TABLES}
    trained = np.unique(np.concatenate([tables[name].ids for name in TABLES]))
    target = ids_for(size_mb, [tables[name].dim for name in TABLES])
    rng = np.random.default_rng(seed)
    extra = np.empty(0, np.int64)
    while trained.size + extra.size < target:
        drawn = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 2 * (target - trained.size - extra.size),
                             dtype=np.int64)
        extra = np.setdiff1d(np.union1d(extra, drawn), trained)
    extra = rng.permutation(extra)[:max(0, target - trained.size)]
    params = dict(model.arg_params)
    for name, value in tables.items():
        ids = np.concatenate([value.ids, extra])
        rows = np.concatenate([value.rows, rng.uniform(-0.01, 0.01, (extra.size, value.dim)).astype(np.float32)])
        order = np.argsort(ids, kind="stable")
        params[name] = RowSparse(ids[order], np.ascontiguousarray(rows[order]), value.shape)
    return SparkModel(model.symbol_json, params, model.aux_params, model.input_shape, model.label_name,
                      input_layout=model.input_layout)


def score_frame(spark, layout, rows):
    """A cached DataFrame (2 partitions) of ``rows`` packed planted rows in a ``features`` vector column."""
    from pyspark.ml.linalg import Vectors
    _, inputs, _ = planted_inputs(rows, seed=2)
    packed = layout.pack(inputs)
    frame = spark.createDataFrame([(i, Vectors.dense(row.tolist())) for i, row in enumerate(packed)],
                                  ["i", "features"]).repartition(2).cache()
    frame.count()
    return frame


def one_pass(model, frame):
    """Seconds to ``transform`` every row of ``frame`` into Spark's noop sink. Blocks on the Spark job."""
    start = time.perf_counter()
    model.transform(frame).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def how_shipped(inline, sharded, spark):
    """(how the inline model reaches the executors, which join the sharded one uses) for the section."""
    from sparkps.spark.model.join_scoring import broadcast_rows_for
    payload = len(inline.payload()["params"])
    inline_way = ("inside the UDF (%.1f MB)" if payload <= inline.inline_bytes else
                  "read from a model folder (%.1f MB)") % (payload / 2**20)
    joins = []
    for name in TABLES:
        entry = sharded.table_manifest[name]
        limit = sharded.broadcast_table_rows
        limit = broadcast_rows_for(entry["dim"]) if limit is None else limit
        joins.append("broadcast" if entry["rows"] <= limit else "sort-merge")
    join_way = joins[0] if len(set(joins)) == 1 else ", ".join(joins)
    return inline_way, join_way


def measure(spark, base, frame, size_mb, repeats, folder):
    """One size's record: ids per table, how each path ships, each path's timed passes (None: failed) and the
    error of a failed path."""
    inline = grown(base, size_mb)
    sharded = inline.with_sharded_tables(os.path.join(folder, "sharded-%g" % size_mb))
    record = {"size_mb": size_mb, "ids": int(sharded.table_manifest[TABLES[0]]["rows"]),
              "times": {"inline": [], "join": []}, "errors": {}}
    record["inline_way"], record["join_way"] = how_shipped(inline, sharded, spark)
    models = {"inline": inline, "join": sharded}

    def run(path, timed):
        if path in record["errors"]:
            return
        try:
            seconds = one_pass(models[path], frame)
        except Exception as e:                # a path that fails is reported, the others still run
            record["errors"][path] = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            print("  %s failed: %s" % (path, record["errors"][path]), flush=True)
            return
        if timed:
            record["times"][path].append(seconds)
        print("  %s %s %.2f s" % (path, "pass" if timed else "warm-up", seconds), flush=True)

    for path in ("inline", "join"):
        run(path, timed=False)
    for _ in range(repeats):
        for path in ("inline", "join"):
            run(path, timed=True)
    inline.unpersist()
    return record


def median_text(record, path):
    """A path's cell: its median pass, or what failed."""
    if path in record["errors"]:
        return "failed: %s" % record["errors"][path].replace("|", "/")
    return "%.2f s" % statistics.median(record["times"][path])


def render(run):
    """The section of a run record (pure function of it): every pass's time is in it."""
    return markdown(run["data"]["records"], argparse.Namespace(**run["data"]["options"]))


def markdown(records, args):
    lines = ["`transform` of %d packed FM rows (2 partitions, cached) into Spark's `noop` sink on local[2] "
             "(spark.driver.memory %s), the FM's two tables (dims 4 and 1) grown with random ids to the size of "
             "rows given. Each path ran one untimed warm-up pass per size, then the paths alternated; median of %d "
             "passes each." % (args.rows, args.driver_memory, args.repeats), "",
             "| rows of the tables | ids per table | inline | join | inline ships | join |",
             "|---|---|---|---|---|---|"]
    for r in records:
        lines.append("| %g MB | %d | %s | %s | %s | %s |" % (
            r["size_mb"], r["ids"], median_text(r, "inline"), median_text(r, "join"), r["inline_way"],
            r["join_way"]))
    return "\n".join(lines) + "\n"


def figures_of(records):
    found = {}
    for r in records:
        for path in ("inline", "join"):
            times = r["times"][path]
            found["%s_%gMB_s" % (path, r["size_mb"])] = report.lower(
                statistics.median(times) if times and path not in r["errors"] else None, "s")
    return found


def main(argv=None):
    args = parse_args(argv)
    run = report.Run("bench_inline_threshold", argv)
    spark = report.local_spark("bench_inline_threshold", args.driver_memory)
    records = []
    try:
        with tempfile.TemporaryDirectory(prefix="sparkps-inline-threshold-") as folder:
            spark.conf.set("spark.sparkps.modelDir", folder)      # an inline model above the UDF's limit goes here
            base, layout = trained_model()
            frame = score_frame(spark, layout, args.rows)
            for size_mb in args.sizes_mb:
                print("%g MB of rows" % size_mb, flush=True)
                records.append(measure(spark, base, frame, size_mb, args.repeats, folder))
            frame.unpersist()
    finally:
        spark.stop()
    print(run.publish(args, SECTION, {"options": report.options(args), "records": records}, render, doc=DOC))
    report.save_json(args, "bench_inline_threshold", figures_of(records))


if __name__ == "__main__":
    main()

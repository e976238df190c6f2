"""How far identical fits of ``SparkpsCTRClassifier`` land apart, by strategy: the same planted data, the same seed,
the same call ``--repeat`` times under ``dist_sync`` and under ``dist_async``; each fit's validation AUC (the last
epoch's, early stopping off) and the largest difference of any weight from the first fit's.

    python -m benchmarks.bench_same_seed [--rows 4000] [--repeat 3] [--write-docs]

``dist_sync`` applies every step once all workers pushed it, summing their gradients: with a seed its fits are the
same (held-out rows, rows dealt to each worker and their order, Dropout masks and initial values all follow the
seed). ``dist_async`` applies each push when it arrives, so which worker's gradient a step reads depends on the
timing of the processes; this measures how far that moves the model. ``--write-docs`` rewrites the section
``same_seed`` of docs/ctr.md. Blocks for a minute or two (one local[2] SparkSession, 2 workers and 1 server a fit).
"""
import argparse
import os
import sys

from benchmarks import report

DOC = os.path.join(report.ROOT, "docs", "ctr.md")
PLANTED = dict(num_fields=6, num_numeric=1, vocab=50, zipf=1.2, deep_scale=0.5, seed=21)
SETTINGS = dict(model="deepfm", embeddingDim=4, hiddenUnits=[16], numEpochs=4, batchSize=128, learningRate=0.01,
                validationFraction=0.2, earlyStoppingPatience=0, numWorkers=2, numServers=1)


def planted_frame(spark, rows):
    """``rows`` planted clicks as a DataFrame of 3 partitions (dealt to the 2 workers by the fit), and its columns."""
    from sparkps.ctr.synthetic import planted_ctr
    data = planted_ctr(rows, **PLANTED)
    cats = ["c%d" % f for f in range(PLANTED["num_fields"])]
    records = [(float(y), *[str(v) for v in c], float(x[0])) for y, c, x in
               zip(data.labels, data.categorical, data.numeric)]
    return spark.createDataFrame(records, ["click"] + cats + ["n0"]).repartition(3), cats


def fit_once(frame, cats, kvstore, seed):
    """``(validation AUC of the last epoch, {name: weights as a float64 array})`` of one fit."""
    import numpy as np

    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    model = SparkpsCTRClassifier(labelCol="click", categoricalCols=cats, numericCols=["n0"], kvstore=kvstore,
                                 seed=seed, **SETTINGS).fit(frame)
    weights = {}
    for name, value in model.spark_model.arg_params.items():
        if hasattr(value, "ids"):        # a sparse table: its rows in id order
            order = np.argsort(value.ids)
            weights[name] = (np.asarray(value.ids)[order], np.asarray(value.rows, np.float64)[order])
        else:
            weights[name] = (None, np.asarray(value, np.float64))
    return model.history[-1]["validation-auc"], weights


def largest_difference(first, other):
    """The largest absolute difference of any weight between two fits (inf when their tables hold other ids)."""
    import numpy as np
    worst = 0.0
    for name, (ids, values) in first.items():
        other_ids, other_values = other[name]
        if ids is not None and not np.array_equal(ids, other_ids):
            return float("inf")
        worst = max(worst, float(np.max(np.abs(values - other_values))) if values.size else 0.0)
    return worst


def measure(frame, cats, kvstore, repeat, seed):
    """One strategy's row: the AUC of each fit, their spread (max - min) and the largest weight difference."""
    runs = [fit_once(frame, cats, kvstore, seed) for _ in range(repeat)]
    aucs = [auc for auc, _ in runs]
    return {"kvstore": kvstore, "aucs": aucs, "spread": max(aucs) - min(aucs),
            "weights": max(largest_difference(runs[0][1], w) for _, w in runs[1:])}


SECTIONS = ("same_seed",)


def render(run):
    """The section of a run record (pure function of it): every fit's AUC is in it."""
    data = run["data"]
    return report_text(data["rows"], argparse.Namespace(**data["options"]), data["settings"], run["command"])


def report_text(rows, args, settings, command):
    lines = ["%d identical fits of `SparkpsCTRClassifier(model='deepfm', learningRate=0.01, seed=%d)` per strategy "
             "(2 workers, 1 server, %d epochs, a fifth held out, early stopping off) on %d planted rows; written by "
             "`%s`."
             % (args.repeat, args.seed, settings["numEpochs"], args.rows, command), "",
             "| kvstore | validation AUC of each fit | spread (max - min) | largest weight difference |",
             "|---|---|---|---|"]
    for row in rows:
        lines.append("| %s | %s | %.4f | %.2g |" % (row["kvstore"], ", ".join("%.4f" % a for a in row["aucs"]),
                                                   row["spread"], row["weights"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_same_seed", description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=4000, help="planted rows (default 4000)")
    parser.add_argument("--repeat", type=int, default=3, help="identical fits per strategy (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="the fits' seed (default 0)")
    parser.add_argument("--kvstores", default="dist_sync,dist_async", help="comma-separated strategies")
    report.add_output_args(parser)
    args = parser.parse_args(argv)
    if args.repeat < 2:
        parser.error("--repeat must be at least 2 (fits to compare)")
    run = report.Run("bench_same_seed", argv)
    spark = report.local_spark("bench_same_seed", "2g")
    try:
        frame, cats = planted_frame(spark, args.rows)
        frame.cache().count()
        rows = [measure(frame, cats, kv, args.repeat, args.seed) for kv in args.kvstores.split(",")]
    finally:
        spark.stop()
    data = {"options": report.options(args), "settings": SETTINGS, "rows": rows}
    print(run.publish(args, "same_seed", data, render, doc=DOC))
    report.save_json(args, "bench_same_seed", {
        "%s_auc_spread" % row["kvstore"]: report.lower(row["spread"], "AUC") for row in rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

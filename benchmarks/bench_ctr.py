"""CTR benchmark: sparkps FM and DeepFM against Spark MLlib's LogisticRegression and FMClassifier (one-hot
pipeline) on generated Criteo-shaped data, all in one run, plus a single-process numpy baseline of the same
FM math and dist_sync vs dist_async.

    python -m benchmarks.bench_ctr --rows 1000000 --write-docs    # the issue's size, written into docs/
    python -m benchmarks.bench_ctr --rows 20000 --epochs 2        # a reduced run on a loaded machine, printed only
    python -m benchmarks.bench_ctr --rows 20000 --epochs 1 --systems numpy,sparkps   # without MLlib

    python -m benchmarks.bench_ctr --rows 200000 --mllib-defaults     # MLlib at its defaults as well
    python -m benchmarks.bench_ctr --rows 80000 --torch-python /tmp/torchvenv/bin/python   # the PyTorch row too

Data: ``sparkps.ctr.synthetic.planted_ctr`` (13 numeric, 26 categorical fields, Zipf ids, planted
DeepFM labels), a quarter more rows held out for the test. Spark ``local[2]``, 2 workers + 2 servers.
MLlib's one-hot pipeline is fitted once, its output cached, and its time counted in (and shown beside) every
MLlib row; the heads run at the reduced iteration counts ``--lr-iter``/``--fm-iter`` and, with
``--mllib-defaults``, at their defaults (maxIter 100; LogisticRegression stops at convergence).
The PyTorch DeepFM row (``benchmarks/torch_deepfm.py``, torch a development extra) runs with ``--torch-python``
(default ``$SPARKPS_TORCH_PYTHON`` or this Python) when torch imports there; otherwise the run prints why it is
missing. *Per core* divides samples/s by the cores a row used (2 for Spark ``local[2]`` and PyTorch's 2 threads, 1
for the one-process rows), beside the published CPU figure of DeepRec's DeepFM (embedding 16, ~8.7k samples/s a core
on a 4-core Xeon in BF16: another model size, machine and precision, a scale only).
The table is printed; with ``--write-docs`` it replaces section ``bench_ctr`` of docs/benchmarks.md
(benchmarks/report.py), and docs/bench_ctr.png is redrawn. ``--json PATH`` writes every row's figures.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from benchmarks import report

ORDER = ["sparkps fm", "sparkps deepfm", "PyTorch deepfm", "MLlib LogisticRegression", "MLlib FMClassifier",
         "one process"]
SYSTEMS = "numpy,sparkps,mllib,torch"
DEEPREC_PER_CORE = 8700     # DeepRec DeepFM, embedding 16, samples/s a core, 4-core Xeon, BF16 (published)


def load():
    """The 1, 5 and 15 minute load averages (the machine is shared: figures move with it)."""
    return "%.1f %.1f %.1f" % os.getloadavg()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1000000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=2048)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--lr", type=float, default=0.02, help="Adam learning rate of the sparkps and numpy rows")
    p.add_argument("--lr-iter", type=int, default=20, help="MLlib LogisticRegression maxIter (L-BFGS)")
    p.add_argument("--fm-iter", type=int, default=20, help="MLlib FMClassifier maxIter (adamW, full batch)")
    p.add_argument("--mllib-defaults", nargs="?", const="lr,fm", default="",
                   help="also fit MLlib's LogisticRegression() ('lr') and FMClassifier() ('fm') at every default "
                   "(maxIter 100); alone: both. FMClassifier's 100 full passes take about 14 minutes at 200,000 rows")
    p.add_argument("--systems", default=SYSTEMS,
                   help="comma-separated rows to run: numpy, sparkps, mllib, torch (a development run may skip some)")
    p.add_argument("--torch-python", default=os.environ.get("SPARKPS_TORCH_PYTHON", sys.executable),
                   help="a Python with torch installed, for the PyTorch DeepFM row (default $SPARKPS_TORCH_PYTHON or "
                   "this one)")
    p.add_argument("--local-feedforward", action="store_true",
                   help="also time sparkps's FeedForward with the local kvstore in one process")
    return report.add_output_args(p).parse_args(argv)


def planted(args):
    from sparkps.ctr.synthetic import planted_ctr
    total = args.rows + args.rows // 4
    return planted_ctr(total, vocab=args.vocab, zipf=1.2, linear_scale=0.3, fm_scale=0.15, deep_scale=0.5, seed=7)


def frames(spark, data, rows):
    import pandas as pd
    table = pd.DataFrame({"label": data.labels.astype(np.float64)})
    for j, name in enumerate(data.numeric_names):
        table[name] = data.numeric[:, j]
    for j, name in enumerate(data.fields):
        table[name] = data.categorical[:, j]
    train = spark.createDataFrame(table.iloc[:rows]).repartition(2).cache()
    test = spark.createDataFrame(table.iloc[rows:]).cache()
    train.count(), test.count()
    return train, test


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def settings(args):
    return "%d epochs, batch %d, Adam lr %g, dim 4" % (args.epochs, args.batch_size, args.lr)


def sparkps_row(train, test, data, args, model, kvstore="dist_sync"):
    from pyspark.ml.evaluation import BinaryClassificationEvaluator

    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    clf = SparkpsCTRClassifier(categoricalCols=list(data.fields), numericCols=list(data.numeric_names),
                               model=model, embeddingDim=4, hiddenUnits=[32, 16],
                               numEpochs=args.epochs, batchSize=args.batch_size, numWorkers=2, numServers=2,
                               kvstore=kvstore, learningRate=args.lr)
    fitted, seconds = timed(lambda: clf.fit(train))
    auc, score_s = timed(lambda: BinaryClassificationEvaluator().evaluate(fitted.transform(test)))
    return {"system": "sparkps %s (%s)" % (model, kvstore), "auc": auc, "fit_s": seconds, "settings": settings(args),
            "predict_per_s": (args.rows // 4) / score_s,
            "samples_per_s": args.rows * args.epochs / seconds,
            "steady_per_s": (fitted.fit_timings or {}).get("steady_samples_per_s")}


def torch_row(data, args):
    """PyTorch's DeepFM on the same rows (benchmarks/torch_deepfm.py in ``--torch-python``), 2 threads; None, with
    the reason printed, where that Python has no torch."""
    import subprocess
    import tempfile

    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.numeric import NumericStats
    probe = subprocess.run([args.torch_python, "-c", "import torch"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("bench_ctr: no PyTorch row: %s cannot import torch (a development extra: install it into a separate "
              "environment and pass --torch-python)" % args.torch_python, flush=True)
        return None
    rows = args.rows
    hashed = hash_fields(data.fields, [data.categorical[:, j] for j in range(len(data.fields))])
    _, ids = np.unique(hashed, return_inverse=True)     # every distinct id its own row: no collisions
    numeric = NumericStats.fit(data.numeric[:rows], data.numeric_names, log=True).transform(data.numeric)
    with tempfile.TemporaryDirectory(prefix="bench-ctr-torch-") as folder:
        path = os.path.join(folder, "rows.npz")
        np.savez(path, ids=ids.reshape(hashed.shape).astype(np.int64), numeric=numeric.astype(np.float32),
                 labels=data.labels.astype(np.float32), train_rows=rows)
        done = subprocess.run([args.torch_python, os.path.join(report.ROOT, "benchmarks", "torch_deepfm.py"), path,
                               "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--lr",
                               str(args.lr), "--threads", "2"], capture_output=True, text=True)
    if done.returncode != 0:
        print("bench_ctr: no PyTorch row: torch_deepfm.py failed: %s" % done.stderr.strip()[-2000:], flush=True)
        return None
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {"system": "PyTorch deepfm (one process, 2 threads)", "auc": out["auc"], "fit_s": out["fit_s"],
            "settings": settings(args) + ", torch %s" % out["torch"], "samples_per_s": out["samples_per_s"],
            "cores": 2}


def mllib_heads(args):
    """(name, settings, estimator, maxIter) of every MLlib row: the reduced counts of earlier runs and, with
    ``--mllib-defaults``, each estimator as an MLlib user gets it (every param at its default)."""
    from pyspark.ml.classification import FMClassifier, LogisticRegression
    heads = [("MLlib LogisticRegression", "maxIter %d, regParam 1e-4" % args.lr_iter,
              LogisticRegression(maxIter=args.lr_iter, regParam=1e-4), args.lr_iter),
             ("MLlib FMClassifier", "maxIter %d, factorSize 4, stepSize 0.01" % args.fm_iter,
              FMClassifier(factorSize=4, maxIter=args.fm_iter, stepSize=0.01), args.fm_iter)]
    wanted = set(filter(None, args.mllib_defaults.split(",")))
    if wanted - {"lr", "fm"}:
        raise SystemExit("--mllib-defaults takes lr, fm or both, got %r" % args.mllib_defaults)
    if "lr" in wanted:
        heads.append(("MLlib LogisticRegression", "defaults: maxIter 100, regParam 0", LogisticRegression(), 100))
    if "fm" in wanted:
        heads.append(("MLlib FMClassifier", "defaults: maxIter 100, factorSize 8, stepSize 1.0", FMClassifier(), 100))
    return heads


def mllib_rows(train, test, data, args):
    """One-hot pipeline (StringIndexer, OneHotEncoder, Imputer, StandardScaler, VectorAssembler) fitted once and
    its output cached, as an MLlib user would for several models: its time (fit + the encoded rows cached) is
    shown apart and counted in every MLlib row's fit time; then each head is fitted on the encoded rows."""
    from pyspark.ml import Pipeline
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.feature import Imputer, OneHotEncoder, StandardScaler, StringIndexer, VectorAssembler
    cats, nums = list(data.fields), list(data.numeric_names)
    indexed, encoded = ["%s_idx" % c for c in cats], ["%s_vec" % c for c in cats]
    imputed = ["%s_imp" % c for c in nums]
    prep = Pipeline(stages=[StringIndexer(inputCols=cats, outputCols=indexed, handleInvalid="keep"),
                            OneHotEncoder(inputCols=indexed, outputCols=encoded, handleInvalid="keep"),
                            Imputer(inputCols=nums, outputCols=imputed),
                            VectorAssembler(inputCols=imputed, outputCol="numeric"),
                            StandardScaler(inputCol="numeric", outputCol="numeric_std"),
                            VectorAssembler(inputCols=encoded + ["numeric_std"], outputCol="features")])

    def encode():
        model = prep.fit(train)
        rows = model.transform(train).select("features", "label").cache()
        rows.count()
        return model, rows

    (prep_model, rows), prep_s = timed(encode)
    test_rows = prep_model.transform(test).select("features", "label").cache()
    try:
        for name, settings, head, passes in mllib_heads(args):
            fitted, seconds = timed(lambda: head.fit(rows))  # noqa: B023 - called at once
            auc = BinaryClassificationEvaluator().evaluate(fitted.transform(test_rows))
            # prediction from the raw test rows, as sparkps's: the one-hot pipeline, then the head
            scoring = fitted.transform(prep_model.transform(test))
            score_s = timed(lambda: BinaryClassificationEvaluator().evaluate(scoring))[1]  # noqa: B023 - at once
            total = prep_s + seconds
            done = int(getattr(fitted.summary, "totalIterations", passes)) if getattr(fitted, "hasSummary", False) \
                else passes         # L-BFGS stops early once it converges
            yield {"system": name + " (one-hot pipeline)", "settings": settings, "auc": auc, "fit_s": total,
                   "pipeline_s": prep_s, "samples_per_s": args.rows * done / total, "iterations": done,
                   "predict_per_s": (args.rows // 4) / score_s}
    finally:
        rows.unpersist()
        test_rows.unpersist()


def numpy_fm_row(data, args):
    """The same FM network in one process (FeedForward, in-place updates, numpy), one BLAS thread."""
    from threadpoolctl import threadpool_limits

    import sparkps.nets as nets
    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.numeric import NumericStats
    from sparkps.metric.ctr import binary_auc
    from sparkps.nets.ctr_fit import fit_ctr, predict_ctr
    rows = args.rows
    ids = hash_fields(data.fields, [data.categorical[:, j] for j in range(len(data.fields))])
    numeric = NumericStats.fit(data.numeric[:rows], data.numeric_names, log=True).transform(data.numeric)
    spec = nets.FeatureSpec(categorical=data.fields, numeric=data.numeric_names, embedding_dim=4)
    inputs = spec.inputs(ids, numeric)
    with threadpool_limits(1):
        fitted, seconds = timed(lambda: fit_ctr(nets.build("fm", spec), {k: v[:rows] for k, v in inputs.items()},
                                                data.labels[:rows], num_epoch=args.epochs,
                                                batch_size=args.batch_size, learning_rate=args.lr))
        auc = binary_auc(data.labels[rows:], predict_ctr(fitted, {k: v[rows:] for k, v in inputs.items()}))
    return {"system": "one process, sparkps FM with the local kvstore (same network)", "auc": auc, "fit_s": seconds,
            "samples_per_s": rows * args.epochs / seconds}


def numpy_fm_loop(data, args, dim=4, buckets=1 << 22, seed=0):
    """The FM math written by hand in numpy, one process, one BLAS thread: per batch the unique ids (bucketed
    into a dense numpy table: no id index to maintain, which favours this baseline), gather, forward, backward,
    gradients summed per unique id and lazy Adam on those rows only; the numeric part and bias dense Adam."""
    from threadpoolctl import threadpool_limits

    from sparkps.ctr.hashing import bucket, hash_fields
    from sparkps.ctr.numeric import NumericStats
    from sparkps.metric.ctr import binary_auc
    rows, lr, b1, b2, eps = args.rows, args.lr, 0.9, 0.999, 1e-8
    ids = bucket(hash_fields(data.fields, [data.categorical[:, j] for j in range(len(data.fields))]), buckets)
    numeric = NumericStats.fit(data.numeric[:rows], data.numeric_names, log=True).transform(data.numeric)
    numeric = numeric.astype(np.float32)
    rng = np.random.default_rng(seed)
    table = (rng.uniform(-0.01, 0.01, (buckets, dim + 1))).astype(np.float32)    # [v (dim) | w]
    m, v, t = np.zeros_like(table), np.zeros_like(table), np.zeros(buckets, np.int64)
    dense = np.zeros(numeric.shape[1] + 1, np.float32)                            # [u | bias]
    dm, dv = np.zeros_like(dense), np.zeros_like(dense)
    labels = data.labels.astype(np.float32)

    def forward(batch_ids, x):
        e = table[batch_ids]                                      # (B, F, dim + 1)
        s = e[..., :dim].sum(axis=1)
        fm = 0.5 * (s * s - (e[..., :dim] ** 2).sum(axis=1)).sum(axis=1)
        logit = e[..., dim].sum(axis=1) + x @ dense[:-1] + dense[-1] + fm
        return e, s, 1.0 / (1.0 + np.exp(-logit))

    def train():
        step = 0
        for _ in range(args.epochs):
            order = rng.permutation(rows)
            for start in range(0, rows - args.batch_size + 1, args.batch_size):
                take = order[start:start + args.batch_size]
                unique, inverse = np.unique(ids[take], return_inverse=True)
                local = inverse.reshape(len(take), -1)
                e, s, p = forward(unique[local], numeric[take])    # (gathers the batch's rows: B x F)
                g = ((p - labels[take]) / len(take)).astype(np.float32)
                grad_e = np.empty_like(e)
                grad_e[..., :dim] = g[:, None, None] * (s[:, None, :] - e[..., :dim])
                grad_e[..., dim] = g[:, None]
                flat = local.reshape(-1)
                grad = np.stack([np.bincount(flat, grad_e[..., c].reshape(-1), unique.size)
                                 for c in range(dim + 1)], axis=1).astype(np.float32)
                t[unique] += 1
                tu = t[unique][:, None]
                mu = b1 * m[unique] + (1 - b1) * grad
                vu = b2 * v[unique] + (1 - b2) * grad * grad
                m[unique], v[unique] = mu, vu
                table[unique] -= lr * (mu / (1 - b1 ** tu)) / (np.sqrt(vu / (1 - b2 ** tu)) + eps)
                step += 1
                gd = np.append(numeric[take].T @ g, g.sum())
                dm[:] = b1 * dm + (1 - b1) * gd
                dv[:] = b2 * dv + (1 - b2) * gd * gd
                dense[:] -= lr * (dm / (1 - b1 ** step)) / (np.sqrt(dv / (1 - b2 ** step)) + eps)

    with threadpool_limits(1):
        _, seconds = timed(train)
        p = np.concatenate([forward(ids[i:i + 4096], numeric[i:i + 4096])[2]
                            for i in range(rows, len(labels), 4096)])
    return {"system": "one process, hand-written numpy FM loop", "auc": binary_auc(data.labels[rows:], p),
            "settings": settings(args),
            "fit_s": seconds, "samples_per_s": rows * args.epochs / seconds}


def command(args):
    extra = (" --mllib-defaults %s" % args.mllib_defaults if args.mllib_defaults else "") + \
        ("" if args.systems == SYSTEMS else " --systems " + args.systems)
    return report.command("bench_ctr", "--rows %d --epochs %d --batch-size %d --vocab %d --lr %g --lr-iter %d "
                          "--fm-iter %d%s" % (args.rows, args.epochs, args.batch_size, args.vocab, args.lr,
                                              args.lr_iter, args.fm_iter, extra))


def table(results, args, planted_auc):
    lines = ["## CTR: sparkps FM/DeepFM vs MLlib (benchmarks/bench_ctr.py)", "",
             "Command: `%s`; planted DeepFM data, %d test rows, Spark local[2], 2 workers + 2 servers (one untimed "
             "warm-up fit first); planted model's test AUC %.4f. Fit time is `fit()` on the cached training "
             "DataFrame to the trained model; for MLlib it includes the one-hot pipeline (fitted once, its output "
             "cached: its share in brackets). *Predict rows/s*: the test rows scored from their raw columns and the "
             "AUC computed over them (`transform` + BinaryClassificationEvaluator; MLlib: its one-hot pipeline, then "
             "the head)." % (command(args), args.rows // 4, planted_auc), "",
             "| system | settings | test AUC | fit s | samples/s (whole fit) | samples/s (training steps only) "
             "| per core (whole fit) | predict rows/s |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        steady = r.get("steady_per_s")
        fit = "%.1f" % r["fit_s"] + (" (%.1f)" % r["pipeline_s"] if r.get("pipeline_s") else "")
        predict = "%.0f" % r["predict_per_s"] if r.get("predict_per_s") else ""
        lines.append("| %s | %s | %.4f | %s | %.0f | %s | %.0f | %s |" % (
            r["system"], r.get("settings", ""), r["auc"], fit, r["samples_per_s"], "%.0f" % steady if steady else "",
            r["samples_per_s"] / cores(r), predict))
    lines += [""] + goals(results, args) + ["", "Machine load at the start and end of the run (`uptime`): %s / %s."
                                            % (args.load_start, load()), "", "![CTR benchmark](bench_ctr.png)"]
    return "\n".join(lines)


def cores(row):
    """The cores a row trained on: Spark local[2] and PyTorch's 2 threads use 2, the one-process rows 1."""
    return row.get("cores") or (1 if row["system"].startswith("one process") else 2)


def goals(results, args):
    """The issue's goals, each against this run's rows (lines of text; a goal whose rows are missing is skipped)."""
    lines = []
    mllib = [r for r in results if r["system"].startswith("MLlib")]
    best = max(mllib, key=lambda r: r["auc"]) if mllib else None
    fastest = min(mllib, key=lambda r: r["fit_s"]) if mllib else None
    for r in results:
        if best and r["system"].startswith("sparkps") and "dist_sync" in r["system"]:
            lines.append("- %s: AUC %+.4f vs MLlib's best (%s, %s: %.4f in %.1f s); fit %.1f× faster than it, %.1f× "
                         "faster than MLlib's fastest row (%s, %s: %.1f s) (goals: AUC >= MLlib's best, >= 10× "
                         "faster)." % (r["system"], r["auc"] - best["auc"], best["system"], best["settings"],
                                       best["auc"], best["fit_s"], best["fit_s"] / r["fit_s"], fastest["fit_s"]
                                       / r["fit_s"], fastest["system"], fastest["settings"], fastest["fit_s"]))
    logistic = [r for r in mllib if r["system"].startswith("MLlib LogisticRegression")]
    goal = 3.0 if args.rows >= 1000000 else 2.0
    for r in results:
        if logistic and r["system"].startswith("sparkps") and "dist_sync" in r["system"]:
            lr_row = min(logistic, key=lambda x: x["fit_s"])
            lines.append("- %s against MLlib LogisticRegression with its one-hot pipeline (%s): fit %.2f× faster "
                         "(goal >= %g× at %d rows), AUC %.4f vs %.4f (goal: >=)." % (
                             r["system"], lr_row["settings"], lr_row["fit_s"] / r["fit_s"], goal, args.rows,
                             r["auc"], lr_row["auc"]))
    for r in results:
        if r["system"].startswith(("sparkps deepfm", "PyTorch deepfm")):
            lines.append("- %s: %.0f samples/s a core over the whole fit%s, beside DeepRec's published DeepFM "
                         "(embedding 16, 4-core Xeon, BF16): ~%d a core." % (
                             r["system"], r["samples_per_s"] / cores(r),
                             ", %.0f over its training steps" % (r["steady_per_s"] / cores(r))
                             if r.get("steady_per_s") else "", DEEPREC_PER_CORE))
    sync = next((r for r in results if r["system"] == "sparkps fm (dist_sync)"), None)
    asyn = next((r for r in results if r["system"] == "sparkps fm (dist_async)"), None)
    if sync and asyn:
        lines.append("- dist_sync vs dist_async FM after %d epochs: AUC %.4f vs %.4f." % (args.epochs, sync["auc"],
                                                                                         asyn["auc"]))
    numpy_row = next((r for r in results if r["system"].startswith("one process, hand-written")), None)
    if sync and numpy_row:
        lines.append("- sparkps FM (2 workers + 2 servers) samples/s over the one-process numpy FM loop: %.2f over the "
                     "whole fit (Spark start-up, hashing, registration included), %.2f over its training steps "
                     "(goal >= 0.5)." % (sync["samples_per_s"] / numpy_row["samples_per_s"],
                                        (sync.get("steady_per_s") or 0.0) / numpy_row["samples_per_s"]))
    lines.append("- MLlib samples/s count its passes over the training rows (maxIter, or fewer where L-BFGS "
                 "converged).")
    return lines


def plot(results, path):
    """Test AUC and fit seconds of every system, side by side (docs/bench_ctr.png)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [r["system"].replace(" (one-hot pipeline)", "").replace("one process, ", "")
             + (" [%s]" % r["settings"].split(",")[0] if r["system"].startswith("MLlib") else "") for r in results]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    left.barh(names, [r["auc"] for r in results], color="tab:blue")
    left.set_xlim(min(r["auc"] for r in results) - 0.02, max(r["auc"] for r in results) + 0.01)
    left.set_xlabel("test AUC")
    right.barh(names, [r["fit_s"] for r in results], color="tab:orange")
    right.set_xlabel("fit seconds")
    right.set_yticks([])
    fig.suptitle("CTR benchmark (benchmarks/bench_ctr.py)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def figures(results):
    """The run's figures for ``--json``, per row: fit seconds, test AUC and samples/s."""
    out = {}
    for r in results:
        key = r["system"] + (" [%s]" % r["settings"] if r["system"].startswith("MLlib") else "")
        out.update({key + " fit": report.lower(r["fit_s"], "s"), key + " auc": report.higher(r["auc"], "auc"),
                    key + " samples/s": report.higher(r["samples_per_s"], "samples/s")})
        if r.get("steady_per_s"):
            out[key + " steady samples/s"] = report.higher(r["steady_per_s"], "samples/s")
    return out


def main(argv=None):
    args = parse_args(argv)
    args.load_start = load()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from sparkps.metric.ctr import binary_auc
    data = planted(args)
    planted_auc = binary_auc(data.labels[args.rows:], data.probability[args.rows:])
    spark = (SparkSession.builder.master("local[2]").appName("bench_ctr")
             .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "8g")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    results = []

    def done(row):       # each row printed as it comes: a run cut short still tells what it measured
        results.append(row)
        print("bench_ctr row: %s" % json.dumps(row), flush=True)

    systems = set(args.systems.split(","))
    try:
        if "numpy" in systems:
            done(numpy_fm_loop(data, args))
        if args.local_feedforward:
            done(numpy_fm_row(data, args))
        train, test = frames(spark, data, args.rows)
        if "sparkps" in systems:
            warm = argparse.Namespace(**dict(vars(args), epochs=1))
            sparkps_row(train.limit(2000), test.limit(100), data, warm, "fm")   # untimed: first start-up
            for model, kvstore in (("fm", "dist_sync"), ("deepfm", "dist_sync"), ("fm", "dist_async")):
                done(sparkps_row(train, test, data, args, model, kvstore))
        if "torch" in systems:
            row = torch_row(data, args)
            if row is not None:
                done(row)
        if "mllib" in systems:
            for row in mllib_rows(train, test, data, args):
                done(row)
    finally:
        spark.stop()
    results.sort(key=lambda r: ORDER.index(r["system"].split(" (")[0].split(",")[0]))     # stable: settings kept
    text = table(results, args, planted_auc)
    print(text)
    if args.write_docs:
        plot(results, os.path.join(report.ROOT, "docs", "bench_ctr.png"))
        report.write_section("bench_ctr", text)
    report.save_json(args, "bench_ctr", figures(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

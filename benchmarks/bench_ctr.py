"""CTR benchmark: sparkps FM and DeepFM against Spark MLlib's LogisticRegression and FMClassifier (one-hot
pipeline) and PyTorch's DeepFM on generated Criteo-shaped data, all in one run, on even terms, plus a
single-process numpy baseline of the same FM math and dist_sync vs dist_async.

    python -m benchmarks.bench_ctr --rows 200000 --write-docs     # written into docs/
    python -m benchmarks.bench_ctr --rows 20000 --epochs 2        # a reduced run on a loaded machine, printed only
    python -m benchmarks.bench_ctr --rows 20000 --epochs 1 --systems numpy,sparkps   # without MLlib
    python -m benchmarks.bench_ctr --rows 20000 --candidates 1    # every system at its grid's centre, untuned
    python -m benchmarks.bench_ctr --rows 80000 --torch-python /tmp/torchvenv/bin/python   # the PyTorch rows too

Data: ``sparkps.ctr.synthetic.planted_ctr`` (13 numeric, 26 categorical fields, Zipf ids, planted DeepFM labels),
``--rows`` training rows and a quarter as many test rows. The last tenth of the training rows are the validation
rows; every system trains on the others (the *fit rows*) and is scored on the same validation and test rows.

Even terms:

* **Warm-up**: every system gets one untimed warm-up fit on :data:`WARMUP_ROWS` fit rows before its timed fits
  (sparkps: an FM fit; MLlib: its one-hot pipeline and each head; PyTorch: a throwaway model in each of its
  processes; the numpy loop: one pass).
* **Tuning budget**: every system tries ``--candidates`` settings of one knob, a geometric grid of ratio
  ``--grid-ratio`` centred on its base value: the Adam learning rate (``--lr``) for sparkps and PyTorch, regParam
  (``--lr-reg``) for MLlib's LogisticRegression (L-BFGS has no step size), stepSize (``--fm-step``) for MLlib's
  FMClassifier. Each candidate is fitted on the fit rows; the one with the best validation AUC is kept and its
  test AUC, fit time and prediction speed are reported (the tuning table lists every candidate). ``--candidates
  1``: every system untuned at its grid's centre. The dist_async FM row and the numpy loop use the learning rate
  picked for the dist_sync FM row.
* **Regularisation**: sparkps's estimator defaults (``embeddingL2`` 1e-4 on the embedding rows a batch reads,
  dropout 0.5 on DeepFM's deep part); early stopping is off (``validationFraction`` 0: the validation rows serve
  every system's tuning instead). PyTorch runs twice (``--torch-embeddings``): ``dense`` (``nn.Embedding`` under
  Adam, every row updated at every step, no regularisation) and ``sparse`` (``nn.Embedding(sparse=True)`` under
  SparseAdam, Adam for the dense part, sparkps's L2 and dropout); see ``benchmarks/torch_deepfm.py``. The numpy
  FM loop applies sparkps's L2 to the rows a batch reads.

* **Rounds**: the race runs ``--repeats`` rounds (at least 3), each running every system once in the same order
  (A B A B ...), so a drift of the machine's load falls on every system alike; the tables give the median over the
  rounds with the fit times' spread, and a goal's ratio is the median of the rounds' ratios with their spread (the
  line says when the spread crosses the goal).
* **Iterations**: MLlib's heads get sparkps's budget in optimizer updates, ``--epochs`` times the fit rows' batches
  of ``--batch-size`` (``--lr-iter``/``--fm-iter`` override it): FMClassifier on mini-batches of the same share of
  the rows (``miniBatchFraction``), LogisticRegression's L-BFGS at most that many (it stops once converged).

MLlib's one-hot pipeline is fitted once on the fit rows, its output cached, and its time counted in (and shown
beside) every MLlib row. The PyTorch rows
(torch a development extra) run with ``--torch-python`` (default ``$SPARKPS_TORCH_PYTHON`` or this Python) when
torch imports there; otherwise the run prints why they are missing. *Per core* divides samples/s by the cores a
row used (2 for Spark ``local[2]`` and PyTorch's 2 threads, 1 for the one-process rows), beside the published CPU
figure of DeepRec's DeepFM (embedding 16, ~8.7k samples/s a core on a 4-core Xeon in BF16: another model size,
machine and precision, a scale only).
The tables are printed; with ``--write-docs`` they replace section ``bench_ctr`` of docs/benchmarks.md
(benchmarks/report.py), and docs/bench_ctr.png is redrawn. ``--json PATH`` writes every row's figures.
"""
import argparse
import json
import os
import sys
import time
from typing import NamedTuple

import numpy as np

from benchmarks import report

ORDER = ["sparkps fm", "sparkps deepfm", "PyTorch deepfm", "MLlib LogisticRegression", "MLlib FMClassifier",
         "one process"]
SYSTEMS = "numpy,sparkps,mllib,torch"
DEEPREC_PER_CORE = 8700     # DeepRec DeepFM, embedding 16, samples/s a core, 4-core Xeon, BF16 (published)
WARMUP_ROWS = 2000          # rows of every system's untimed warm-up fit
EMBEDDINGS = ("dense", "sparse")


class Split(NamedTuple):
    """Row ranges of the generated data: [0, fit) the fit rows, [fit, train) the validation rows, [train, total)
    the test rows."""
    fit: int
    train: int
    total: int

    @property
    def valid(self):
        return self.train - self.fit

    @property
    def test(self):
        return self.total - self.train


def split_rows(rows):
    """The :class:`Split` of ``rows`` training rows: the last tenth of them validation rows, a quarter as many
    test rows after them."""
    if rows < 20:
        raise ValueError("--rows must be at least 20 (a tenth of them validate), got %d" % rows)
    valid = rows // 10
    return Split(rows - valid, rows, rows + rows // 4)


def grid(centre, candidates, ratio):
    """``candidates`` (odd) values of a geometric grid of ``ratio`` centred on ``centre``, ascending."""
    if candidates < 1 or candidates % 2 == 0:
        raise ValueError("--candidates must be an odd number >= 1 (a grid centred on the base value), got %d"
                         % candidates)
    if not ratio > 1.0 or not centre > 0.0:
        raise ValueError("a grid needs a centre > 0 and --grid-ratio > 1, got %r and %r" % (centre, ratio))
    half = candidates // 2
    return [float("%.6g" % (centre * ratio ** k)) for k in range(-half, half + 1)]


def pick(runs):
    """The run with the best validation AUC (the first of equals): how every system's candidate is chosen."""
    if not runs:
        raise ValueError("no candidate runs to pick from")
    return max(runs, key=lambda r: (r["valid_auc"], -runs.index(r)))


def tuned(runs, knob):
    """The picked run of ``runs`` (candidates of one system), carrying every candidate's (setting, validation AUC,
    fit seconds) and their total fit seconds for the tuning table."""
    best = pick(runs)
    return dict(best, knob=knob, candidates=[(r["setting"], r["valid_auc"], r["fit_s"]) for r in runs],
                tuning_s=sum(r["fit_s"] for r in runs))


SECTIONS = ("bench_ctr",)


def render(run):
    """The section of a run record (pure function of it): every round's rows are in it."""
    data = run["data"]
    options = dict(data["options"])
    return table(ranked(combine(data["rounds"])), argparse.Namespace(**options), data["planted_auc"], run)


def ranked(results):
    """``results`` in the table's order of systems (stable: a system's settings keep their order)."""
    return sorted(results, key=lambda r: ORDER.index(r["system"].split(" (")[0].split(",")[0]))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1000000, help="training rows (a tenth of them validation rows)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=2048)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--lr", type=float, default=0.02,
                   help="centre of the Adam learning-rate grid of the sparkps and PyTorch rows")
    p.add_argument("--lr-iter", type=int, default=None,
                   help="MLlib LogisticRegression maxIter (L-BFGS; default: sparkps's optimizer steps, --epochs x "
                   "the fit rows' batches of --batch-size; it stops earlier once converged)")
    p.add_argument("--fm-iter", type=int, default=None,
                   help="MLlib FMClassifier maxIter (adamW on mini-batches of --batch-size rows, miniBatchFraction "
                   "batch / fit rows; default: sparkps's optimizer steps, --epochs x the fit rows' batches)")
    p.add_argument("--repeats", type=int, default=3,
                   help="rounds of the race: each round runs every system once, in alternation (ABAB...); the "
                   "tables give medians and the min-max spread (at least 3)")
    p.add_argument("--lr-reg", type=float, default=1e-4, help="centre of MLlib LogisticRegression's regParam grid")
    p.add_argument("--fm-step", type=float, default=0.25,
                   help="centre of MLlib FMClassifier's stepSize grid (at ratio 4 the grid holds its default 1.0)")
    p.add_argument("--candidates", type=int, default=3,
                   help="settings each system tries, picked by validation AUC (odd; 1: untuned, the grid's centre)")
    p.add_argument("--grid-ratio", type=float, default=4.0, help="ratio between neighbouring grid settings")
    p.add_argument("--systems", default=SYSTEMS,
                   help="comma-separated rows to run: numpy, sparkps, mllib, torch (a development run may skip some)")
    p.add_argument("--torch-python", default=os.environ.get("SPARKPS_TORCH_PYTHON", sys.executable),
                   help="a Python with torch installed, for the PyTorch DeepFM rows (default $SPARKPS_TORCH_PYTHON or "
                   "this one)")
    p.add_argument("--torch-embeddings", default=",".join(EMBEDDINGS),
                   help="PyTorch variants: dense, sparse or both (default both)")
    p.add_argument("--local-feedforward", action="store_true",
                   help="also time sparkps's FeedForward with the local kvstore in one process")
    args = report.add_output_args(p).parse_args(argv)
    args.torch_embeddings = [e for e in args.torch_embeddings.split(",") if e]
    if args.repeats < 3:
        p.error("--repeats must be at least 3 (a median and its spread), got %d" % args.repeats)
    if args.rows >= 20:
        steps = args.epochs * -(-split_rows(args.rows).fit // args.batch_size)      # sparkps's optimizer steps
        args.lr_iter = args.lr_iter or steps
        args.fm_iter = args.fm_iter or steps
    if set(args.torch_embeddings) - set(EMBEDDINGS):
        p.error("--torch-embeddings takes dense, sparse or both, got %s" % ",".join(args.torch_embeddings))
    if set(args.systems.split(",")) - set(SYSTEMS.split(",")):
        p.error("--systems takes some of %s, got %s" % (SYSTEMS, args.systems))
    try:
        split_rows(args.rows)
        for centre in (args.lr, args.lr_reg, args.fm_step):
            grid(centre, args.candidates, args.grid_ratio)
    except ValueError as e:
        p.error(str(e))
    return args


def planted(args):
    from sparkps.ctr.synthetic import planted_ctr
    return planted_ctr(split_rows(args.rows).total, vocab=args.vocab, zipf=1.2, linear_scale=0.3, fm_scale=0.15,
                       deep_scale=0.5, seed=7)


def frames(spark, data, split):
    """(fit, validation, test) DataFrames of the raw columns, cached."""
    import pandas as pd
    table = pd.DataFrame({"label": data.labels.astype(np.float64)})
    for j, name in enumerate(data.numeric_names):
        table[name] = data.numeric[:, j]
    for j, name in enumerate(data.fields):
        table[name] = data.categorical[:, j]
    fit = spark.createDataFrame(table.iloc[:split.fit]).repartition(2).cache()
    valid = spark.createDataFrame(table.iloc[split.fit:split.train]).cache()
    test = spark.createDataFrame(table.iloc[split.train:]).cache()
    fit.count(), valid.count(), test.count()
    return fit, valid, test


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def settings(args, lr):
    return "%d epochs, batch %d, Adam lr %g, dim 4" % (args.epochs, args.batch_size, lr)


def evaluate(scored):
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    return BinaryClassificationEvaluator().evaluate(scored)


def sparkps_fit(frames, data, args, model, lr, kvstore="dist_sync", epochs=None):
    """One SparkpsCTRClassifier fit on the fit rows (estimator defaults but for the benchmark's size settings and
    ``validationFraction`` 0: no early stopping), scored on the validation rows; the returned run's ``score``
    scores the test rows. Blocks on the fit."""
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    fit, valid, test = frames
    epochs = epochs or args.epochs
    clf = SparkpsCTRClassifier(categoricalCols=list(data.fields), numericCols=list(data.numeric_names),
                               model=model, embeddingDim=4, hiddenUnits=[32, 16], numEpochs=epochs,
                               batchSize=args.batch_size, numWorkers=2, numServers=2, kvstore=kvstore,
                               learningRate=lr, validationFraction=0.0)
    fitted, seconds = timed(lambda: clf.fit(fit))
    rows = split_rows(args.rows).fit

    def score():
        auc, score_s = timed(lambda: evaluate(fitted.transform(test)))
        return {"auc": auc, "predict_per_s": split_rows(args.rows).test / score_s}
    run = {"system": "sparkps %s (%s)" % (model, kvstore), "setting": lr, "settings": settings(args, lr),
           "fit_s": seconds, "valid_auc": evaluate(fitted.transform(valid)), "samples_per_s": rows * epochs / seconds,
           "steady_per_s": (fitted.fit_timings or {}).get("steady_samples_per_s"), "score": score}
    print("bench_ctr candidate: %s lr %g: validation AUC %.4f, fit %.1f s" % (
        run["system"], lr, run["valid_auc"], seconds), flush=True)
    return run


def scored(run):
    """``run`` with its test figures (its ``score`` called) and without the callable."""
    out = {k: v for k, v in run.items() if k != "score"}
    out.update(run["score"]())
    return out


def sparkps_rows(frames, data, args):
    """The sparkps rows: an untimed FM warm-up fit, then FM and DeepFM (dist_sync) each tuned over the learning-rate
    grid, then FM under dist_async at the FM's picked rate."""
    fit, valid, test = frames
    warm = argparse.Namespace(**dict(vars(args), epochs=1))
    sparkps_fit((fit.limit(WARMUP_ROWS), valid.limit(100), test.limit(100)), data, warm, "fm", args.lr)
    lrs = grid(args.lr, args.candidates, args.grid_ratio)
    picked = {}
    for model in ("fm", "deepfm"):
        row = scored(tuned([sparkps_fit(frames, data, args, model, lr) for lr in lrs], "Adam learning rate"))
        picked[model] = row["setting"]
        yield row
    yield scored(dict(sparkps_fit(frames, data, args, "fm", picked["fm"], kvstore="dist_async"),
                      note="learning rate of sparkps fm (dist_sync)"))


def torch_rows(data, split, args):
    """PyTorch's DeepFM on the same rows (benchmarks/torch_deepfm.py in ``--torch-python``), 2 threads, each
    variant of ``--torch-embeddings`` tuned over the learning-rate grid (one process per candidate, each with its
    untimed warm-up); nothing, with the reason printed, where that Python has no torch."""
    import subprocess
    import tempfile

    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.numeric import NumericStats
    from sparkps.nets.ctr_defaults import CTR_DEFAULTS
    probe = subprocess.run([args.torch_python, "-c", "import torch"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("bench_ctr: no PyTorch rows: %s cannot import torch (a development extra: install it into a separate "
              "environment and pass --torch-python)" % args.torch_python, flush=True)
        return
    hashed = hash_fields(data.fields, [data.categorical[:, j] for j in range(len(data.fields))])
    _, ids = np.unique(hashed, return_inverse=True)     # every distinct id its own row: no collisions
    numeric = NumericStats.fit(data.numeric[:split.fit], data.numeric_names, log=True).transform(data.numeric)
    regularised = ["--dropout", str(CTR_DEFAULTS["dropout"]), "--embedding-l2", str(CTR_DEFAULTS["embeddingL2"])]
    with tempfile.TemporaryDirectory(prefix="bench-ctr-torch-") as folder:
        path = os.path.join(folder, "rows.npz")
        np.savez(path, ids=ids.reshape(hashed.shape).astype(np.int64), numeric=numeric.astype(np.float32),
                 labels=data.labels.astype(np.float32), train_rows=split.fit, valid_rows=split.valid)
        for embeddings in args.torch_embeddings:
            runs = []
            for lr in grid(args.lr, args.candidates, args.grid_ratio):
                done = subprocess.run(
                    [args.torch_python, os.path.join(report.ROOT, "benchmarks", "torch_deepfm.py"), path,
                     "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--lr", str(lr),
                     "--threads", "2", "--embeddings", embeddings, "--warmup-rows", str(WARMUP_ROWS)]
                    + (regularised if embeddings == "sparse" else []), capture_output=True, text=True)
                if done.returncode != 0:
                    print("bench_ctr: no PyTorch %s row: torch_deepfm.py failed: %s" % (
                        embeddings, done.stderr.strip()[-2000:]), flush=True)
                    break
                out = json.loads(done.stdout.strip().splitlines()[-1])
                how = ("sparse Embedding, SparseAdam + Adam, dropout %g, L2 %g on read rows" % (
                    CTR_DEFAULTS["dropout"], CTR_DEFAULTS["embeddingL2"]) if embeddings == "sparse"
                    else "dense Embedding, Adam on every row, no regularisation")
                runs.append({"system": "PyTorch deepfm (%s; one process, 2 threads)" % how, "setting": lr,
                             "settings": settings(args, lr) + ", torch %s" % out["torch"], "auc": out["auc"],
                             "valid_auc": out["valid_auc"], "fit_s": out["fit_s"],
                             "samples_per_s": out["samples_per_s"], "cores": 2})
                print("bench_ctr candidate: PyTorch %s lr %g: validation AUC %.4f, fit %.1f s" % (
                    embeddings, lr, out["valid_auc"], out["fit_s"]), flush=True)
            else:
                yield tuned(runs, "Adam learning rate")


def mllib_heads(args):
    """(name, knob, [(setting, settings text, estimator)], maxIter) of every MLlib row: each head over its grid."""
    from pyspark.ml.classification import FMClassifier, LogisticRegression
    regs = grid(args.lr_reg, args.candidates, args.grid_ratio)
    steps = grid(args.fm_step, args.candidates, args.grid_ratio)
    fraction = min(1.0, args.batch_size / split_rows(args.rows).fit)     # sparkps's batch, as a share of the rows
    return [("MLlib LogisticRegression", "regParam",
             [(r, "maxIter %d, regParam %g" % (args.lr_iter, r), LogisticRegression(maxIter=args.lr_iter, regParam=r))
              for r in regs], args.lr_iter),
            ("MLlib FMClassifier", "stepSize",
             [(s, "maxIter %d, factorSize 4, miniBatchFraction %.3g, stepSize %g" % (args.fm_iter, fraction, s),
               FMClassifier(factorSize=4, maxIter=args.fm_iter, stepSize=s, miniBatchFraction=fraction))
              for s in steps], args.fm_iter)]


def one_hot_pipeline(data):
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import Imputer, OneHotEncoder, StandardScaler, StringIndexer, VectorAssembler
    cats, nums = list(data.fields), list(data.numeric_names)
    indexed, encoded = ["%s_idx" % c for c in cats], ["%s_vec" % c for c in cats]
    imputed = ["%s_imp" % c for c in nums]
    return Pipeline(stages=[StringIndexer(inputCols=cats, outputCols=indexed, handleInvalid="keep"),
                            OneHotEncoder(inputCols=indexed, outputCols=encoded, handleInvalid="keep"),
                            Imputer(inputCols=nums, outputCols=imputed),
                            VectorAssembler(inputCols=imputed, outputCol="numeric"),
                            StandardScaler(inputCol="numeric", outputCol="numeric_std"),
                            VectorAssembler(inputCols=encoded + ["numeric_std"], outputCol="features")])


def mllib_rows(frames, data, split, args):
    """One-hot pipeline (StringIndexer, OneHotEncoder, Imputer, StandardScaler, VectorAssembler) fitted once on the
    fit rows and its output cached, as an MLlib user would for several models: its time (fit + the encoded rows
    cached) is shown apart and counted in every MLlib row's fit time. First an untimed warm-up (the pipeline and
    each head, 2 iterations, on :data:`WARMUP_ROWS` rows); then each head over its grid, picked by validation AUC."""
    fit, valid, test = frames
    prep = one_hot_pipeline(data)
    small = fit.limit(WARMUP_ROWS)
    small_rows = prep.fit(small).transform(small).select("features", "label").cache()
    for _, _, candidates, _ in mllib_heads(args):
        candidates[0][2].copy({candidates[0][2].maxIter: 2}).fit(small_rows)
    small_rows.unpersist()

    def encode():
        model = prep.fit(fit)
        rows = model.transform(fit).select("features", "label").cache()
        rows.count()
        return model, rows

    (prep_model, rows), prep_s = timed(encode)
    valid_rows = prep_model.transform(valid).select("features", "label").cache()
    test_rows = prep_model.transform(test).select("features", "label").cache()
    try:
        for name, knob, candidates, passes in mllib_heads(args):
            runs = []
            for setting, text, head in candidates:
                fitted, seconds = timed(lambda: head.fit(rows))  # noqa: B023 - called at once
                done = int(getattr(fitted.summary, "totalIterations", passes)) \
                    if getattr(fitted, "hasSummary", False) else passes     # L-BFGS stops early once it converges
                total = prep_s + seconds

                def score(fitted=fitted):
                    auc = evaluate(fitted.transform(test_rows))
                    # prediction from the raw test rows, as sparkps's: the one-hot pipeline, then the head
                    score_s = timed(lambda: evaluate(fitted.transform(prep_model.transform(test))))[1]
                    return {"auc": auc, "predict_per_s": split.test / score_s}
                runs.append({"system": name + " (one-hot pipeline)", "setting": setting, "settings": text,
                             "valid_auc": evaluate(fitted.transform(valid_rows)), "fit_s": total,
                             "head_s": seconds, "pipeline_s": prep_s, "samples_per_s": split.fit * done / total,
                             "iterations": done, "score": score})
                print("bench_ctr candidate: %s %s %g: validation AUC %.4f, fit %.1f s (+ pipeline %.1f s)" % (
                    name, knob, setting, runs[-1]["valid_auc"], seconds, prep_s), flush=True)
            yield scored(dict(tuned(runs, knob), tuning_s=prep_s + sum(r["head_s"] for r in runs)))
    finally:
        rows.unpersist()
        valid_rows.unpersist()
        test_rows.unpersist()


def numpy_fm_row(data, split, args, lr):
    """The same FM network in one process (FeedForward, in-place updates, numpy), one BLAS thread, on the fit rows
    at learning rate ``lr``."""
    from threadpoolctl import threadpool_limits

    import sparkps.nets as nets
    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.numeric import NumericStats
    from sparkps.metric.ctr import binary_auc
    from sparkps.nets.ctr_fit import fit_ctr, predict_ctr
    rows = split.fit
    ids = hash_fields(data.fields, [data.categorical[:, j] for j in range(len(data.fields))])
    numeric = NumericStats.fit(data.numeric[:rows], data.numeric_names, log=True).transform(data.numeric)
    spec = nets.FeatureSpec(categorical=data.fields, numeric=data.numeric_names, embedding_dim=4)
    inputs = spec.inputs(ids, numeric)
    with threadpool_limits(1):
        fitted, seconds = timed(lambda: fit_ctr(nets.build("fm", spec), {k: v[:rows] for k, v in inputs.items()},
                                                data.labels[:rows], num_epoch=args.epochs,
                                                batch_size=args.batch_size, learning_rate=lr))
        test = slice(split.train, split.total)
        auc = binary_auc(data.labels[test], predict_ctr(fitted, {k: v[test] for k, v in inputs.items()}))
    return {"system": "one process, sparkps FM with the local kvstore (same network)", "auc": auc, "fit_s": seconds,
            "settings": settings(args, lr), "samples_per_s": rows * args.epochs / seconds}


def numpy_fm_loop(data, split, args, lr, dim=4, buckets=1 << 22, seed=0, rows=None, epochs=None, score=True):
    """The FM math written by hand in numpy, one process, one BLAS thread: per batch the unique ids (bucketed
    into a dense numpy table: no id index to maintain, which favours this baseline), gather, forward, backward,
    gradients summed per unique id plus sparkps's L2 (``embeddingL2``) on the embedding part of those rows, and lazy
    Adam on those rows only; the numeric part and bias dense Adam. Trains on the first ``rows`` rows (default the
    fit rows) at learning rate ``lr``; scores the test rows when ``score``."""
    from threadpoolctl import threadpool_limits

    from sparkps.ctr.hashing import bucket, hash_fields
    from sparkps.ctr.numeric import NumericStats
    from sparkps.metric.ctr import binary_auc
    from sparkps.nets.ctr_defaults import CTR_DEFAULTS
    rows, epochs, b1, b2, eps = rows or split.fit, epochs or args.epochs, 0.9, 0.999, 1e-8
    wd = CTR_DEFAULTS["embeddingL2"]
    ids = bucket(hash_fields(data.fields, [data.categorical[:, j] for j in range(len(data.fields))]), buckets)
    numeric = NumericStats.fit(data.numeric[:split.fit], data.numeric_names, log=True).transform(data.numeric)
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
        for _ in range(epochs):
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
                grad[:, :dim] += wd * table[unique, :dim]      # L2 on the embedding rows the batch reads
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
        if not score:
            return None
        p = np.concatenate([forward(ids[i:i + 4096], numeric[i:i + 4096])[2]
                            for i in range(split.train, split.total, 4096)])
    return {"system": "one process, hand-written numpy FM loop", "auc": binary_auc(data.labels[split.train:], p),
            "settings": settings(args, lr) + ", L2 %g on read rows" % wd,
            "fit_s": seconds, "samples_per_s": rows * epochs / seconds}


def table(results, args, planted_auc, run):
    split = split_rows(args.rows)
    lrs, regs, steps = (", ".join("%g" % v for v in grid(c, args.candidates, args.grid_ratio))
                        for c in (args.lr, args.lr_reg, args.fm_step))
    budget = ("**Tuning budget: %d candidate settings per system**, one knob each (a geometric grid of ratio %g): "
              "the Adam learning rate for sparkps and PyTorch (%s), regParam for MLlib LogisticRegression (%s; "
              "L-BFGS has no step size), stepSize for MLlib FMClassifier (%s). Every candidate is fitted on the fit "
              "rows; the one with the best AUC on the validation rows is kept, and its test AUC, its own fit time and "
              "its prediction speed are in the table (the tuning table lists every candidate). The dist_async FM row "
              "and the numpy loop run at the learning rate picked for sparkps fm (dist_sync)." % (
                  args.candidates, args.grid_ratio, lrs, regs, steps)) if args.candidates > 1 else \
        ("**No tuning**: every system runs one setting, its grid's centre (Adam learning rate %s for sparkps, "
         "PyTorch and the numpy loop; regParam %s for MLlib LogisticRegression; stepSize %s for MLlib "
         "FMClassifier)." % (lrs, regs, steps))
    lines = ["## CTR: sparkps FM/DeepFM vs MLlib and PyTorch, on even terms (benchmarks/bench_ctr.py)", "",
             "Planted DeepFM data (`sparkps.ctr.synthetic.planted_ctr`, vocab %d): %d fit rows, the next %d the "
             "validation rows, %d test rows; every system trains on the fit rows and is scored on the same "
             "validation and test rows. Planted model's test AUC %.4f. Spark local[2]; sparkps 2 workers + 2 servers."
             % (args.vocab, split.fit, split.valid, split.test, planted_auc), "",
             "**Warm-up: every system** gets one untimed warm-up fit on %d fit rows before its timed fits (sparkps: "
             "an FM fit; MLlib: the one-hot pipeline and each head at 2 iterations; PyTorch: a throwaway model in "
             "each of its processes; the numpy loop: one pass)." % WARMUP_ROWS, "", budget, "",
             "**Regularisation**: sparkps at its estimator defaults, embeddingL2 1e-4 (on the embedding rows a batch "
             "reads) and dropout 0.5 (DeepFM's deep part), early stopping off (validationFraction 0: the validation "
             "rows serve every system's tuning instead). PyTorch twice: *dense* (`nn.Embedding`, Adam over every "
             "row at every step, no regularisation) and *sparse* (`nn.Embedding(sparse=True)` under SparseAdam, "
             "Adam for the dense part, sparkps's dropout and L2 on the rows a batch reads). The numpy FM loop applies "
             "sparkps's L2 to the rows a batch reads. MLlib heads get sparkps's budget in optimizer steps (%d epochs "
             "of batches of %d rows): LogisticRegression maxIter %d (L-BFGS, may stop earlier), FMClassifier maxIter "
             "%d (adamW on mini-batches of the same share of the rows), factorSize 4." % (
                 args.epochs, args.batch_size, args.lr_iter, args.fm_iter), "",
             "**Interleaved**: %d rounds, each running every system once in the same order (ABAB...); every figure "
             "is the median over the rounds, the fit seconds with their min-max spread; a ratio against a target "
             "is the median of the rounds' ratios, with their spread, and says when the spread crosses the "
             "target." % args.repeats, "",
             "Fit time is `fit()` on the cached fit rows to the trained model; for MLlib it includes the one-hot "
             "pipeline (fitted once, its output cached: its share in brackets). *Predict rows/s*: the test rows "
             "scored from their raw columns and the AUC computed over them (`transform` + "
             "BinaryClassificationEvaluator; MLlib: its one-hot pipeline, then the head).", "",
             "| system | settings (picked) | validation AUC | test AUC | fit s | samples/s (whole fit) "
             "| samples/s (training steps only) | per core (whole fit) | predict rows/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        steady = r.get("steady_per_s")
        fit = "%.1f" % r["fit_s"] + (" [%.1f–%.1f]" % (min(r["fit_runs"]), max(r["fit_runs"]))
                                     if r.get("fit_runs") else "") \
            + (" (%.1f)" % r["pipeline_s"] if r.get("pipeline_s") else "")
        predict = "%.0f" % r["predict_per_s"] if r.get("predict_per_s") else ""
        valid = "%.4f" % r["valid_auc"] if r.get("valid_auc") is not None else ""
        lines.append("| %s | %s%s | %s | %.4f | %s | %.0f | %s | %.0f | %s |" % (
            r["system"], r.get("settings", ""), " (%s)" % r["note"] if r.get("note") else "", valid, r["auc"], fit,
            r["samples_per_s"], "%.0f" % steady if steady else "", r["samples_per_s"] / cores(r), predict))
    searched = [r for r in results if r.get("candidates")]
    if searched and args.candidates > 1:
        lines += ["", "Tuning: every candidate's validation AUC (fit s); the picked one in bold; the last column sums "
                  "the fit seconds of all candidates (MLlib: its pipeline once).", "",
                  "| system | knob | candidates: validation AUC (fit s) | all candidates' fit s |", "|---|---|---|---|"]
        for r in searched:
            shown = ["%s%g: %.4f (%.1f)%s" % ("**" if s == r["setting"] else "", s, auc, secs,
                                              "**" if s == r["setting"] else "") for s, auc, secs in r["candidates"]]
            lines.append("| %s | %s | %s | %.1f |" % (r["system"], r["knob"], "; ".join(shown), r["tuning_s"]))
    lines += [""] + goals(results, args) + ["", "Machine load at the start and end of the run (`uptime`): %s / %s."
                                            % tuple(" ".join("%.1f" % x for x in run["load"][when])
                                                    for when in ("start", "end")),
                                            "", "![CTR benchmark](bench_ctr.png)"]
    return "\n".join(lines)


def cores(row):
    """The cores a row trained on: Spark local[2] and PyTorch's 2 threads use 2, the one-process rows 1."""
    return row.get("cores") or (1 if row["system"].startswith("one process") else 2)


def round_ratio(slow, fast, target):
    """``slow``'s fit seconds over ``fast``'s as the goals show it: the median of the rounds' ratios (each round ran
    both), their spread, and whether the spread crosses ``target``."""
    if not (slow.get("fit_runs") and fast.get("fit_runs")):
        return "%.1f×" % (slow["fit_s"] / fast["fit_s"])
    ratios = sorted(a / b for a, b in zip(slow["fit_runs"], fast["fit_runs"]))
    crosses = ratios[0] < target <= ratios[-1]
    return "%.1f× (rounds %.1f–%.1f×%s)" % (float(np.median(ratios)), ratios[0], ratios[-1],
                                            "; the spread crosses the %g× target" % target if crosses else "")


def combine(rounds):
    """One row per system from ``rounds`` (each a list of the rows every system gave in that round, in the same
    order): the row whose fit time is the median of its rounds, with every round's fit seconds (``fit_runs``),
    the median test AUC and the median samples/s."""
    out = []
    for same in zip(*rounds):
        ranked = sorted(same, key=lambda r: r["fit_s"])
        row = dict(ranked[len(ranked) // 2], fit_runs=[r["fit_s"] for r in same])
        row["auc"] = float(np.median([r["auc"] for r in same]))
        row["samples_per_s"] = float(np.median([r["samples_per_s"] for r in same]))
        if all(r.get("steady_per_s") for r in same):
            row["steady_per_s"] = float(np.median([r["steady_per_s"] for r in same]))
        out.append(row)
    return out


def goals(results, args):
    """The goals, each against this run's rows (lines of text; a goal whose rows are missing is skipped)."""
    lines = []
    mllib = [r for r in results if r["system"].startswith("MLlib")]
    best = max(mllib, key=lambda r: r["auc"]) if mllib else None
    fastest = min(mllib, key=lambda r: r["fit_s"]) if mllib else None
    for r in results:
        if best and r["system"].startswith("sparkps") and "dist_sync" in r["system"]:
            lines.append("- %s: AUC %+.4f vs MLlib's best (%s, %s: %.4f in %.1f s); fit %s faster than it, %s "
                         "faster than MLlib's fastest row (%s, %s: %.1f s) (goals: AUC >= MLlib's best, >= 10× "
                         "faster)." % (r["system"], r["auc"] - best["auc"], best["system"], best["settings"],
                                       best["auc"], best["fit_s"], round_ratio(best, r, 10.0),
                                       round_ratio(fastest, r, 10.0), fastest["system"], fastest["settings"],
                                       fastest["fit_s"]))
    deep = next((r for r in results if r["system"] == "sparkps deepfm (dist_sync)"), None)
    for r in results:
        if deep and r["system"].startswith("PyTorch deepfm"):
            lines.append("- sparkps deepfm (dist_sync) against %s: AUC %.4f vs %.4f, fit %.1f s vs %.1f s "
                         "(samples/s ratio %.2f)." % (r["system"], deep["auc"], r["auc"], deep["fit_s"], r["fit_s"],
                                                      deep["samples_per_s"] / r["samples_per_s"]))
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
    lines.append("- MLlib samples/s count its passes over the fit rows (maxIter, or fewer where L-BFGS converged).")
    return lines


def plot(results, path):
    """Test AUC and fit seconds of every system, side by side (docs/bench_ctr.png)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    def name(r):
        if r["system"].startswith("PyTorch"):
            return "PyTorch deepfm (%s)" % ("sparse" if "sparse Embedding" in r["system"] else "dense")
        return r["system"].replace(" (one-hot pipeline)", "").replace("one process, ", "") \
            + (" [%s]" % r["settings"].split(",")[-1].strip() if r["system"].startswith("MLlib") else "")
    names = [name(r) for r in results]
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
    run = report.Run("bench_ctr", argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from sparkps.metric.ctr import binary_auc
    data, split = planted(args), split_rows(args.rows)
    planted_auc = binary_auc(data.labels[split.train:], data.probability[split.train:])
    spark = (SparkSession.builder.master("local[2]").appName("bench_ctr")
             .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "8g")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    rounds = []

    def done(row):       # each row printed as it comes: a run cut short still tells what it measured
        rounds[-1].append(row)
        print("bench_ctr row (round %d): %s" % (len(rounds), json.dumps(row)), flush=True)

    systems = set(args.systems.split(","))
    try:
        dataframes = frames(spark, data, split)
        for _ in range(args.repeats):       # every system once a round, in the same order: A B A B ...
            rounds.append([])
            if "sparkps" in systems:
                for row in sparkps_rows(dataframes, data, args):
                    done(row)
            picked = next((r["setting"] for r in rounds[-1] if r["system"] == "sparkps fm (dist_sync)"), args.lr)
            if "numpy" in systems:
                numpy_fm_loop(data, split, args, picked, rows=WARMUP_ROWS, epochs=1, score=False)    # warm-up
                done(numpy_fm_loop(data, split, args, picked))
            if args.local_feedforward:
                done(numpy_fm_row(data, split, args, picked))
            if "torch" in systems:
                for row in torch_rows(data, split, args):
                    done(row)
            if "mllib" in systems:
                for row in mllib_rows(dataframes, data, split, args):
                    done(row)
    finally:
        spark.stop()
    results = ranked(combine(rounds))
    data = {"options": report.options(args), "planted_auc": float(planted_auc), "rounds": rounds}
    print(run.publish(args, "bench_ctr", data, render))
    if args.write_docs:
        plot(results, os.path.join(report.ROOT, "docs", "bench_ctr.png"))
    report.save_json(args, "bench_ctr", figures(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

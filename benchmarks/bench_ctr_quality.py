"""CTR quality: test AUC and logloss of every CTR zoo model (``SparkpsCTRClassifier`` at its defaults) beside Spark
MLlib's LogisticRegression and FMClassifier on one-hot features (at their defaults, and tuned on a validation
split), over seeds, on planted data at two noise levels and on MovieLens 100K.

    python -m benchmarks.bench_ctr_quality --rows 100000 --seeds 0,1,2 --write-docs    # all three data sets
    python -m benchmarks.bench_ctr_quality --rows 100000 --noise 0 --movielens off --write-docs   # one data set
    python -m benchmarks.bench_ctr_quality --rows 500 --models lr,fm --mllib none --movielens off  # a smoke run
    python -m benchmarks.bench_ctr_quality --rows 100000 --models fm,deepfm --workers 1,2,4 --mllib none --write-docs

``--write-docs`` writes one section of docs/benchmarks.md per data set run (``ctr_quality_planted_noise0``,
``ctr_quality_planted_noise0.3``, ``ctr_quality_movielens``; with ``--workers``,
``ctr_quality_workers_<data>_<models>``)
as soon as it is done, so the data sets can run in separate processes. ``--json PATH`` writes every row's figures;
``--mllib-cache PATH`` keeps MLlib's runs (they do not depend on sparkps) for the next run to reuse. The sweep
that chose the defaults is ``benchmarks/ctr_sweep.py``.

Every figure is measured on rows no model saw in training. Per model and data set: the mean test AUC over
``--seeds`` seeds and its spread (max - min), the mean test logloss, the epochs (sparkps) or iterations (MLlib)
run, and the mean fit time (``fit`` call to its return; MLlib's one-hot pipeline is fitted once per data set, its
time given below the table and counted into the race's verdicts: :func:`race_verdicts`). Each system runs one
untimed fit of 2,000 rows first (both warm). A seed sets the sparkps and MLlib seeds and the validation draw;
the data stay the same.

**Planted data** (``sparkps.ctr.synthetic.planted_ctr``; :data:`PLANTED` gives its settings): categorical fields
with Zipf-distributed values, numeric counts, and labels drawn from a planted FM + MLP logit. The noise level
``--noise`` replaces each label by a fair coin with that probability (the ranking of the true probabilities is
unchanged, so the *planted AUC* - the AUC of the true click probabilities on the test rows - is the ceiling any
model can reach on average). ``--rows`` training rows and a quarter as many test rows.

**MovieLens 100K** (F. Maxwell Harper and Joseph A. Konstan, ACM TiiS 2015; GroupLens's terms: research use,
acknowledgement, no redistribution or commercial use without permission), as shipped inside the wheel of the
``recbole`` package (MIT), in its atomic files ``recbole/dataset_example/ml-100k/ml-100k.{inter,user,item}``: read
at run time from the installed package, which this benchmark never imports (``pip install --no-deps recbole``
is enough; without it the data set is skipped with a message). Label: rating >= 4; columns: user, item, age,
gender, occupation, zip prefix, release year, first genre. A seeded 80/20 split of the 100,000 ratings (the
seed does not move it); ``--rows`` caps the training rows.

Sparkps variants: ``default`` is ``SparkpsCTRClassifier(model=M, seed=S)`` with every other param at its default
(``sparkps.nets.ctr_defaults``: early stopping on held-out rows included); ``previous`` the defaults before they
were measured (learningRate 0.01, embeddingL2 0, 5 epochs, nothing held out). MLlib: ``default`` is the estimator as
constructed; ``tuned`` fits every point of :data:`LR_GRID` / :data:`FM_GRID` on the training rows sparkps keeps with
the same seed, keeps the one with the best AUC on the rows sparkps holds out (the same split early stopping scores)
and reports that fit. PyTorch (``--torch-python``, a Python with torch): ``benchmarks/torch_deepfm.py``'s FM and
DeepFM at the estimator's default width, batch and learning rate, on every training row, for as many epochs as the
early-stopped sparkps fits kept, twice: ``reference`` (dense ``nn.Embedding`` under Adam, no regularisation) and
``sparse reference`` (``nn.Embedding(sparse=True)`` under SparseAdam, the estimator's dropout and L2). ``--workers
1,2,4`` fits each model at its defaults with that many workers instead (the scale check: the AUC of 2 and 4 workers
beside 1).
"""
import argparse
import importlib.metadata
import itertools
import os
import sys
import time

import numpy as np

from benchmarks import report
from benchmarks.ctr_reference import RunCache, torch_ready, torch_run
from sparkps.nets import zoo

MODELS = zoo.names()      # every registered zoo model
TORCH_VARIANTS = (("dense", "nn.Embedding, Adam on every row, no regularisation"),
                  ("sparse", "nn.Embedding(sparse=True) under SparseAdam, the estimator's dropout and embeddingL2"))
PLANTED = dict(num_fields=8, num_numeric=2, vocab=200, zipf=1.2, factors=4, linear_scale=0.5, fm_scale=0.5,
               deep_scale=0.5, hidden=16, bias=-1.0, missing=0.05, seed=7)
PREVIOUS = dict(learningRate=0.01, embeddingL2=0.0, numEpochs=5, validationFraction=0.0)   # the unmeasured defaults
LR_GRID = {"regParam": [0.0, 1e-4, 1e-3, 1e-2]}
FM_GRID = {"stepSize": [0.1, 1.0], "factorSize": [8], "regParam": [0.0, 0.01]}     # --fm-factor-sizes
MOVIELENS = "recbole/dataset_example/ml-100k/ml-100k"


# -- pure helpers (tests/benchmarks/test_ctr_quality_helpers.py) ----------------------------------------------

def grid(axes):
    """Every combination of ``axes`` ({param: [values]}) as a list of dicts, in the axes' order (the last axis
    varies fastest); ``{}`` gives one empty setting."""
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*(axes[n] for n in names))]


def one_axis_sweep(defaults, axes):
    """The settings of a one-axis-at-a-time sweep: for each axis in ``axes`` ({param: [values]}), every value with
    the other params at ``defaults``; a setting met twice (the defaults) is kept once, first come."""
    seen, out = set(), []
    for name, values in axes.items():
        for value in values:
            setting = dict(defaults, **{name: value})
            key = tuple(sorted(setting.items()))
            if key not in seen:
                seen.add(key)
                out.append(setting)
    return out


def auc(labels, scores):
    """Exact ROC AUC of ``scores`` against 0/1 ``labels`` (sparkps.metric.ctr.binary_auc, ties count a half);
    None when only one class is present."""
    from sparkps.metric.ctr import binary_auc
    value = binary_auc(np.asarray(labels, float) > 0.5, np.asarray(scores, float))
    return None if np.isnan(value) else float(value)


def logloss(labels, probability, eps=1e-15):
    """Mean binary cross-entropy of ``probability`` (clipped to [eps, 1 - eps]) against 0/1 ``labels``."""
    labels, p = np.asarray(labels, float), np.clip(np.asarray(probability, float), eps, 1 - eps)
    return float(-np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)))


def summarise(runs):
    """One row of the table from the runs of a model over seeds ([{auc, logloss, epochs, fit_s, ...}]): the median
    and spread (max - min) of the AUC, the medians of logloss, epochs and fit time, the fit time's min and max, and
    the seeds counted."""
    aucs = [r["auc"] for r in runs if r["auc"] is not None]
    median = lambda key: float(np.median([r[key] for r in runs])) if runs else None     # noqa: E731
    return {"auc": float(np.median(aucs)) if aucs else None, "spread": float(np.ptp(aucs)) if aucs else None,
            "logloss": median("logloss"), "epochs": median("epochs"), "fit_s": median("fit_s"),
            "fit_min": min(r["fit_s"] for r in runs) if runs else None,
            "fit_max": max(r["fit_s"] for r in runs) if runs else None, "seeds": len(runs)}


def by_seed(row):
    """{seed: run} of a table row (every run carries the seed it ran with)."""
    return {r["seed"]: r for r in row["runs"]}


def race_verdicts(rows, pipeline_s, auc_goal=0.002, speed_goal=2.0):
    """Per sparkps model at its defaults, its margins over MLlib (the issue's targets), seed by seed (each seed's
    systems ran in one round, one after the other): the test AUC minus the best MLlib row's of the same seed (goal
    ``auc_goal``) and how many times faster its whole fit is than MLlib LogisticRegression at its defaults with the
    one-hot pipeline's ``pipeline_s`` counted in (goal ``speed_goal``); each as the median over the seeds with its
    min and max. ``rows``: the table's rows ({model, variant, summary, runs}); [] without MLlib rows. Each verdict:
    {model, auc_margin, auc_range, speedup, speed_range, met, crosses: the targets whose range crosses them}."""
    mllib = [r for r in rows if r["model"].startswith("MLlib ") and r["summary"]["auc"] is not None]
    lr = [r for r in mllib if r["model"] == "MLlib LogisticRegression" and r["variant"] == "default"]
    if not mllib:
        return []
    best_mllib = max(mllib, key=lambda r: r["summary"]["auc"])
    out = []
    for r in rows:
        if not r["model"].startswith("sparkps ") or r["variant"] != "default" or r["summary"]["auc"] is None:
            continue
        ours = by_seed(r)
        best_runs = by_seed(best_mllib)
        margins = sorted(ours[s]["auc"] - best_runs[s]["auc"] for s in ours if s in best_runs)
        if not margins:         # MLlib's best row ran other seeds: against its median
            margins = [ours[s]["auc"] - best_mllib["summary"]["auc"] for s in sorted(ours)]
            margins.sort()
        speeds = sorted((by_seed(lr[0])[s]["fit_s"] + (pipeline_s or 0.0)) / ours[s]["fit_s"]
                        for s in ours if s in by_seed(lr[0])) if lr else []
        margin = float(np.median(margins))
        speedup = float(np.median(speeds)) if speeds else None
        crosses = [name for name, values, goal in (("AUC", margins, auc_goal - 1e-12), ("speed", speeds, speed_goal))
                   if values and values[0] < goal <= values[-1]]
        out.append({"model": r["model"], "auc_margin": margin, "auc_range": (margins[0], margins[-1]),
                    "speedup": speedup, "speed_range": (speeds[0], speeds[-1]) if speeds else None,
                    "met": margin >= auc_goal - 1e-12 and speedup is not None and speedup >= speed_goal,
                    "crosses": crosses})
    return out


def best(candidates, key="val_auc"):
    """The candidate with the highest ``key`` (the first of equals); None for none."""
    return max(candidates, key=lambda c: c[key]) if candidates else None


# -- data -----------------------------------------------------------------------------------------------------

def planted_set(rows, noise):
    """A data set dict: pandas train/test frames, their columns and the planted AUC on the test rows."""
    import pandas as pd

    from sparkps.ctr.synthetic import planted_ctr
    data = planted_ctr(rows + rows // 4, **PLANTED)
    labels = data.labels.astype(np.float64)
    if noise:
        rng = np.random.default_rng([PLANTED["seed"], 2])
        coin = rng.random(len(labels)) < noise
        labels = np.where(coin, (rng.random(len(labels)) < 0.5).astype(np.float64), labels)
    table = pd.DataFrame({"label": labels})
    for j, name in enumerate(data.numeric_names):
        table[name] = data.numeric[:, j]
    for j, name in enumerate(data.fields):
        table[name] = data.categorical[:, j]
    return {"name": "planted, noise %g" % noise, "slug": "planted_noise%g" % noise, "noise": noise,
            "train": table.iloc[:rows], "test": table.iloc[rows:],
            "categorical": list(data.fields), "numeric": list(data.numeric_names),
            "ceiling": auc(labels[rows:], data.probability[rows:])}


def movielens_files():
    """The paths of MovieLens 100K's atomic files inside the installed recbole wheel, or None when recbole is not
    installed (found through its distribution's metadata: recbole itself is never imported)."""
    try:
        dist = importlib.metadata.distribution("recbole")
    except importlib.metadata.PackageNotFoundError:
        return None
    paths = {kind: str(dist.locate_file("%s.%s" % (MOVIELENS, kind))) for kind in ("inter", "user", "item")}
    return paths if all(os.path.exists(p) for p in paths.values()) else None


def movielens_ratings():
    """MovieLens 100K's ratings joined with their users and items, every column a string named without its recbole
    type; None when the recbole wheel is not installed."""
    import pandas as pd
    files = movielens_files()
    if files is None:
        return None
    read = lambda kind: pd.read_csv(files[kind], sep="\t", dtype=str, encoding="latin-1")     # noqa: E731
    inter, users, items = read("inter"), read("user"), read("item")
    for frame in (inter, users, items):
        frame.columns = [c.split(":")[0] for c in frame.columns]
    return inter.merge(users, on="user_id", how="left").merge(items, on="item_id", how="left")


def movielens_set(rows, seed=0):
    """MovieLens 100K as a CTR data set (rating >= 4 is a click), split 80/20 by a seeded draw; None when the
    recbole wheel is not installed."""
    table = movielens_ratings()
    if table is None:
        return None
    table["label"] = (table["rating"].astype(float) >= 4).astype(np.float64)
    table["zip3"] = table["zip_code"].fillna("").str[:3]
    table["genre"] = table["class"].fillna("").str.split(" ").str[0]
    cats = ["user_id", "item_id", "age", "gender", "occupation", "zip3", "release_year", "genre"]
    table = table[["label"] + cats].fillna("none")
    test = np.random.default_rng([seed, 3]).random(len(table)) < 0.2
    train = table[~test]
    return {"name": "MovieLens 100K (rating >= 4)", "slug": "movielens", "train": train.iloc[:rows] if rows else train,
            "test": table[test], "categorical": cats, "numeric": [], "ceiling": None}


# -- fitting ----------------------------------------------------------------------------------------------------

def spark_session(slots=2):
    return report.local_spark("bench_ctr_quality", "4g", slots)


def frames(spark, dataset):
    train = spark.createDataFrame(dataset["train"]).repartition(2).cache()
    test = spark.createDataFrame(dataset["test"]).repartition(2).cache()
    train.count(), test.count()
    return train, test


def scored(model, frame):
    """(labels, click probabilities) of ``model`` on ``frame``, collected to the driver."""
    from pyspark.ml.functions import vector_to_array
    out = model.transform(frame).select("label", vector_to_array("probability")[1].alias("p")).toPandas()
    return out["label"].to_numpy(), out["p"].to_numpy()


def measure(fit, frame):
    """Fit (``fit()`` returns (model, epochs)), time it, and score the model on ``frame``."""
    started = time.perf_counter()
    model, epochs = fit()
    fit_s = time.perf_counter() - started
    labels, p = scored(model, frame)
    return {"auc": auc(labels, p), "logloss": logloss(labels, p), "epochs": epochs, "fit_s": fit_s}


def sparkps_run(train, test, dataset, model, seed, variant="default", **params):
    """One SparkpsCTRClassifier fit: ``variant`` 'default' or 'previous'; ``params`` override (numWorkers)."""
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier
    extra = dict(PREVIOUS) if variant == "previous" else {}
    clf = SparkpsCTRClassifier(categoricalCols=dataset["categorical"], numericCols=dataset["numeric"], model=model,
                               seed=seed, **dict(extra, **params))

    kept = {}

    def fit():
        fitted = clf.fit(train)
        kept["best_epoch"] = fitted.bestEpoch
        return fitted, len(fitted.history)
    return dict(measure(fit, test), **kept)


def held_column(seed):
    return "held_%d" % seed


def one_hot(spark, dataset, train, test, seeds=()):
    """MLlib's one-hot pipeline (StringIndexer, OneHotEncoder, and for numeric columns Imputer, StandardScaler on
    log1p) fitted on the training rows: (train, test) frames of (features, label), cached; the training frame
    also marks, for each of ``seeds``, the rows ``SparkpsCTRClassifier(seed=S)`` holds out (``held_<S>``), so
    MLlib is tuned on the same split."""
    from sparkps.nets.ctr_defaults import CTR_DEFAULTS
    from sparkps.spark.driver.input_rows import held_out_rows
    marks = [held_out_rows(train, CTR_DEFAULTS["validationFraction"], s).alias(held_column(s)) for s in seeds]
    train = train.select("*", *marks)
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import Imputer, OneHotEncoder, StandardScaler, StringIndexer, VectorAssembler
    from pyspark.sql import functions as F
    cats, nums = dataset["categorical"], dataset["numeric"]
    indexed, encoded = ["%s_idx" % c for c in cats], ["%s_vec" % c for c in cats]
    stages = [StringIndexer(inputCols=cats, outputCols=indexed, handleInvalid="keep"),
              OneHotEncoder(inputCols=indexed, outputCols=encoded, handleInvalid="keep")]
    parts = list(encoded)
    if nums:
        logged = ["%s_log" % c for c in nums]
        train, test = ((f.select("*", *[F.log1p(F.col(c)).alias(o) for c, o in zip(nums, logged)]))
                       for f in (train, test))
        imputed = ["%s_imp" % c for c in nums]
        stages += [Imputer(inputCols=logged, outputCols=imputed),
                   VectorAssembler(inputCols=imputed, outputCol="numeric"),
                   StandardScaler(inputCol="numeric", outputCol="numeric_std", withMean=True)]
        parts.append("numeric_std")
    stages.append(VectorAssembler(inputCols=parts, outputCol="features"))
    prep = Pipeline(stages=stages).fit(train)
    encoded_train = prep.transform(train).select("features", "label", *[held_column(s) for s in seeds]).cache()
    encoded_test = prep.transform(test).select("features", "label").cache()
    encoded_train.count(), encoded_test.count()
    return encoded_train, encoded_test


def mllib_estimator(kind, seed, **params):
    from pyspark.ml.classification import FMClassifier, LogisticRegression
    return LogisticRegression(**params) if kind == "lr" else FMClassifier(seed=seed, **params)


def iterations(model, default):
    summary = model.summary if getattr(model, "hasSummary", False) else None
    return int(getattr(summary, "totalIterations", default)) if summary is not None else default


def mllib_budget(kind, train_rows):
    """The iterations a tuned MLlib head gets: sparkps's budget at its defaults in optimizer updates (numEpochs x
    the batches of batchSize in the rows it trains on); FMClassifier on mini-batches of the same share of the rows
    (miniBatchFraction), LogisticRegression's L-BFGS at most that many (it stops once converged)."""
    from sparkps.nets.ctr_defaults import CTR_DEFAULTS as d
    fit_rows = max(1, int(train_rows * (1 - d["validationFraction"])))
    steps = d["numEpochs"] * -(-fit_rows // d["batchSize"])
    if kind == "lr":
        return {"maxIter": steps}
    return {"maxIter": steps, "miniBatchFraction": min(1.0, d["batchSize"] / fit_rows)}


def mllib_run(kind, encoded_train, encoded_test, seed, variant, factor_sizes=(8,), train_rows=None):
    """MLlib LogisticRegression ('lr') or FMClassifier ('fm'): 'default' as constructed, 'tuned' the best point of
    its grid by AUC on the training rows sparkps holds out with the same seed (its time: the whole search), each
    point at :func:`mllib_budget` of ``train_rows``."""
    if variant == "default":
        est = mllib_estimator(kind, seed)
        return measure(lambda: (lambda m: (m, iterations(m, est.getMaxIter())))(est.fit(encoded_train)),
                       encoded_test)
    held = encoded_train[held_column(seed)]     # the rows sparkps's fit with this seed holds out
    fit_part, val_part = encoded_train.where(~held).cache(), encoded_train.where(held).cache()
    started, candidates = time.perf_counter(), []
    budget = mllib_budget(kind, train_rows) if train_rows else {}
    for setting in grid(LR_GRID if kind == "lr" else dict(FM_GRID, factorSize=factor_sizes)):
        est = mllib_estimator(kind, seed, **dict(setting, **budget))
        model = est.fit(fit_part)
        labels, p = scored(model, val_part)
        candidates.append({"setting": setting, "model": model, "val_auc": auc(labels, p) or 0.0,
                           "epochs": iterations(model, est.getMaxIter())})
    chosen = best(candidates)
    fit_s = time.perf_counter() - started
    labels, p = scored(chosen["model"], encoded_test)
    fit_part.unpersist(), val_part.unpersist()
    return {"auc": auc(labels, p), "logloss": logloss(labels, p), "epochs": chosen["epochs"], "fit_s": fit_s,
            "setting": chosen["setting"]}


# -- report -----------------------------------------------------------------------------------------------------

def fmt(value, spec):
    return "n/a" if value is None else format(value, spec)


def setting_text(setting):
    return ", ".join("%s %g" % kv for kv in setting.items())


def table(rows, title):
    lines = ["**%s**" % title, "",
             "| model | variant | test AUC (median) | spread | logloss | epochs / iters | fit (s) [min–max] | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["summary"]
        fit = fmt(s["fit_s"], ".1f") + ("" if s.get("fit_min") is None else
                                        " [%.1f–%.1f]" % (s["fit_min"], s["fit_max"]))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["variant"], fmt(s["auc"], ".4f"), fmt(s["spread"], ".4f"), fmt(s["logloss"], ".4f"),
            fmt(s["epochs"], ".1f"), fit, r.get("note", "")))
    return lines


def data_text(args, dataset, grids):
    if dataset["slug"] != "movielens":
        return ("Planted data: `planted_ctr(rows * 1.25, %s)`, each label replaced by a fair coin with probability "
                "%g; the first %d rows train, the rest test." % (
                    ", ".join("%s=%r" % kv for kv in grids["planted"].items()), dataset.get("noise", 0), args.rows))
    return ("MovieLens 100K from the installed recbole wheel (MIT; the data under GroupLens's terms), rating >= 4 as "
            "the label; columns user_id, item_id, age, gender, occupation, zip3, release_year, genre (the first "
            "listed); a seeded 80/20 split, the training rows capped at %d." % args.rows)


def seeds_text(args):
    return ("%d seed(s): %s; a seed moves the models' seeds and the validation draw, not the data. The seeds are "
            "the race's rounds: each seed runs every system once, one after the other (sparkps, PyTorch, MLlib, "
            "then the next seed), and the table gives medians over them." % (
                len(args.seeds), ", ".join(map(str, args.seeds))))


def defaults_text(d):
    """The estimator's defaults ``d`` (the run's CTR_DEFAULTS) as the sections describe them."""
    return ("embeddingDim %d, hiddenUnits %s, batch %d, Adam lr %g, embeddingL2 %g, validationFraction %g with "
            "earlyStoppingPatience %d on validation %s, up to %d epochs (epochs = epochs run; the model keeps the "
            "best), 2 workers, 1 server" % (
                d["embeddingDim"], d["hiddenUnits"], d["batchSize"], d["learningRate"], d["embeddingL2"],
                d["validationFraction"], d["earlyStoppingPatience"], d["earlyStoppingMetric"], d["numEpochs"]))


def settings_text(args, dataset, grids):
    return ("Spark `local[2]`. sparkps `default`: `SparkpsCTRClassifier(model=M, seed=S)`, every other param at "
            "its default (%s); `previous`: %s. MLlib on one-hot features (StringIndexer + "
            "OneHotEncoder; numeric columns log1p, imputed, standardised): `default` as constructed; `tuned` the "
            "best by AUC on the training rows sparkps holds out with the same seed (the split early stopping "
            "scores) of LogisticRegression %s or FMClassifier %s, each point with sparkps's budget at its defaults in "
            "optimizer updates (numEpochs x the batches of batchSize; FMClassifier on mini-batches of that size, "
            "miniBatchFraction), its fit time the whole search (its iterations: the chosen fit's). Before the "
            "timed fits each system ran one untimed fit of 2,000 rows (warm-up, both "
            "sides). The fit column excludes MLlib's one-hot pipeline (its time is given below the table). %s %s" % (
                defaults_text(grids["defaults"]), ", ".join("%s %g" % kv for kv in grids["previous"].items()),
                grids["lr"], dict(grids["fm"], factorSize=args.fm_factor_sizes), data_text(args, dataset, grids),
                seeds_text(args)))


def section_name(dataset, tag=""):
    """The docs/benchmarks.md section of a data set's table: one a data set (and ``--section-tag``), so each can
    be run apart."""
    return "ctr_quality_" + dataset["slug"] + ("_" + tag if tag else "")


def quality_markdown(dataset, rows, args, grids, command):
    lines = ["## CTR quality: sparkps zoo vs MLlib, %s (benchmarks/bench_ctr_quality.py)" % dataset["name"], "",
             settings_text(args, dataset, grids), ""]
    lines += table(rows, title_of(dataset)) + [""]
    verdicts = race_verdicts(rows, dataset.get("pipeline_s"))
    if verdicts:
        lines += ["MLlib's one-hot pipeline (fitted once, both sides encoded): %.1f s. The targets for each sparkps "
                  "model at its defaults: test AUC >= MLlib's best + 0.002, and the whole fit >= 2x faster than "
                  "MLlib LogisticRegression at its defaults with the pipeline counted in; each margin the median "
                  "over the seeds of the same seed's margin, [min, max] over the seeds:" % dataset["pipeline_s"],
                  ""]
        lines += ["- %s: AUC %+.4f [%+.4f, %+.4f] against MLlib's best; %s; %s%s" % (
            v["model"], v["auc_margin"], *v["auc_range"],
            "n/a (no MLlib LogisticRegression default row)" if v["speedup"] is None else
            "%.2fx [%.2f–%.2f] MLlib LogisticRegression's fit + pipeline" % (v["speedup"], *v["speed_range"]),
            "met" if v["met"] else "missed",
            "; the seeds' spread crosses the %s target" % " and the ".join(v["crosses"]) if v["crosses"] else "")
            for v in verdicts]
        lines.append("")
    lines += ["Command: `%s`" % command]
    return "\n".join(lines)


def figures(sections):
    out = {}
    for title, rows in sections:
        for r in rows:
            key = "%s %s %s" % (title, r["model"], r["variant"])
            out[key + " auc"] = report.higher(r["summary"]["auc"], "auc")
            out[key + " logloss"] = report.lower(r["summary"]["logloss"], "logloss")
            out[key + " fit"] = report.lower(r["summary"]["fit_s"], "s")
    return out


# -- main -------------------------------------------------------------------------------------------------------

def _list(kind):
    def parse(text):
        try:
            values = [kind(v) for v in text.split(",") if v]
        except ValueError:
            raise argparse.ArgumentTypeError("expected comma-separated %s values, got %r" % (kind.__name__, text)) \
                from None
        return values
    return parse


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=20000, help="training rows (planted; MovieLens: a cap, 0: all)")
    p.add_argument("--seeds", type=_list(int), default=[0], help="comma-separated seeds (default 0)")
    p.add_argument("--models", type=_list(str), default=list(MODELS), help="sparkps zoo models (default all)")
    p.add_argument("--variants", type=_list(str), default=["default"],
                   help="sparkps variants: default, previous (the defaults before they were measured)")
    p.add_argument("--kvstores", type=_list(str), default=["dist_sync"],
                   help="with --workers: the strategies compared (default dist_sync; dist_async runs from 2 workers)")
    p.add_argument("--workers", type=_list(int), default=[],
                   help="the scale check instead: each model at its defaults with these worker counts (e.g. 1,2,4)")
    p.add_argument("--noise", type=_list(float), default=[0.0, 0.3],
                   help="planted data sets, one per label-noise level (default 0,0.3)")
    p.add_argument("--fm-factor-sizes", type=_list(int), default=[8],
                   help="factorSize values of the tuned FMClassifier grid (default 8, its default: each value "
                   "doubles the search)")
    p.add_argument("--planted", choices=["on", "off"], default="on", help="the planted data sets (default on)")
    p.add_argument("--movielens", choices=["auto", "off"], default="auto",
                   help="MovieLens 100K from the recbole wheel when installed (default auto)")
    p.add_argument("--mllib", type=_list(str), default=["default", "tuned"],
                   help="MLlib variants: default, tuned, or none")
    p.add_argument("--torch-python", default=os.environ.get("SPARKPS_TORCH_PYTHON", ""),
                   help="a Python with torch, for the PyTorch reference rows of fm and deepfm (default "
                        "$SPARKPS_TORCH_PYTHON; none: no such rows)")
    p.add_argument("--section-tag", default="",
                   help="appended to the docs sections' names, so a check at other sizes keeps its own (e.g. 10k)")
    p.add_argument("--mllib-models", type=_list(str), default=["lr", "fm"],
                   help="MLlib estimators: lr (LogisticRegression), fm (FMClassifier) (default both)")
    p.add_argument("--fm-seeds", type=_list(int), default=[],
                   help="seeds of MLlib's FMClassifier rows (default: --seeds; its tuned search is the slowest "
                        "fit here)")
    p.add_argument("--mllib-cache", metavar="PATH",
                   help="a JSON file of MLlib's runs: runs found there are reused, new ones added")
    args = report.add_output_args(p).parse_args(argv)
    if set(args.models) - set(MODELS):
        p.error("--models: unknown %s (the zoo: %s)" % (sorted(set(args.models) - set(MODELS)), ", ".join(MODELS)))
    if set(args.variants) - {"default", "previous"}:
        p.error("--variants takes default, previous")
    if set(args.mllib) - {"default", "tuned", "none"}:
        p.error("--mllib takes default, tuned or none")
    if set(args.kvstores) - {"dist_sync", "dist_async"}:
        p.error("--kvstores takes dist_sync, dist_async (the strategies that keep sparse tables on the servers)")
    if not args.seeds:
        p.error("--seeds needs at least one seed")
    if args.write_docs and len(args.seeds) < 3:
        p.error("--write-docs needs at least 3 --seeds: they are the race's rounds (a median and its spread)")
    if args.write_docs and args.mllib_cache:
        p.error("--write-docs measures every row in this run: drop --mllib-cache (its runs come from earlier ones)")
    return args


def datasets(args):
    out = [planted_set(args.rows, noise) for noise in args.noise] if args.planted == "on" else []
    if args.movielens == "auto":
        movielens = movielens_set(args.rows)
        if movielens is None:
            print("MovieLens 100K skipped: the recbole wheel is not installed (pip install --no-deps recbole)",
                  flush=True)
        else:
            out.append(movielens)
    return out


def title_of(dataset):
    ceiling = " (planted AUC %.4f)" % dataset["ceiling"] if dataset["ceiling"] is not None else ""
    return "%s: %d train / %d test rows%s" % (dataset["name"], dataset["train_rows"], dataset["test_rows"], ceiling)


def described(dataset):
    """What a section says of a data set (JSON-able): its name, slug, noise, planted AUC, rows, the pipeline's
    time."""
    return {"name": dataset["name"], "slug": dataset["slug"], "noise": dataset.get("noise", 0),
            "ceiling": dataset["ceiling"], "pipeline_s": dataset.get("pipeline_s"),
            "train_rows": len(dataset["train"]), "test_rows": len(dataset["test"])}


def grids_of_run():
    """The settings a run used beside its options: the estimator's defaults, the previous defaults, MLlib's grids
    and the planted data's parameters."""
    from sparkps.nets.ctr_defaults import CTR_DEFAULTS
    return {"defaults": dict(CTR_DEFAULTS), "previous": PREVIOUS, "lr": LR_GRID, "fm": FM_GRID, "planted": PLANTED}


SECTIONS = ("ctr_quality_*",)


def render(run):
    """The section of a run record (pure function of it): one data set's rows, every seed's run in them."""
    data = run["data"]
    args = argparse.Namespace(**data["options"])
    if data["kind"] == "workers":
        return workers_markdown(data["dataset"], data["rows"], args, data["grids"], run["command"])
    return quality_markdown(data["dataset"], data["rows"], args, data["grids"], run["command"])


def warm_up(spark, dataset, systems):
    """One untimed small fit of each system about to be timed (sparkps: its Python workers, server processes and
    numba caches; MLlib: its one-hot pipeline and LogisticRegression's code paths), so every timed fit runs warm."""
    small = dict(dataset, train=dataset["train"].head(2000), test=dataset["test"].head(500))
    train, test = frames(spark, small)
    if "sparkps" in systems:
        sparkps_run(train, test, small, "fm", 0)
    if "mllib" in systems:
        encoded = one_hot(spark, small, train, test, (0,))
        mllib_run("lr", *encoded, 0, "default")
        for frame in encoded:
            frame.unpersist()
    train.unpersist(), test.unpersist()


def run_quality(spark, args, dataset):
    """The table's rows of one data set, the race run seed by seed: for each seed every sparkps model (and
    variant), then the PyTorch references for as many epochs as that seed's sparkps fit kept, then the MLlib
    heads; each row's runs carry their seed."""
    warm_up(spark, dataset, {"sparkps"} | ({"mllib"} if [v for v in args.mllib if v != "none"] else set()))
    train, test = frames(spark, dataset)
    rows, runs = [], {}         # runs: (model, variant, note) -> [run of each seed]
    mllib = [v for v in args.mllib if v != "none"]
    torch = args.torch_python and torch_ready(args.torch_python)
    cache = RunCache(args.mllib_cache)
    encoded = []        # the one-hot pipeline, fitted on the first run the cache does not hold
    seeds = sorted(set(args.seeds) | set(args.fm_seeds))
    pipeline_key = (dataset["slug"], len(dataset["train"]), "one-hot pipeline")

    def encode():
        if not encoded:
            started = time.perf_counter()
            encoded.extend(one_hot(spark, dataset, train, test, seeds))
            if cache.get(pipeline_key) is None:
                cache.put(pipeline_key, {"fit_s": time.perf_counter() - started})
        return encoded

    def mllib_once(kind, variant, seed):
        key = (dataset["slug"], len(dataset["train"]), kind, variant, seed, tuple(args.fm_factor_sizes))
        if cache.get(key) is None:
            cache.put(key, mllib_run(kind, *encode(), seed, variant, args.fm_factor_sizes,
                                     train_rows=len(dataset["train"])))
        return cache.get(key)

    def ran(model, variant, run, seed, note=""):
        run = dict(run, seed=seed)
        runs.setdefault((model, variant), []).append(run)
        print("%-28s %-10s %-10s seed %d: auc %s fit %.1fs %s" % (dataset["name"], model, variant, seed,
                                                                 fmt(run["auc"], ".4f"), run["fit_s"], note),
              flush=True)
        return run

    notes = {}
    for seed in args.seeds:         # a round of the race: every system once, then the next seed
        kept = {}
        for model in args.models:
            for variant in args.variants:
                run = ran("sparkps " + model, variant, sparkps_run(train, test, dataset, model, seed, variant), seed)
                if variant == "default":
                    kept[model] = run
        for model in [m for m in ("fm", "deepfm") if m in kept] if torch else []:
            epochs = max(1, int(kept[model].get("best_epoch") or kept[model]["epochs"]))   # what sparkps kept
            for embeddings, how in TORCH_VARIANTS:
                variant = "reference" if embeddings == "dense" else "sparse reference"
                notes[("PyTorch " + model, variant)] = ("as many epochs as the sparkps fit of the same seed kept, "
                                                        "every training row, one process; %s" % how)
                ran("PyTorch " + model, variant, torch_run(args.torch_python, dataset, model, epochs, seed, embeddings),
                    seed, "%d epochs" % epochs)
        for kind, name in (("lr", "MLlib LogisticRegression"), ("fm", "MLlib FMClassifier")):
            if kind not in args.mllib_models or (kind == "fm" and args.fm_seeds and seed not in args.fm_seeds):
                continue
            for variant in mllib:
                ran(name, variant, mllib_once(kind, variant, seed), seed)
    for kind, name in (("fm", "MLlib FMClassifier"),):       # FMClassifier's own seeds beyond --seeds
        for seed in [s for s in args.fm_seeds if s not in args.seeds] if kind in args.mllib_models else []:
            for variant in mllib:
                ran(name, variant, mllib_once(kind, variant, seed), seed)
    for (model, variant), model_runs in runs.items():
        chosen = sorted({setting_text(r["setting"]) for r in model_runs if "setting" in r})
        note = [notes[(model, variant)]] if (model, variant) in notes else []
        note += ["chose " + "; ".join(chosen)] if chosen else []
        if len(model_runs) != len(args.seeds):
            note.append("%d seed(s)" % len(model_runs))
        rows.append({"model": model, "variant": variant, "summary": summarise(model_runs), "note": "; ".join(note),
                     "runs": model_runs})
    if mllib:
        if cache.get(pipeline_key) is None:     # every MLlib run came from the cache: time the pipeline now
            encode()
        for frame in encoded:
            frame.unpersist()
        dataset["pipeline_s"] = cache.get(pipeline_key)["fit_s"]
    train.unpersist(), test.unpersist()
    return rows


def run_workers(spark, args, dataset):
    """Each model at its defaults with each of ``--workers`` worker counts: rows 'sparkps M' / 'N workers'."""
    train, test = frames(spark, dataset)
    rows = []
    configs = [(k, w) for k in args.kvstores for w in args.workers if k == "dist_sync" or w > 1]
    for model in args.models:
        for kvstore, workers in configs:
            runs = [dict(sparkps_run(train, test, dataset, model, seed, numWorkers=workers, kvstore=kvstore),
                         seed=seed) for seed in args.seeds]
            rows.append({"model": "sparkps " + model, "variant": "%d worker%s, %s" % (
                workers, "s" * (workers > 1), kvstore), "summary": summarise(runs), "runs": runs})
            s = rows[-1]["summary"]
            print("%-28s %-10s %-10s auc %s +- %s epochs %s fit %.1fs" % (
                dataset["name"], model, rows[-1]["variant"], fmt(s["auc"], ".4f"), fmt(s["spread"], ".4f"),
                fmt(s["epochs"], ".1f"), s["fit_s"]), flush=True)
    train.unpersist(), test.unpersist()
    for row in rows:        # the gap to the same model's fit on one worker (or the fewest workers run)
        first = next(r for r in rows if r["model"] == row["model"])
        row["note"] = "%+.4f vs %s" % (row["summary"]["auc"] - first["summary"]["auc"], first["variant"]) \
            if row is not first else ""
    return rows


def workers_markdown(dataset, rows, args, grids, command):
    lines = ["## CTR quality: workers, %s (benchmarks/bench_ctr_quality.py)" % dataset["name"], "",
             "Each model at its defaults (`SparkpsCTRClassifier(model=M, seed=S, numWorkers=N, kvstore=K)`, one "
             "server; %s) with %s workers under %s on Spark `local[%d]` (a task slot per worker, on the same 2 "
             "cores); the note is the mean AUC's gap to the same model on the fewest workers. %s %s" % (
                 defaults_text(grids["defaults"]), ", ".join(map(str, args.workers)), " and ".join(args.kvstores),
                 max([2] + args.workers),
                 data_text(args, dataset, grids), seeds_text(args)),
             ""]
    lines += table(rows, title_of(dataset)) + [""]
    lines += ["Command: `%s`" % command]
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    sets = datasets(args)
    if not sets:
        raise SystemExit("no data set to run: give --noise levels, or install recbole for MovieLens 100K")
    spark = spark_session(max([2] + args.workers))     # local[2], or a slot for each worker of --workers
    sections = []
    try:
        for dataset in sets:
            run = report.Run("bench_ctr_quality", argv)          # each data set's section records its own run
            if args.workers:
                rows = run_workers(spark, args, dataset)
                section = "ctr_quality_workers_%s_%s" % (dataset["slug"], "_".join(args.models))
            else:
                rows = run_quality(spark, args, dataset)
                section = section_name(dataset, args.section_tag)
            sections.append((dataset["name"], rows))
            data = {"options": report.options(args), "kind": "workers" if args.workers else "quality",
                    "dataset": described(dataset), "grids": grids_of_run(), "rows": rows}
            print(run.publish(args, section, data, render), flush=True)     # each data set as soon as it is done
    finally:
        spark.stop()
    report.save_json(args, "bench_ctr_quality", figures(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())

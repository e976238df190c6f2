"""CTR defaults by measurement: a sweep of each zoo model's learning rate, embedding L2, embedding width and batch
size with early stopping, in one process, over seeds, on the data sets of ``bench_ctr_quality`` (planted data at
two noise levels, MovieLens 100K from the recbole wheel).

    python -m benchmarks.ctr_sweep --rows 100000 --seeds 0,1,2 --write-docs          # every model, every data set
    python -m benchmarks.ctr_sweep --rows 5000 --models fm --data noise0 --seeds 0    # a smoke run

Each fit is the network ``SparkpsCTRClassifier`` builds (``nets.build`` with the estimator's regularisation
arguments) trained by ``FeedForward`` on the local store - what one Spark worker computes, without the Spark
stage, so a sweep of hundreds of fits takes minutes; ``bench_ctr_quality`` then checks the chosen defaults on
Spark with 2 workers, and ``--workers`` there checks 1, 2 and 4. Early stopping is the estimator's: a seeded
tenth of the training rows is held out, the validation AUC is read after every epoch, training stops once it
has not improved for ``--patience`` epochs, and the best epoch's model (dense weights and table rows) is the one
scored on the test rows.

The sweep is one axis at a time around :data:`CENTRE` (every setting of an axis with the others at the centre;
the centre has no dropout, and the dropout axis is swept for the models with a deep part only; ``--brief`` models
sweep the learning rate and dropout only).
Per model and data set the table gives each setting's mean test AUC over the seeds and its spread, the best
setting, and how far the estimator's defaults (``sparkps.nets.ctr_defaults``: the centre moved along the axes where
the sweep favoured it, fitted as one more setting) sit from it. ``--write-docs`` writes one section
of docs/benchmarks.md per data set (``ctr_sweep_<data>``, so data sets can run in separate processes);
``--json PATH`` the mean AUC of every setting.
"""
import argparse
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):     # before numpy loads its BLAS:
    os.environ.setdefault(_var, "1")     # one thread a process, so data sets can run side by side on the cores

import numpy as np  # noqa: E402

from benchmarks import report  # noqa: E402
from benchmarks.bench_ctr_quality import (  # noqa: E402
    MODELS,
    auc,
    logloss,
    movielens_set,
    one_axis_sweep,
    planted_set,
)
from benchmarks.ctr_reference import RunCache, featurised  # noqa: E402
from sparkps.nets import zoo  # noqa: E402

CENTRE = {"learningRate": 0.003, "embeddingL2": 1e-4, "embeddingDim": 8, "batchSize": 256}
AXES = {"learningRate": [0.001, 0.003, 0.01], "embeddingL2": [0.0, 1e-5, 1e-4, 1e-3],
        "embeddingDim": [4, 8, 16], "batchSize": [256, 1024], "dropout": [0.3, 0.5]}
BRIEF = {"learningRate", "dropout"}      # the axes of a --brief model
DEEP = zoo.deep_names()      # the models with a deep part (dropout's axis: these only)
HIDDEN = [64, 32]
VALIDATION = 0.1


class _Stop(Exception):
    """Raised from the epoch-end callback once the validation AUC has stopped improving."""


def _take(arrays, rows):
    return tuple(None if a is None else a[rows] for a in arrays)


def fit_once(dataset, arrays, model, setting, seed, max_epochs, patience):
    """One early-stopped fit: {auc, logloss (test, best epoch), epochs run, best_epoch, fit_s}."""
    import sparkps.nets as nets
    from sparkps.nets.ctr_fit import fit_ctr, predict_ctr
    from sparkps.spark.ml.ctr_classifier import regularisation_args
    from sparkps.train.feedforward import FeedForward
    ids, numeric, labels = arrays["train"]
    held = np.random.default_rng([seed, 11]).random(len(labels)) < VALIDATION
    spec = nets.FeatureSpec(categorical=dataset["categorical"], numeric=dataset["numeric"],
                            embedding_dim=setting["embeddingDim"], hidden_units=HIDDEN)
    build = lambda a: spec.inputs(a[0], a[1])            # noqa: E731
    fit_part, val_part, test = _take(arrays["train"], ~held), _take(arrays["train"], held), arrays["test"]
    val_inputs, test_inputs = build(val_part), build(test)
    l2 = setting["embeddingL2"]
    symbol = nets.build(model, spec, **regularisation_args(l2, setting.get("dropout", 0.0)))
    history = []

    def score(epoch, sym, arg_params, aux_params):
        scorer = FeedForward(sym, arg_params=arg_params, aux_params=aux_params)
        p_val = predict_ctr(scorer, val_inputs)
        p_test = predict_ctr(scorer, test_inputs)
        history.append({"val_auc": auc(val_part[2], p_val), "auc": auc(test[2], p_test),
                        "logloss": logloss(test[2], p_test)})
        best_at = int(np.argmax([h["val_auc"] for h in history]))
        if len(history) - 1 - best_at >= patience:
            raise _Stop

    started = time.perf_counter()
    try:
        fit_ctr(symbol, build(fit_part), fit_part[2], num_epoch=max_epochs, batch_size=setting["batchSize"],
                learning_rate=setting["learningRate"], seed=seed, epoch_end_callback=score,
                **({"wd": l2} if l2 else {}))
    except _Stop:
        pass
    best_at = int(np.argmax([h["val_auc"] for h in history]))
    return dict(history[best_at], epochs=len(history), best_epoch=best_at + 1,
                fit_s=time.perf_counter() - started)


def summary(runs):
    aucs = [r["auc"] for r in runs]
    return {"auc": float(np.mean(aucs)), "spread": float(np.ptp(aucs)),
            "logloss": float(np.mean([r["logloss"] for r in runs])),
            "epochs": float(np.mean([r["epochs"] for r in runs])),
            "best_epoch": float(np.mean([r["best_epoch"] for r in runs])),
            "fit_s": float(np.mean([r["fit_s"] for r in runs]))}


def setting_text(setting):
    return ", ".join("%s %g" % kv for kv in setting.items() if CENTRE.get(kv[0], 0.0) != kv[1]) or "centre"


def moved_axes(setting):
    """The names of the settings that differ from the centre."""
    return {k for k, v in setting.items() if CENTRE.get(k, 0.0) != v}


def defaults_setting(model):
    """The estimator's defaults as a sweep setting of ``model`` (dropout only for the models with a deep part)."""
    from sparkps.nets.ctr_defaults import CTR_DEFAULTS
    setting = {name: CTR_DEFAULTS[name] for name in CENTRE}
    if model in DEEP and CTR_DEFAULTS["dropout"]:
        setting["dropout"] = CTR_DEFAULTS["dropout"]
    return setting


def sweep_markdown(results, args):
    lines = ["## CTR defaults: one-axis sweep with early stopping, one process (benchmarks/ctr_sweep.py)", "",
             "Each zoo model (embeddingDim, hiddenUnits %s, Adam) trained by FeedForward on the local store, early "
             "stopping on the AUC of a seeded %d%% of the training rows with patience %d, up to %d epochs, the "
             "best epoch scored on the test rows; one axis at a time around the centre %s over %s. Test AUC: mean "
             "over seeds %s, spread = max - min. Data: %s." % (
                 HIDDEN, int(VALIDATION * 100), args.patience, args.max_epochs, CENTRE, AXES,
                 ", ".join(map(str, args.seeds)), "; ".join(sorted({r["data"] for r in results}))) +
             (" %s: the learning rate and dropout axes only (`--brief`)." % ", ".join(args.brief)
              if args.brief else ""), ""]
    for data in sorted({r["data"] for r in results}, key=[r["data"] for r in results].index):
        lines += ["**%s**" % data, "", "| model | setting | test AUC | spread | logloss | epochs (best) | fit (s) |",
                  "|---|---|---|---|---|---|---|"]
        verdicts = []
        for model in [m for m in args.models]:
            mine = [r for r in results if r["data"] == data and r["model"] == model]
            if not mine:
                continue
            for r in mine:
                s = r["summary"]
                lines.append("| %s | %s | %.4f | %.4f | %.4f | %.1f (%.1f) | %.1f |" % (
                    model, setting_text(r["setting"]), s["auc"], s["spread"], s["logloss"], s["epochs"],
                    s["best_epoch"], s["fit_s"]))
            top = max(mine, key=lambda r: r["summary"]["auc"])
            chosen = next(r for r in mine if r["setting"] == defaults_setting(model))
            verdicts.append("%s: best %s (%.4f); the defaults (%s) %.4f (%+.4f)" % (
                model, setting_text(top["setting"]), top["summary"]["auc"], setting_text(chosen["setting"]),
                chosen["summary"]["auc"], chosen["summary"]["auc"] - top["summary"]["auc"]))
        lines += [""] + ["- " + v for v in verdicts] + [""]
    lines += ["Command: `%s`" % report.command("ctr_sweep", report.argv_options())]
    return "\n".join(lines)


def _list(kind):
    return lambda text: [kind(v) for v in text.split(",") if v]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=100000, help="training rows (planted; MovieLens: a cap, 0: all)")
    p.add_argument("--seeds", type=_list(int), default=[0, 1, 2])
    p.add_argument("--models", type=_list(str), default=list(MODELS))
    p.add_argument("--data", type=_list(str), default=["noise0", "noise0.3", "movielens"],
                   help="noise0, noise0.3, movielens")
    p.add_argument("--axes", type=_list(str), default=list(AXES), help="the axes swept (default all)")
    p.add_argument("--max-epochs", type=int, default=10)
    p.add_argument("--patience", type=int, default=2)
    p.add_argument("--brief", type=_list(str), default=[],
                   help="models swept along the learning rate and dropout axes only (the centre and the defaults "
                        "included)")
    p.add_argument("--cache", metavar="PATH", help="a JSON file of fits: fits found there are reused, new ones added "
                   "(an interrupted sweep goes on where it stopped)")
    args = report.add_output_args(p).parse_args(argv)
    if set(args.models) - set(MODELS):
        p.error("--models: unknown %s" % sorted(set(args.models) - set(MODELS)))
    if set(args.axes) - set(AXES):
        p.error("--axes: unknown %s (known: %s)" % (sorted(set(args.axes) - set(AXES)), ", ".join(AXES)))
    return args


def load(name, rows):
    if name == "movielens":
        dataset = movielens_set(rows)
        if dataset is None:
            print("MovieLens 100K skipped: the recbole wheel is not installed (pip install --no-deps recbole)")
        return dataset
    if not name.startswith("noise"):
        raise SystemExit("--data: unknown %r (noise<level> or movielens)" % name)
    return planted_set(rows, float(name[len("noise"):]))


def main(argv=None):
    args = parse_args(argv)
    settings = one_axis_sweep(CENTRE, {a: AXES[a] for a in args.axes})
    cache = RunCache(args.cache)
    results = []
    for name in args.data:
        dataset = load(name, args.rows)
        if dataset is None:
            continue
        arrays = featurised(dataset)
        label = "%s, %d train / %d test rows" % (dataset["name"], len(dataset["train"]), len(dataset["test"]))
        for model in args.models:
            chosen = defaults_setting(model)
            mine = [s for s in settings if (model in DEEP or "dropout" not in s) and
                    (model not in args.brief or moved_axes(s) <= BRIEF)]
            for setting in mine + ([chosen] if chosen not in mine else []):
                runs = []
                for seed in args.seeds:
                    key = (dataset["slug"], len(dataset["train"]), model, sorted(setting.items()), seed,
                           args.max_epochs, args.patience)
                    if cache.get(key) is None:
                        cache.put(key, fit_once(dataset, arrays, model, setting, seed, args.max_epochs,
                                                args.patience))
                    runs.append(cache.get(key))
                row = {"data": label, "model": model, "setting": setting, "summary": summary(runs), "runs": runs}
                s = row["summary"]
                print("%-14s %-8s %-40s auc %.4f +- %.4f epochs %.1f fit %.1fs" % (
                    name, model, setting_text(setting), s["auc"], s["spread"], s["epochs"], s["fit_s"]), flush=True)
                results.append(row)
        text = sweep_markdown([r for r in results if r["data"] == label], args)
        print(text, flush=True)
        report.publish(args, "ctr_sweep_" + dataset["slug"], text)     # each data set as soon as it is done
    report.save_json(args, "ctr_sweep", {"%s %s %s" % (r["data"], r["model"], setting_text(r["setting"])):
                                         report.higher(r["summary"]["auc"], "auc") for r in results})
    return 0


if __name__ == "__main__":
    sys.exit(main())

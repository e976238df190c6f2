"""CTR defaults by measurement, on held-out AUC and fit time together: a sweep of each zoo model's learning rate,
embedding L2, embedding width, batch size (with the learning rate scaled along), held-out share, early-stopping
patience, epoch budget and dropout, one axis at a time, in one process, over seeds, on the data sets of
``bench_ctr_quality`` (planted data at two noise levels, MovieLens 100K from the recbole wheel).

    python -m benchmarks.ctr_sweep --rows 100000 --seeds 0,1,2 --write-docs          # every model, every data set
    python -m benchmarks.ctr_sweep --rows 5000 --models fm --data noise0 --seeds 0    # a smoke run

Each fit is the network ``SparkpsCTRClassifier`` builds (``nets.build`` with the estimator's regularisation
arguments) trained by ``FeedForward`` on the local store - what one Spark worker computes, without the Spark
stage, so a sweep of hundreds of fits takes minutes; ``bench_ctr_quality`` then checks the chosen defaults on
Spark with 2 workers, and ``--workers`` there checks 1, 2 and 4. Early stopping is the estimator's: a seeded share
of the training rows (``validationFraction``) is held out, the validation AUC is read after every epoch, training
stops once it has not improved for ``earlyStoppingPatience`` epochs or after ``numEpochs``, and the best epoch's
model (dense weights and table rows) is the one scored on the test rows.

The sweep is one axis at a time around the centre (:data:`CENTRE`; the models with a deep part add dropout 0.5,
and only they sweep the dropout axis; ``--brief`` models sweep the learning rate and dropout only). Along the
batch-size axis the learning rate follows the batch: ``lr x sqrt(batch / 256)`` (:func:`scaled_lr`). The square
root, not the linear rule: the optimizer is Adam, whose step is normalised by the gradient's second moment, so a
batch k times larger lowers the gradient noise by sqrt(k) and the square-root rule keeps the update's noise scale
(the linear rule is the one for plain SGD, whose step is not normalised; at 8192 rows it would be 32 times the
centre's rate). ``--combine`` can name a learning rate of its own to try another factor.
A fit's history is kept per epoch (validation and test AUC, the seconds spent until then), so the settings that
differ only in patience and epoch budget are read from one fit run with the largest of each
(:func:`early_stopped`): the stop rule replayed on the history gives the same epochs, best epoch and time as a fit
run with them. Each model is warmed up by a throw-away epoch first (:func:`warm_up`). The fit time is the CPU
seconds of the process (one BLAS thread, so about the wall time of an idle core; the wall seconds, shown beside
them, swing with whatever else the machine runs); it leaves out the scoring of the test rows after every epoch (the
estimator does not score them) and includes the validation scoring, which the estimator does. On the local store a
batch costs no round trip, so the time a larger batch saves on Spark, where every batch pulls and pushes through
the servers, is larger than the sweep shows.

Settings are chosen as MLlib's are tuned: on rows held out of training, never on the test rows. Per model and data
set the table gives each setting's mean held-out AUC over the seeds (the AUC of the held-out share of the training
rows at the best epoch, which early stopping also reads), its mean test AUC and spread, the epochs run, and the mean
fit time. The verdicts read the held-out AUC only: the best setting, the fastest setting within :data:`TOLERANCE`
held-out AUC of it, and the estimator's defaults (``sparkps.nets.ctr_defaults``, fitted as one more setting when
they are not swept); a closing line names the fastest setting that is within the tolerance of the best for every
model (the defaults are shared). ``--write-docs`` writes one section of docs/benchmarks.md per data set
(``ctr_sweep_<data>``, so data sets can run in separate processes); ``--json PATH`` the mean AUC of every setting.
``--cache`` keeps fits by the code that made them (:func:`code_version`): an edit of any measured file starts anew.
"""
import argparse
import math
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

CENTRE = {"learningRate": 0.003, "embeddingL2": 1e-4, "embeddingDim": 8, "batchSize": 256,
          "validationFraction": 0.1, "earlyStoppingPatience": 2, "numEpochs": 10}
DEEP_DROPOUT = 0.5      # the centre's dropout for the models with a deep part
AXES = {"learningRate": [0.001, 0.003, 0.01], "embeddingL2": [0.0, 1e-5, 1e-4, 1e-3],
        "embeddingDim": [4, 8, 16], "batchSize": [256, 1024, 2048, 4096, 8192],
        "validationFraction": [0.05, 0.1, 0.2], "earlyStoppingPatience": [1, 2, 3], "numEpochs": [5, 10, 20],
        "dropout": [0.0, 0.3, 0.5]}
BRIEF = {"learningRate", "dropout"}      # the axes of a --brief model
STOPPING = ("earlyStoppingPatience", "numEpochs")     # read from one fit's history (early_stopped)
DEEP = zoo.deep_names()      # the models with a deep part (dropout's axis: these only)
HIDDEN = [64, 32]
TOLERANCE = 0.002       # held-out AUC a faster setting may give up against the best


def scaled_lr(learning_rate, batch, base=256):
    """The learning rate for ``batch`` rows a step when ``learning_rate`` suits ``base`` rows: times
    sqrt(batch / base) (Adam's square-root rule), to 4 significant digits."""
    if batch <= 0 or base <= 0:
        raise ValueError("batch sizes must be positive: batch %r, base %r" % (batch, base))
    return float("%.4g" % (learning_rate * math.sqrt(batch / base)))


def centre_for(model):
    """The centre of ``model``'s sweep: :data:`CENTRE`, with dropout for a model with a deep part."""
    return dict(CENTRE, dropout=DEEP_DROPOUT) if model in DEEP else dict(CENTRE)


def settings_for(model, axes, brief=False, max_epochs=None):
    """The settings swept for ``model``: one axis of ``axes`` at a time around its centre (dropout only for a
    model with a deep part; ``brief``: the :data:`BRIEF` axes only), the learning rate scaled along the batch-size
    axis, every epoch budget capped at ``max_epochs`` (None: no cap); each setting once."""
    centre = centre_for(model)
    swept = {a: AXES[a] for a in axes if (a != "dropout" or model in DEEP) and (not brief or a in BRIEF)}
    out = []
    for setting in one_axis_sweep(centre, swept):
        if setting["batchSize"] != centre["batchSize"]:
            setting["learningRate"] = scaled_lr(centre["learningRate"], setting["batchSize"], centre["batchSize"])
        setting = capped(setting, max_epochs)
        if setting not in out:
            out.append(setting)
    return out


def combined(model, moves, max_epochs=None):
    """The setting of ``model`` at its centre moved by ``moves`` ({param: value}, several axes at once): the
    learning rate scaled with the batch unless ``moves`` names one; dropout ignored for a model without a deep
    part. ValueError naming a param the sweep does not know."""
    unknown = sorted(set(moves) - set(AXES))
    if unknown:
        raise ValueError("a combined setting names %s, not a swept param (known: %s)" % (unknown, ", ".join(AXES)))
    centre = centre_for(model)
    setting = dict(centre, **{k: v for k, v in moves.items() if k in centre})
    if "learningRate" not in moves and setting["batchSize"] != centre["batchSize"]:
        setting["learningRate"] = scaled_lr(centre["learningRate"], setting["batchSize"], centre["batchSize"])
    return capped(setting, max_epochs)


def _moves(text):
    """``--combine``'s value: ``name=value,name=value`` as {name: number}."""
    try:
        moves = {name.strip(): float(value) for name, value in (part.split("=") for part in text.split(",") if part)}
    except ValueError:
        raise argparse.ArgumentTypeError("%r: expected name=value,name=value" % text) from None
    return {k: int(v) if k in ("batchSize", "embeddingDim", "earlyStoppingPatience", "numEpochs") else v
            for k, v in moves.items()}


def capped(setting, max_epochs):
    return dict(setting, numEpochs=min(setting["numEpochs"], max_epochs)) if max_epochs else setting


class _Stop(Exception):
    """Raised from the epoch-end callback once the validation AUC has stopped improving."""


def _take(arrays, rows):
    return tuple(None if a is None else a[rows] for a in arrays)


def early_stopped(history, patience, max_epochs):
    """The early-stopped fit ``history`` (a list of per-epoch {val_auc, auc, logloss, fit_s, wall_s}: CPU and wall
    seconds since the fit began) holds for ``patience`` and an epoch budget of ``max_epochs``: {auc, logloss of the
    best epoch, epochs run, best_epoch, fit_s and wall_s at the stop}. The rule is the estimator's: stop after an
    epoch ``patience`` epochs past the best validation AUC (the first of equals), or after ``max_epochs``.
    ValueError when the history ends before the rule stops (it was run with a smaller patience or budget)."""
    best = 0
    for epoch, h in enumerate(history[:max_epochs], 1):
        if h["val_auc"] > history[best]["val_auc"]:
            best = epoch - 1
        if epoch - 1 - best >= patience or epoch == max_epochs:
            return {"val_auc": history[best]["val_auc"], "auc": history[best]["auc"],
                    "logloss": history[best]["logloss"], "epochs": epoch, "best_epoch": best + 1,
                    "fit_s": h["fit_s"], "wall_s": h.get("wall_s", h["fit_s"])}
    raise ValueError("the fit's history ends at epoch %d before patience %d or a budget of %d epochs stops it"
                     % (len(history), patience, max_epochs))


def fit_once(dataset, arrays, model, setting, seed, max_epochs, patience):
    """One early-stopped fit of ``setting`` (its own patience and epoch budget are ignored: ``patience`` and
    ``max_epochs`` are used) and its history: [{val_auc, auc, logloss (test), fit_s and wall_s (CPU and wall
    seconds until the epoch's end, without the test scoring)}] per epoch run."""
    import sparkps.nets as nets
    from sparkps.nets.ctr_fit import fit_ctr, predict_ctr
    from sparkps.spark.ml.ctr_classifier import regularisation_args
    from sparkps.train.feedforward import FeedForward
    ids, numeric, labels = arrays["train"]
    held = np.random.default_rng([seed, 11]).random(len(labels)) < setting["validationFraction"]
    spec = nets.FeatureSpec(categorical=dataset["categorical"], numeric=dataset["numeric"],
                            embedding_dim=setting["embeddingDim"], hidden_units=HIDDEN)
    build = lambda a: spec.inputs(a[0], a[1])            # noqa: E731
    fit_part, val_part, test = _take(arrays["train"], ~held), _take(arrays["train"], held), arrays["test"]
    val_inputs, test_inputs = build(val_part), build(test)
    l2 = setting["embeddingL2"]
    symbol = nets.build(model, spec, **regularisation_args(l2, setting.get("dropout", 0.0)))
    history, scoring = [], [0.0, 0.0]      # CPU, wall seconds of the test scoring

    def score(epoch, sym, arg_params, aux_params):
        scorer = FeedForward(sym, arg_params=arg_params, aux_params=aux_params)
        val_auc = auc(val_part[2], predict_ctr(scorer, val_inputs))
        cpu, wall = time.process_time(), time.perf_counter()
        p_test = predict_ctr(scorer, test_inputs)
        history.append({"val_auc": val_auc, "auc": auc(test[2], p_test), "logloss": logloss(test[2], p_test),
                        "fit_s": cpu - started[0] - scoring[0], "wall_s": wall - started[1] - scoring[1]})
        scoring[0] += time.process_time() - cpu
        scoring[1] += time.perf_counter() - wall
        best_at = int(np.argmax([h["val_auc"] for h in history]))
        if len(history) - 1 - best_at >= patience:
            raise _Stop

    started = (time.process_time(), time.perf_counter())
    try:
        fit_ctr(symbol, build(fit_part), fit_part[2], num_epoch=max_epochs, batch_size=setting["batchSize"],
                learning_rate=setting["learningRate"], seed=seed, epoch_end_callback=score,
                **({"wd": l2} if l2 else {}))
    except _Stop:
        pass
    return history


def warm_up(dataset, arrays, model):
    """One epoch of ``model`` on the first 2,000 training rows, thrown away: the process's first fit loads (or
    compiles) the numba kernels of the sparse batches, seconds that belong to no setting's fit time."""
    first = lambda part, n: _take(arrays[part], np.arange(min(n, len(arrays[part][2]))))     # noqa: E731
    fit_once(dataset, dict(arrays, train=first("train", 2000), test=first("test", 500)), model, centre_for(model),
             0, 1, 1)


def summary(runs):
    aucs = [r["auc"] for r in runs]
    return {"val_auc": float(np.mean([r["val_auc"] for r in runs])),
            "auc": float(np.mean(aucs)), "spread": float(np.ptp(aucs)),
            "logloss": float(np.mean([r["logloss"] for r in runs])),
            "epochs": float(np.mean([r["epochs"] for r in runs])),
            "best_epoch": float(np.mean([r["best_epoch"] for r in runs])),
            "fit_s": float(np.mean([r["fit_s"] for r in runs])),
            "wall_s": float(np.mean([r.get("wall_s", r["fit_s"]) for r in runs]))}


def best_held_out(rows):
    """The row of ``rows`` with the best mean held-out AUC (``summary["val_auc"]``; ties: the first): the test AUC is
    never read to choose."""
    return max(rows, key=lambda r: r["summary"]["val_auc"])


def fastest_within(rows, tolerance=TOLERANCE):
    """The row of ``rows`` (each with a ``summary``: mean val_auc, mean fit_s) with the shortest mean fit time among
    those within ``tolerance`` of the best mean held-out AUC (ties: the first)."""
    if not rows:
        raise ValueError("no settings to choose from")
    best = best_held_out(rows)["summary"]["val_auc"]
    near = [r for r in rows if r["summary"]["val_auc"] >= best - tolerance - 1e-12]
    return min(near, key=lambda r: r["summary"]["fit_s"])


def fastest_for_all(rows_by_model, tolerance=TOLERANCE):
    """Among the settings (by their text) every model of ``rows_by_model`` ({model: rows with ``text`` and
    ``summary``}) was fitted with, those within ``tolerance`` of each model's best mean held-out AUC: the one with the
    shortest fit time summed over the models, as (text, summed seconds); None when no setting qualifies."""
    qualified = None
    for rows in rows_by_model.values():
        best = best_held_out(rows)["summary"]["val_auc"]
        near = {r["text"]: r["summary"]["fit_s"] for r in rows
                if r["summary"]["val_auc"] >= best - tolerance - 1e-12}
        qualified = near if qualified is None else {t: s + near[t] for t, s in qualified.items() if t in near}
    if not qualified:
        return None
    text = min(qualified, key=qualified.get)
    return text, qualified[text]


def setting_text(setting, centre=None):
    """``setting`` as the names and values where it differs from ``centre`` (default :data:`CENTRE`)."""
    centre = CENTRE if centre is None else centre
    return ", ".join("%s %g" % kv for kv in setting.items() if centre.get(kv[0], 0.0) != kv[1]) or "centre"


def defaults_setting(model, max_epochs=None):
    """The estimator's defaults as a sweep setting of ``model`` (dropout only for the models with a deep part)."""
    from sparkps.nets.ctr_defaults import CTR_DEFAULTS
    setting = {name: CTR_DEFAULTS[name] for name in CENTRE}
    if model in DEEP:
        setting["dropout"] = CTR_DEFAULTS["dropout"]
    return capped(setting, max_epochs)


def _row_text(r):
    s = r["summary"]
    return "%s (held-out %.4f, test %.4f, %.2f s)" % (r["text"], s["val_auc"], s["auc"], s["fit_s"])


SECTIONS = ("ctr_sweep_*",)


def render(run):
    """The section of a run record (pure function of it): one data set's rows, every seed's fit in them, and the
    sweep's settings as they ran (centre, axes, tolerance, the estimator's defaults of each model)."""
    data = run["data"]
    return sweep_markdown(data["rows"], argparse.Namespace(**data["options"]), data["constants"], run["command"])


def constants_of_run(args):
    """The sweep's settings beside its options: centre, axes, deep dropout, hidden units, tolerance, and each
    model's defaults setting."""
    return {"hidden": HIDDEN, "centre": CENTRE, "deep_dropout": DEEP_DROPOUT, "axes": AXES, "tolerance": TOLERANCE,
            "defaults": {model: defaults_setting(model, args.max_epochs) for model in args.models}}


def sweep_markdown(results, args, constants, command):
    centre, tolerance = constants["centre"], constants["tolerance"]
    lines = ["## CTR defaults: one-axis sweep of AUC and fit time with early stopping, one process "
             "(benchmarks/ctr_sweep.py)", "",
             "Each zoo model (hiddenUnits %s, Adam) trained by FeedForward on the local store, early stopping on the "
             "AUC of a seeded held-out share of the training rows, the best epoch scored on the test rows; settings "
             "are chosen by that held-out AUC alone (the test AUC is reported, never read to choose); one axis "
             "at a time around the centre %s (the models with a deep part: dropout %g) over %s; along the batch "
             "axis the learning rate is %g x sqrt(batch / %d)%s. Test AUC: mean over seeds %s, spread = max - min; "
             "fit: mean CPU and wall seconds of a fit (the test scoring after each epoch left out; the verdicts weigh "
             "CPU seconds). Data: %s." % (
                 constants["hidden"], centre, constants["deep_dropout"], {a: constants["axes"][a] for a in args.axes},
                 centre["learningRate"], centre["batchSize"],
                 "; epoch budgets capped at %d" % args.max_epochs if args.max_epochs else "",
                 ", ".join(map(str, args.seeds)), "; ".join(sorted({r["data"] for r in results}))) +
             (" %s: the learning rate and dropout axes only (`--brief`)." % ", ".join(args.brief)
              if args.brief else ""), ""]
    for data in sorted({r["data"] for r in results}, key=[r["data"] for r in results].index):
        lines += ["**%s**" % data, "", "| model | setting | held-out AUC | test AUC | spread | logloss | epochs (best) "
                  "| fit CPU (s) | fit wall (s) |", "|---|---|---|---|---|---|---|---|---|"]
        verdicts, by_model = [], {}
        for model in args.models:
            mine = [r for r in results if r["data"] == data and r["model"] == model]
            if not mine:
                continue
            by_model[model] = mine
            for r in mine:
                s = r["summary"]
                lines.append("| %s | %s | %.4f | %.4f | %.4f | %.4f | %.1f (%.1f) | %.2f | %.2f |" % (
                    model, r["text"], s["val_auc"], s["auc"], s["spread"], s["logloss"], s["epochs"],
                    s["best_epoch"], s["fit_s"], s["wall_s"]))
            top = best_held_out(mine)
            quick = fastest_within(mine, tolerance)
            chosen = next(r for r in mine if r["setting"] == constants["defaults"][model])
            verdicts.append("%s: best by held-out AUC %s; fastest within %g of it %s; the defaults %s, %+.4f "
                            "held-out" % (model, _row_text(top), tolerance, _row_text(quick), _row_text(chosen),
                                          chosen["summary"]["val_auc"] - top["summary"]["val_auc"]))
        common = fastest_for_all(by_model, tolerance)
        verdicts.append("every model (%s): the fastest setting within %g of each one's best held-out AUC: %s" % (
            ", ".join(by_model), tolerance, "%s (%.2f s summed)" % common if common else "none"))
        lines += [""] + ["- " + v for v in verdicts] + [""]
    lines += ["Command: `%s`" % command]
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
    p.add_argument("--axes", type=_list(str), default=list(AXES), help="the axes swept (default all: %s)"
                   % ", ".join(AXES))
    p.add_argument("--max-epochs", type=int, default=None,
                   help="caps every setting's epoch budget (default: no cap; a smoke run's shortcut)")
    p.add_argument("--combine", type=_moves, action="append", default=[], metavar="NAME=V,NAME=V",
                   help="a setting moved along several axes at once, fitted for every model beside the one-axis "
                        "sweep (the learning rate scaled with the batch unless named); repeatable")
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
    for moves in args.combine:
        if set(moves) - set(AXES):
            p.error("--combine: unknown %s (known: %s)" % (sorted(set(moves) - set(AXES)), ", ".join(AXES)))
    if args.max_epochs is not None and args.max_epochs < 1:
        p.error("--max-epochs: at least 1, not %d" % args.max_epochs)
    if args.write_docs and args.cache:
        p.error("--write-docs measures every fit in this run: drop --cache (its fits come from earlier runs)")
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


def trajectory(setting):
    """What one fit's history depends on: the setting without its patience and epoch budget."""
    return tuple(sorted((k, v) for k, v in setting.items() if k not in STOPPING))


def code_version():
    """The SHA-256 (16 hex digits) of every file under sparkps/ and benchmarks/ this module imports: the key a cached
    fit is kept under, so fits of an earlier code are never mixed into a section."""
    import hashlib
    digest = hashlib.sha256()
    for path in report.measured_files("ctr_sweep"):
        digest.update(path.encode() + b"\0")
        with open(os.path.join(report.ROOT, path), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def main(argv=None):
    args = parse_args(argv)
    cache, code = RunCache(args.cache), code_version()
    results = []
    for name in args.data:
        run = report.Run("ctr_sweep", argv)          # each data set's section records its own run
        dataset = load(name, args.rows)
        if dataset is None:
            continue
        arrays = featurised(dataset)
        label = "%s, %d train / %d test rows" % (dataset["name"], len(dataset["train"]), len(dataset["test"]))
        for model in args.models:
            chosen = defaults_setting(model, args.max_epochs)
            mine = settings_for(model, args.axes, model in args.brief, args.max_epochs)
            for moves in args.combine:
                mine += [s for s in [combined(model, moves, args.max_epochs)] if s not in mine]
            mine += [chosen] if chosen not in mine else []
            reach = {}      # trajectory -> (patience, epochs): the most any setting on it needs
            for s in mine:
                p, e = reach.get(trajectory(s), (0, 0))
                reach[trajectory(s)] = (max(p, s["earlyStoppingPatience"]), max(e, s["numEpochs"]))
            warm = False
            for setting in mine:
                patience, epochs = reach[trajectory(setting)]
                runs = []
                for seed in args.seeds:
                    key = (code, dataset["slug"], len(dataset["train"]), model, trajectory(setting), seed, epochs,
                           patience)
                    if cache.get(key) is None:
                        if not warm:
                            warm_up(dataset, arrays, model)
                            warm = True
                        cache.put(key, fit_once(dataset, arrays, model, setting, seed, epochs, patience))
                    runs.append(early_stopped(cache.get(key), setting["earlyStoppingPatience"],
                                              setting["numEpochs"]))
                row = {"data": label, "model": model, "setting": setting, "summary": summary(runs), "runs": runs,
                       "text": setting_text(setting, capped(centre_for(model), args.max_epochs))}
                s = row["summary"]
                print("%-14s %-8s %-40s held-out auc %.4f test auc %.4f +- %.4f epochs %.1f fit %.2fs" % (
                    name, model, row["text"], s["val_auc"], s["auc"], s["spread"], s["epochs"], s["fit_s"]),
                    flush=True)
                results.append(row)
        data = {"options": report.options(args), "constants": constants_of_run(args),
                "rows": [r for r in results if r["data"] == label]}
        print(run.publish(args, "ctr_sweep_" + dataset["slug"], data, render), flush=True)     # each as it is done
    report.save_json(args, "ctr_sweep", {"%s %s %s" % (r["data"], r["model"], r["text"]):
                                         report.higher(r["summary"]["auc"], "auc") for r in results})
    return 0


if __name__ == "__main__":
    sys.exit(main())

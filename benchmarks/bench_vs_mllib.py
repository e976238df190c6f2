"""Time to accuracy: sparkps (2 workers + 1 server, dist_sync) against Spark MLlib's MultilayerPerceptronClassifier.

Same generated data, same run, Spark local[2]. The data is synthetic: scikit-learn's
``make_classification`` (70000 x 784, 10 classes, 64 informative + 64 redundant features, 3 clusters per class,
class_sep 2.0, random_state 0), standardised with the training mean/std; 60k train / 10k test. MLP 784-128-64-10.

The networks differ where MLlib gives no choice: MLlib's MultilayerPerceptronClassifier has sigmoid hidden layers
and a softmax output and computes in float64 (Breeze doubles); sparkps computes in float32 and runs its usual
ReLU MLP and, as the closest configuration to MLlib's, the same MLP with sigmoid hidden layers
(``--activations``, default both). The section names each row's activations and precision.

The two trainers take passes of different kinds (sparkps: SGD epochs of mini-batches; MLlib: L-BFGS
iterations, each a full pass over the data for the gradient), and by default they run very different
numbers of them. So the benchmark does not compare one fit of each: it fits each side several times, sparkps
for 1..``--epochs`` epochs and MLlib for each of ``--mllib-iters`` maxIter values, every fit from scratch and
timed from ``fit`` call to return, and reports for every fit the wall time and the test accuracy (time to
accuracy, one plot), plus the cost of one pass on each side (the slope of fit time over passes, so fixed
start-up costs are left out). MLlib's maxIter values default to sparkps's budget in optimizer updates: each epoch
count times the dist_sync updates of an epoch. The series run in ``--repeats`` rounds (at least 3), each running
every series once in the same order, and the tables give medians over the rounds with the fit times' spread.
Also sparkps' training samples/s against a single-process numpy loop doing
the same math (forward, backward, SGD step) on the whole machine.

    python -m benchmarks.bench_vs_mllib --write-docs                    # full run (MLlib takes minutes)
    python -m benchmarks.bench_vs_mllib --mllib-iters 5,10,20           # a shorter MLlib side, printed only
    python -m benchmarks.bench_vs_mllib --quick --epochs 1              # sparkps and numpy only
    python -m benchmarks.bench_vs_mllib --activations sigmoid --mllib-iters 5,10   # MLlib's activation only

Inputs are cached as float32 blocks per partition (sparkps) and as a cached DataFrame (MLlib) before the
clocks start, so both timings are training only.
"""
import argparse
import os
import sys
import time

import numpy as np

from benchmarks import report

LAYERS = [784, 128, 64, 10]
WORKERS = 2
SECTIONS = ("vs_mllib",)
ACTIVATIONS = ("relu", "sigmoid")      # sparkps's usual hidden activation and MLlib's only one
MLLIB_NET = "sigmoid hidden, softmax output, float64"
SPARKPS = dict(batch_size=512, optimizer="sgd",
               optimizer_params={"learning_rate": 0.2, "momentum": 0.9, "wd": 1e-4})


def dataset(samples=70000):
    """(X_train, y_train, X_test, y_test) float32, standardised with the training mean/std; a seventh of
    ``samples`` are the test rows."""
    from sklearn.datasets import make_classification
    X, y = make_classification(n_samples=samples, n_features=784, n_informative=64, n_redundant=64, n_classes=10,
                               n_clusters_per_class=3, class_sep=2.0, random_state=0)
    train = samples - samples // 7
    X_train, X_test, y_train, y_test = X[:train], X[train:], y[:train], y[train:]
    mean, std = X_train.mean(axis=0), X_train.std(axis=0) + 1e-8
    f32 = np.float32
    return (((X_train - mean) / std).astype(f32), y_train.astype(f32),
            ((X_test - mean) / std).astype(f32), y_test.astype(f32))


def spark_session():
    return report.local_spark("bench_vs_mllib", "6g")


def sparkps_net(activation):
    """How a sparkps row's network computes: its hidden activation, softmax output, float32."""
    return "%s hidden, softmax output, float32" % activation


def sparkps_contender(spark, X_train, y_train, X_test, y_test, activation="relu"):
    """(fit, close) of a sparkps series on cached float32 blocks, hidden layers of ``activation``, after an untimed
    1-epoch warm-up fit: ``fit(num_epoch)`` fits from scratch and returns {passes, seconds, accuracy,
    samples_per_s, steady_samples_per_s}. Blocks on every fit."""
    from sparkps.nets.mlp import mlp_symbol
    from sparkps.spark import SparkTrainer
    blocks = [(X, y) for X, y in zip(np.array_split(X_train, 8), np.array_split(y_train, 8))]
    rdd = spark.sparkContext.parallelize(blocks, 2).cache()
    rdd.count()

    def make_trainer(num_epoch):
        return SparkTrainer(mlp_symbol(LAYERS, activation=activation), (LAYERS[0],), num_workers=WORKERS,
                            num_servers=1, kvstore="dist_sync", progress=False, eval_metric="acc",
                            **dict(SPARKPS, num_epoch=num_epoch))
    make_trainer(1).fit(rdd)         # untimed warm-up, as MLlib's side gets one

    def fit(num_epoch):
        trainer = make_trainer(num_epoch)
        started = time.perf_counter()
        model = trainer.fit(rdd)
        seconds = time.perf_counter() - started
        accuracy = float((model.predict_numpy(X_test).argmax(axis=1) == y_test).mean())
        print(f"sparkps {activation} {num_epoch} epoch(s): {seconds:.1f} s, accuracy {accuracy:.4f}", flush=True)
        return {"passes": num_epoch, "seconds": seconds, "accuracy": accuracy,
                "samples_per_s": len(X_train) * num_epoch / seconds,
                "steady_samples_per_s": trainer.last_fit["steady_samples_per_s"]}
    return fit, rdd.unpersist


def mllib_contender(spark, X_train, y_train, X_test, y_test):
    """(fit, close) of MultilayerPerceptronClassifier on a cached DataFrame, after an untimed 1-iteration warm-up
    fit: ``fit(max_iter)`` fits from scratch and returns {passes, seconds, accuracy} (``passes`` is maxIter:
    L-BFGS may stop earlier on convergence)."""
    from pyspark.ml.classification import MultilayerPerceptronClassifier
    from pyspark.ml.linalg import Vectors

    def frame(X, y, parts):
        rows = [(Vectors.dense(x.astype(np.float64)), float(label)) for x, label in zip(X, y)]
        return spark.createDataFrame(rows, ["features", "label"]).repartition(parts).cache()
    train_df, test_df = frame(X_train, y_train, 2), frame(X_test, y_test, 2)
    train_df.count(), test_df.count()
    MultilayerPerceptronClassifier(layers=LAYERS, maxIter=1, seed=0).fit(train_df)   # untimed warm-up

    def fit(max_iter):
        mlp = MultilayerPerceptronClassifier(layers=LAYERS, maxIter=max_iter, seed=0)
        started = time.perf_counter()
        model = mlp.fit(train_df)
        seconds = time.perf_counter() - started
        scored = model.transform(test_df).select("label", "prediction").collect()
        accuracy = float(np.mean([r.label == r.prediction for r in scored]))
        print(f"MLlib maxIter={max_iter}: {seconds:.1f} s, accuracy {accuracy:.4f}", flush=True)
        return {"passes": max_iter, "seconds": seconds, "accuracy": accuracy}

    def close():
        train_df.unpersist(), test_df.unpersist()
    return fit, close


def rounds_per_epoch(train_rows):
    """sparkps's optimizer updates in one epoch: dist_sync averages the workers' gradients into one update a
    round, each worker taking a batch of its half of the rows."""
    return -(-train_rows // (SPARKPS["batch_size"] * WORKERS))


def combined(fits):
    """One fit per pass count from ``fits`` (every round's): median seconds with their min and max, median
    accuracy and throughputs, and every round's seconds (``runs``), in the order the pass counts ran."""
    out = []
    for passes in dict.fromkeys(f["passes"] for f in fits):
        same = [f for f in fits if f["passes"] == passes]
        row = {key: float(np.median([f[key] for f in same])) for key in same[0]
               if key not in ("passes", "round") and all(f[key] is not None for f in same)}
        row.update(passes=passes, runs=[f["seconds"] for f in same], seconds_min=min(f["seconds"] for f in same),
                   seconds_max=max(f["seconds"] for f in same))
        out.append(row)
    return out


def seconds_per_pass(fits):
    """Least-squares slope of (median) fit seconds over passes (None with fewer than two distinct pass counts)."""
    passes = np.array([f["passes"] for f in fits], float)
    if len(set(passes)) < 2:
        return None
    return float(np.polyfit(passes, [f["seconds"] for f in fits], 1)[0])


def best_within(fits, accuracy):
    """The fastest fit reaching ``accuracy`` (None when none does)."""
    reached = [f for f in fits if f["accuracy"] >= accuracy]
    return min(reached, key=lambda f: f["seconds"]) if reached else None


def numpy_loop_samples_per_s(X, y, batch_size=None, seconds=10.0):
    """Samples/s of a plain numpy MLP training loop (ReLU hidden layers, float32, one process, BLAS on every core),
    the math of the sparkps relu rows."""
    batch_size = batch_size or SPARKPS["batch_size"]
    rng = np.random.default_rng(0)
    sizes = LAYERS
    W = [(rng.standard_normal((o, i)) * np.sqrt(2.0 / i)).astype(np.float32) for i, o in zip(sizes, sizes[1:])]
    b = [np.zeros(o, np.float32) for o in sizes[1:]]
    vW, vb = [np.zeros_like(w) for w in W], [np.zeros_like(v) for v in b]
    lr, mom = 0.05, 0.9
    onehot = np.eye(10, dtype=np.float32)
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        start = (steps * batch_size) % (len(X) - batch_size)
        xb, yb = X[start:start + batch_size], y[start:start + batch_size].astype(np.int64)
        acts = [xb]
        for k in range(len(W)):
            z = acts[-1] @ W[k].T + b[k]
            acts.append(np.maximum(z, 0) if k < len(W) - 1 else z)
        z = acts[-1] - acts[-1].max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        grad = (p - onehot[yb]) / batch_size
        for k in reversed(range(len(W))):
            gW, gb = grad.T @ acts[k], grad.sum(axis=0)
            if k:
                grad = (grad @ W[k]) * (acts[k] > 0)
            vW[k] = mom * vW[k] - lr * gW
            vb[k] = mom * vb[k] - lr * gb
            W[k] += vW[k]
            b[k] += vb[k]
        steps += 1
    return steps * batch_size / (time.perf_counter() - started)


SERIES = {"relu": ("sparkps relu", "tab:blue"), "sigmoid": ("sparkps sigmoid", "tab:green")}


def plot(results, path):
    """Test accuracy against fit wall time, one point per fit, every trainer on one chart."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    lines = [(name, color, "ep", "%s (SGD epochs, %s)" % (name, sparkps_net(activation)))
             for activation, (name, color) in SERIES.items()]
    lines.append(("MLlib", "tab:orange", "it", "MLlib MLP (L-BFGS maxIter, %s)" % MLLIB_NET))
    for name, color, unit, label in lines:
        fits = results.get(name) or []
        if not fits:
            continue
        ax.plot([f["seconds"] for f in fits], [f["accuracy"] for f in fits], marker="o", color=color, label=label)
        for f in fits:
            ax.annotate(f"{f['passes']} {unit}", (f["seconds"], f["accuracy"]), fontsize=7,
                        textcoords="offset points", xytext=(3, -9))
    ax.set(xscale="log", xlabel="fit wall time (s, log scale)", ylabel="test accuracy",
           title="time to accuracy (generated data, Spark local[2])")
    ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def sparkps_series(results):
    """[(activation, row name, fits)] of the sparkps series this run has, ReLU first."""
    return [(activation, name, results[name]) for activation, (name, _) in SERIES.items() if results.get(name)]


def spread(f):
    return f"{f['seconds']:.1f} [{f['seconds_min']:.1f}–{f['seconds_max']:.1f}]"


def render(run):
    """The section of a run record (pure function of it): every round's fits are in it; the tables give, per pass
    count, the median over the rounds with the spread of the fit times."""
    data = run["data"]
    results = {name: combined(fits) for name, fits in data["fits"].items()}
    return report_text(results, data, argparse.Namespace(**data["options"]), run)


def report_text(results, data, args, run):
    """The section's markdown: every fit's time and accuracy with its network, the cost of a pass, time to MLlib's
    best accuracy for each sparkps series, and the ReLU series' throughput against the numpy loop."""
    series, ml = sparkps_series(results), results.get("MLlib") or []
    train, test = data["rows"]
    numpy_rate = max(data["numpy_rates"])
    lines = ["**Generated data**, not a real data set: scikit-learn `make_classification` "
             f"({train + test} x 784, 10 classes, 64 informative + 64 redundant features, 3 clusters per class, "
             f"class_sep 2.0, random_state 0), standardised; {train} train / {test} test. Spark `local[2]`, MLP "
             f"784-128-64-10, inputs cached before timing. sparkps: {WORKERS} workers + 1 server, dist_sync, batch "
             f"{SPARKPS['batch_size']}, {SPARKPS['optimizer']} {SPARKPS['optimizer_params']}, one fit per epoch "
             "count. MLlib: MultilayerPerceptronClassifier (L-BFGS, defaults), one fit per maxIter. **The same "
             f"budget in optimizer updates**: an epoch is {data['rounds_per_epoch']} dist_sync updates (a batch "
             "from each worker, averaged), so MLlib's maxIter values are the sparkps epoch counts times that unless "
             "`--mllib-iters` sets them. Every fit starts from scratch and is timed from `fit` to its return. Both "
             "sides get one untimed warm-up fit first (each sparkps series 1 epoch, MLlib maxIter 1). "
             f"**Interleaved**: {args.repeats} rounds, each running every series once in the same order "
             "(ABAB...); the tables give the median over the rounds, fit times with their [min–max] spread.",
             "", "**The networks are not identical.** MLlib's MLP has sigmoid hidden layers and a softmax output "
             "and computes in float64 (it offers no other activation or precision); sparkps computes in float32. "
             "The *sparkps sigmoid* rows are MLlib's configuration as close as sparkps gets (same activations, "
             "float32, the same SGD settings as the ReLU rows: not tuned for sigmoid); the *sparkps relu* rows are "
             "sparkps's usual MLP.",
             "", "| trainer | network | passes | fit wall time (s) [spread] | test accuracy |", "|---|---|---|---|---|"]
    for activation, name, fits in series:
        lines += [f"| {name} | {sparkps_net(activation)} | {f['passes']} epoch(s) | {spread(f)} "
                  f"| {f['accuracy']:.4f} |" for f in fits]
    lines += [f"| MLlib MLP | {MLLIB_NET} | maxIter {f['passes']} | {spread(f)} | {f['accuracy']:.4f} |"
              for f in ml]
    per_pass = {name: seconds_per_pass(fits) for _, name, fits in series}
    per_pass["MLlib"] = seconds_per_pass(ml) if ml else None
    per_pass = {name: value if value and value > 0 else None for name, value in per_pass.items()}  # noise: no slope
    shown = {name: "n/a" if value is None else f"{value:.2f} s" for name, value in per_pass.items()}
    lines += ["", f"Cost of one pass over the {train} training rows (slope of the median fit time over passes, "
              "start-up left out): " + ", ".join(f"{name} {shown[name]} per epoch" for _, name, _ in series)
              + f", MLlib {shown['MLlib']} per L-BFGS iteration (n/a: fewer than two pass counts, or start-up "
              "noise larger than the cost of the passes, so no positive slope)."]
    if ml:
        best_ml = max(ml, key=lambda f: f["accuracy"])
        lines += ["", f"MLlib's best median accuracy here is {best_ml['accuracy']:.4f} (maxIter {best_ml['passes']}, "
                  f"{spread(best_ml)} s)."]
        explained = False
        for activation, name, fits in sorted(series, key=lambda s: s[0] != "sigmoid"):   # MLlib's activation first
            match = best_within(fits, best_ml["accuracy"])
            if match:
                ratios = sorted(a / b for a, b in zip(best_ml["runs"], match["runs"]))
                reached = (f"after {match['passes']} epoch(s), {spread(match)} s: "
                           f"**{float(np.median(ratios)):.1f}x** less time (rounds {ratios[0]:.1f}–{ratios[-1]:.1f}x)")
            else:
                reached = "after none of the epoch counts run"
            lines.append(f"- {name} ({sparkps_net(activation)}) first reaches it {reached}.")
            if match and not explained and per_pass[name] and per_pass["MLlib"]:
                explained = True
                note = (f"Where that comes from ({name}): MLlib ran {best_ml['passes'] / match['passes']:.0f}x as "
                        f"many passes ({best_ml['passes']} L-BFGS iterations against {match['passes']} epochs), "
                        f"and one of its passes costs {per_pass['MLlib'] / per_pass[name]:.2f}x one sparkps epoch "
                        "(float64 against float32 is part of that). Fewer passes to the same accuracy is a real gain "
                        "for a user, but it is a gain of the method (mini-batch SGD against full-batch L-BFGS), not "
                        "of a faster pass.")
        if explained:
            lines += ["", note]
    relu = results.get("sparkps relu")
    if relu:
        last = relu[-1]
        steady, whole = last.get("steady_samples_per_s") or 0.0, last["samples_per_s"]     # none: too few steps
        rounds = sorted((f["steady_samples_per_s"] or 0.0) / numpy_rate for f in data["fits"]["sparkps relu"]
                        if f["passes"] == last["passes"])
        crosses = "; the spread crosses the goal" if rounds[0] < 0.5 <= rounds[-1] else ""
        lines += ["", "Throughput of the ReLU rows against a single-process numpy loop doing the same math (ReLU "
                  f"hidden layers, float32, forward, backward, SGD with momentum, batch {SPARKPS['batch_size']}, "
                  f"BLAS on both cores): {numpy_rate:.0f} samples/s.",
                  "", f"| sparkps relu throughput ({last['passes']}-epoch fit, median of {len(rounds)} rounds) "
                  "| samples/s | ratio to numpy (goal >= 0.5) |", "|---|---|---|",
                  f"| steady training (first to last batch, both workers) | {steady:.0f} "
                  f"| **{steady / numpy_rate:.2f}** (rounds {rounds[0]:.2f}–{rounds[-1]:.2f}{crosses}) |",
                  f"| whole fit (incl. stage launch, server start, registration) | {whole:.0f} "
                  f"| {whole / numpy_rate:.2f} |",
                  "", f"The numpy rate is the best of its {len(data['numpy_rates'])} 5-second runs (one before the "
                  "rounds and one after each); other processes on this shared machine can lower either side "
                  f"(one-minute load {run['load']['start'][0]:.1f} at the start of the run, "
                  f"{run['load']['end'][0]:.1f} at its end, {run['machine']['cores']} cores)."]
    lines += ["", "![time to accuracy, sparkps vs MLlib](bench_vs_mllib.png)"]
    return "## sparkps vs Spark MLlib: time to accuracy\n\n" + "\n".join(lines)


def _int_list(text):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _activations(text):
    values = [v.strip() for v in text.split(",") if v.strip()]
    unknown = sorted(set(values) - set(ACTIVATIONS))
    if not values or unknown:
        raise argparse.ArgumentTypeError(f"expected some of {','.join(ACTIVATIONS)}, got {text!r}")
    return [a for a in ACTIVATIONS if a in values]


def figures(results, numpy_rate):
    """The run's figures for ``--json``: every fit's time and accuracy, and the ReLU rows' throughputs (the ReLU
    rows keep the names they had before the sigmoid rows were added: 'sparkps N epoch(s)')."""
    out = {"numpy loop": report.higher(numpy_rate, "samples/s")}
    series = [("sparkps relu", "sparkps", "epoch(s)"), ("sparkps sigmoid", "sparkps sigmoid", "epoch(s)"),
              ("MLlib", "MLlib", "maxIter")]
    for name, prefix, unit in series:
        for f in results.get(name) or []:
            key = "%s %d %s" % (prefix, f["passes"], unit)
            out.update({key + " fit": report.lower(f["seconds"], "s"),
                        key + " accuracy": report.higher(f["accuracy"], "acc")})
    if results.get("sparkps relu"):
        last = results["sparkps relu"][-1]
        out.update({"sparkps steady": report.higher(last["steady_samples_per_s"], "samples/s"),
                    "sparkps whole fit": report.higher(last["samples_per_s"], "samples/s")})
    return out


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip MLlib (no docs: the section needs its rows)")
    parser.add_argument("--epochs", type=int, default=4, help="sparkps fits 1..EPOCHS epochs (default 4)")
    parser.add_argument("--mllib-iters", type=_int_list, default=None,
                        help="MLlib maxIter values, one fit each (default: the same budget in updates as sparkps's "
                             "epochs, 1..EPOCHS times an epoch's dist_sync updates)")
    parser.add_argument("--activations", type=_activations, default=list(ACTIVATIONS),
                        help="hidden activations of the sparkps rows, one series each (default relu,sigmoid: "
                             "sigmoid is MLlib's only one)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="rounds, each running every series once in alternation (at least 3; default 3)")
    parser.add_argument("--samples", type=int, default=70000,
                        help="generated rows, a seventh of them the test rows (default 70000)")
    args = report.add_output_args(parser).parse_args(argv)
    if args.quick and args.write_docs:
        parser.error("--write-docs needs the MLlib rows: drop --quick")
    if args.repeats < 3:
        parser.error("--repeats must be at least 3 (a median and its spread), got %d" % args.repeats)
    if args.samples < 700:
        parser.error("--samples must be at least 700, got %d" % args.samples)
    return args


def main(argv=None):
    args = parse_args(argv)
    run = report.Run("bench_vs_mllib", argv)
    X_train, y_train, X_test, y_test = dataset(args.samples)
    per_epoch = rounds_per_epoch(len(X_train))
    iterations = args.mllib_iters or [epochs * per_epoch for epochs in range(1, args.epochs + 1)]
    numpy_rates = [numpy_loop_samples_per_s(X_train, y_train, seconds=5.0)]
    spark = spark_session()
    contenders, fits = {}, {}
    try:
        for activation in args.activations:
            contenders[SERIES[activation][0]] = (sparkps_contender(spark, X_train, y_train, X_test, y_test,
                                                                   activation), range(1, args.epochs + 1))
        if not args.quick:
            contenders["MLlib"] = (mllib_contender(spark, X_train, y_train, X_test, y_test), iterations)
        for round_ in range(args.repeats):      # every series once a round, in the same order: A B A B ...
            for name, ((fit, _), passes) in contenders.items():
                fits.setdefault(name, []).extend(dict(fit(p), round=round_) for p in passes)
            numpy_rates.append(numpy_loop_samples_per_s(X_train, y_train, seconds=5.0))
            print(f"numpy loop: {numpy_rates[-1]:.0f} samples/s", flush=True)
    finally:
        for (_, close), _ in contenders.values():
            close()
        spark.stop()
    data = {"options": report.options(args), "rows": [len(X_train), len(X_test)], "rounds_per_epoch": per_epoch,
            "numpy_rates": numpy_rates, "fits": fits}
    print(run.publish(args, "vs_mllib", data, render))
    results = {name: combined(series) for name, series in fits.items()}
    if args.write_docs:
        plot(results, os.path.join(report.ROOT, "docs", "bench_vs_mllib.png"))
    report.save_json(args, "bench_vs_mllib", figures(results, max(numpy_rates)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""sparkps (2 workers + 1 server, dist_sync) against Spark MLlib's MultilayerPerceptronClassifier.

Same data, same run, local[2]: make_classification(70000 x 784, 10 classes), standardised, 60k train / 10k
test, MLP 784-128-64-10.  Reports fit wall time and test accuracy of both, and sparkps' training samples/s
against a single-process numpy loop doing the same math (forward, backward, SGD step) on the whole machine.

    .venv/bin/python benchmarks/bench_vs_mllib.py            # full run (MLlib takes minutes)
    .venv/bin/python benchmarks/bench_vs_mllib.py --quick    # sparkps and numpy only, no docs update

Inputs are cached as float32 blocks per partition (sparkps) and as a cached DataFrame (MLlib) before the
clocks start, so both timings are training only.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

LAYERS = [784, 128, 64, 10]
SPARKPS = dict(batch_size=512, num_epoch=4, optimizer="sgd",
               optimizer_params={"learning_rate": 0.2, "momentum": 0.9, "wd": 1e-4})


def dataset():
    """(X_train, y_train, X_test, y_test) float32, standardised with the training mean/std."""
    from sklearn.datasets import make_classification
    X, y = make_classification(n_samples=70000, n_features=784, n_informative=64, n_redundant=64, n_classes=10,
                               n_clusters_per_class=3, class_sep=2.0, random_state=0)
    X_train, X_test, y_train, y_test = X[:60000], X[60000:], y[:60000], y[60000:]
    mean, std = X_train.mean(axis=0), X_train.std(axis=0) + 1e-8
    f32 = np.float32
    return (((X_train - mean) / std).astype(f32), y_train.astype(f32),
            ((X_test - mean) / std).astype(f32), y_test.astype(f32))


def spark_session():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("bench_vs_mllib")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "6g")
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_sparkps(spark, X_train, y_train, X_test, y_test):
    """Fit time (s), test accuracy and training samples/s of SparkTrainer on cached float32 blocks."""
    from sparkps.spark import SparkTrainer
    from sparkps.spark.networks import mlp_symbol
    blocks = [(X, y) for X, y in zip(np.array_split(X_train, 8), np.array_split(y_train, 8))]
    rdd = spark.sparkContext.parallelize(blocks, 2).cache()
    rdd.count()
    trainer = SparkTrainer(mlp_symbol(LAYERS), (LAYERS[0],), num_workers=2, num_servers=1, kvstore="dist_sync",
                           progress=False, eval_metric="acc", **SPARKPS)
    started = time.perf_counter()
    model = trainer.fit(rdd)
    seconds = time.perf_counter() - started
    accuracy = float((model.predict_numpy(X_test).argmax(axis=1) == y_test).mean())
    rdd.unpersist()
    samples = len(X_train) * SPARKPS["num_epoch"]
    return {"seconds": seconds, "accuracy": accuracy, "samples_per_s": samples / seconds,
            "steady_samples_per_s": trainer.last_fit["steady_samples_per_s"]}


def run_mllib(spark, X_train, y_train, X_test, y_test):
    """Fit time (s) and test accuracy of MultilayerPerceptronClassifier(maxIter=100) on a cached DataFrame."""
    from pyspark.ml.classification import MultilayerPerceptronClassifier
    from pyspark.ml.linalg import Vectors

    def frame(X, y, parts):
        rows = [(Vectors.dense(x.astype(np.float64)), float(label)) for x, label in zip(X, y)]
        return spark.createDataFrame(rows, ["features", "label"]).repartition(parts).cache()
    train_df, test_df = frame(X_train, y_train, 2), frame(X_test, y_test, 2)
    train_df.count(), test_df.count()
    mlp = MultilayerPerceptronClassifier(layers=LAYERS, maxIter=100, seed=0)
    started = time.perf_counter()
    model = mlp.fit(train_df)
    seconds = time.perf_counter() - started
    scored = model.transform(test_df).select("label", "prediction").collect()
    accuracy = float(np.mean([r.label == r.prediction for r in scored]))
    train_df.unpersist(), test_df.unpersist()
    return {"seconds": seconds, "accuracy": accuracy}


def numpy_loop_samples_per_s(X, y, batch_size=None, seconds=10.0):
    """Samples/s of a plain numpy MLP training loop (one process, BLAS on every core), same math."""
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


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [n for n in ("sparkps", "MLlib") if n in results]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.2))
    left.bar(names, [results[n]["seconds"] for n in names], color=["tab:blue", "tab:orange"][:len(names)])
    left.set(title="fit wall time (s, lower is better)", yscale="log")
    right.bar(names, [results[n]["accuracy"] for n in names], color=["tab:blue", "tab:orange"][:len(names)])
    right.set(title="test accuracy", ylim=(0, 1))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(results, numpy_rate):
    from report import write_section
    sp, ml = results["sparkps"], results.get("MLlib")
    lines = ["Spark `local[2]`, make_classification 70000 x 784 (10 classes, standardised), 60k train / 10k "
             "test, MLP 784-128-64-10. sparkps: 2 workers + 1 server, dist_sync, batch %d, %d epochs, %s "
             "%s. MLlib: MultilayerPerceptronClassifier(maxIter=100). Inputs cached before timing."
             % (SPARKPS["batch_size"], SPARKPS["num_epoch"], SPARKPS["optimizer"], SPARKPS["optimizer_params"]),
             "", "| trainer | fit wall time (s) | test accuracy |", "|---|---|---|",
             "| sparkps | %.1f | %.4f |" % (sp["seconds"], sp["accuracy"])]
    if ml:
        lines.append("| MLlib MLP | %.1f | %.4f |" % (ml["seconds"], ml["accuracy"]))
        lines += ["", "Speed-up of sparkps over MLlib: **%.1fx** (goal >= 20x at >= MLlib's accuracy: %s)."
                  % (ml["seconds"] / sp["seconds"], "met" if ml["seconds"] / sp["seconds"] >= 20
                     and sp["accuracy"] >= ml["accuracy"] else "not met")]
    lines += ["", "Throughput against a single-process numpy loop doing the same math (forward, backward, SGD "
              "with momentum, batch %d, BLAS on both cores): %.0f samples/s." % (SPARKPS["batch_size"], numpy_rate),
              "", "| sparkps throughput | samples/s | ratio to numpy (goal >= 0.5) |", "|---|---|---|",
              "| steady training (first to last batch, both workers) | %.0f | **%.2f** |"
              % (sp["steady_samples_per_s"], sp["steady_samples_per_s"] / numpy_rate),
              "| whole fit (incl. stage launch, server start, registration) | %.0f | %.2f |"
              % (sp["samples_per_s"], sp["samples_per_s"] / numpy_rate),
              "", "The numpy rate is the best of two 5-second runs (before and after the sparkps fit); other "
              "processes on this shared machine can lower either side (1-minute load average at the end of "
              "the run: %.1f)." % os.getloadavg()[0],
              "", "![sparkps vs MLlib](bench_vs_mllib.png)", "",
              "Command: `.venv/bin/python benchmarks/bench_vs_mllib.py`"]
    write_section("vs_mllib", "## sparkps vs Spark MLlib\n\n" + "\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip MLlib and do not write docs/")
    args = parser.parse_args(argv)
    X_train, y_train, X_test, y_test = dataset()
    numpy_rate = numpy_loop_samples_per_s(X_train, y_train, seconds=5.0)
    spark = spark_session()
    try:
        results = {"sparkps": run_sparkps(spark, X_train, y_train, X_test, y_test)}
        print("sparkps: %s" % results["sparkps"], flush=True)
        numpy_rate = max(numpy_rate, numpy_loop_samples_per_s(X_train, y_train, seconds=5.0))
        print("numpy loop: %.0f samples/s" % numpy_rate, flush=True)
        if not args.quick:
            results["MLlib"] = run_mllib(spark, X_train, y_train, X_test, y_test)
            print("MLlib: %s" % results["MLlib"], flush=True)
    finally:
        spark.stop()
    if not args.quick:
        plot(results, os.path.join(HERE, os.pardir, "docs", "bench_vs_mllib.png"))
        report(results, numpy_rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())

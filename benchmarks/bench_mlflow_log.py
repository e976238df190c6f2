"""Logging a fitted SparkpsCTRModel to MLflow: ``sparkps.spark.ml.mlflow_flavor.log_model`` against
``mlflow.spark.log_model`` with and without ``pip_requirements`` (without them MLflow infers the requirements by
loading the model in a new Python process, which starts a Spark application).

    python -m benchmarks.bench_mlflow_log [--repeats 3] [--write-docs] [--json PATH]

The model: docs/export.md's example, a ``SparkpsCTRClassifier`` FM (embeddingDim 4, 2 epochs, batch 64, 2 workers,
1 server) fit on 300 rows of two string fields and a numeric one, on local[2]. The store: a SQLite tracking store
and an artifact folder in a temporary directory (removed at the end), as the example's ``sqlite:///mlflow.db``.
One run holds every call. First one untimed ``log_model`` (the warm-up: MLflow's imports, the save's first Spark
job); then ``--repeats`` rounds, each timing the three calls in turn: sparkps's ``log_model`` (it writes its own
requirements), ``mlflow.spark.log_model`` given ``pip_requirements`` (the same save without the inference) and
``mlflow.spark.log_model`` without them. Reported: the median of each call and the requirements each wrote. Needs
mlflow (a test extra).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from benchmarks import report

DOC = os.path.join(report.ROOT, "docs", "export.md")
SECTION = "mlflow_log"
SECTIONS = (SECTION,)
CALLS = ("sparkps log_model", "mlflow.spark.log_model, pip_requirements given",
         "mlflow.spark.log_model, requirements inferred")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds of the three calls (median)")
    return report.add_output_args(parser).parse_args(argv)


def fitted_model(spark):
    """docs/export.md's example model: an FM fit on 300 rows (site, app, hour -> click)."""
    from sparkps.spark.ml import SparkpsCTRClassifier
    rows = [(float(i % 3 == 0), "s%d" % (i % 6), "a%d" % (i % 4), i / 300.0) for i in range(300)]
    frame = spark.createDataFrame(rows, ["click", "site", "app", "hour"])
    clf = SparkpsCTRClassifier(labelCol="click", categoricalCols=["site", "app"], numericCols=["hour"], model="fm",
                               embeddingDim=4, numEpochs=2, batchSize=64, numWorkers=2, numServers=1, seed=1)
    return clf.fit(frame)


def requirements_of(info):
    """The requirement names (versions left out) a logged model's requirements.txt lists."""
    import mlflow.artifacts
    folder = mlflow.artifacts.download_artifacts(info.model_uri)
    with open(os.path.join(folder, "requirements.txt"), encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    return [line.split("==")[0].split(">=")[0].split("<")[0] for line in lines]


def timed_calls(model):
    """{call: (seconds, ModelInfo)} of the three CALLS, in order, in the active run."""
    import mlflow.spark

    from sparkps.spark.ml.mlflow_flavor import default_requirements, log_model
    calls = {CALLS[0]: lambda: log_model(model, "sparkps_ctr"),
             CALLS[1]: lambda: mlflow.spark.log_model(model, "spark_ctr_given",
                                                      pip_requirements=default_requirements()),
             CALLS[2]: lambda: mlflow.spark.log_model(model, "spark_ctr_inferred")}
    out = {}
    for call, log in calls.items():
        start = time.perf_counter()
        info = log()
        out[call] = (time.perf_counter() - start, info)
        print("  %s: %.2f s" % (call, out[call][0]), flush=True)
    return out


def render(run):
    """The section of a run record (pure function of it): every round's time of every call is in it."""
    data = run["data"]
    return markdown(data["times"], data["requirements"], data["options"]["repeats"])


def markdown(times, requirements, repeats):
    lines = ["docs/export.md's example model (an FM fit on 300 rows, local[2]) logged to a SQLite tracking store in a "
             "temporary folder, all calls in one run: one untimed `log_model` first, then %d rounds of the three "
             "calls in turn; median of each." % repeats, "",
             "| call | median | min | max | requirements written |", "|---|---|---|---|---|"]
    for call in CALLS:
        lines.append("| %s | %.1f s | %.1f s | %.1f s | %s |" % (
            call, statistics.median(times[call]), min(times[call]), max(times[call]),
            ", ".join(requirements[call]) or "none"))
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    if args.repeats < 1:
        raise SystemExit("--repeats: at least 1, got %d" % args.repeats)
    run = report.Run("bench_mlflow_log", argv)
    # MLflow's inference loads the model in a new Python process: it must import sparkps from this checkout
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (report.ROOT, os.environ.get("PYTHONPATH")) if p)
    import mlflow

    from sparkps.spark.ml.mlflow_flavor import log_model
    spark = report.local_spark("bench_mlflow_log", "1g")
    times, requirements = {call: [] for call in CALLS}, {}
    before = mlflow.get_tracking_uri()
    try:
        with tempfile.TemporaryDirectory(prefix="sparkps-mlflow-log-") as folder:
            mlflow.set_tracking_uri("sqlite:///%s" % os.path.join(folder, "mlflow.db"))
            mlflow.set_experiment(experiment_id=mlflow.create_experiment("bench", os.path.join(folder, "artifacts")))
            model = fitted_model(spark)
            with mlflow.start_run():
                start = time.perf_counter()
                log_model(model, "warm_up")
                print("warm-up log_model: %.2f s" % (time.perf_counter() - start), flush=True)
                for _ in range(args.repeats):
                    for call, (seconds, info) in timed_calls(model).items():
                        times[call].append(seconds)
                        requirements[call] = requirements_of(info)
            mlflow.set_tracking_uri(before)
    finally:
        spark.stop()
    data = {"options": report.options(args), "times": times, "requirements": requirements}
    print(run.publish(args, SECTION, data, render, doc=DOC))
    report.save_json(args, "bench_mlflow_log", {call: report.lower(float(np.median(times[call])), "s")
                                                for call in CALLS})


if __name__ == "__main__":
    sys.exit(main())

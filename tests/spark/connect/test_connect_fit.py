"""Fitting on a Spark Connect session: both estimators, CrossValidator, the CTR job under spark.api.mode=connect,
and a worker killed mid-fit named in the one error. A fit that fails on Connect fails its test (the README says
Connect fits work): nothing here is turned into a skip.

Data: scikit-learn's digits (MLP), planted FM clicks (``planted_ctr``: 3 fields, 1200 rows, seed 4).
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.spark
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def digits_frame(session, X, y):
    from pyspark.ml.linalg import Vectors
    return session.createDataFrame([(Vectors.dense(a.tolist()), float(b)) for a, b in zip(X, y)],
                                   ["features", "label"])


@pytest.fixture(scope="module")
def clicks():
    """(train, test) lists of (a, b, c, click) rows of planted FM clicks."""
    from sparkps.ctr.synthetic import planted_ctr
    data = planted_ctr(1200, num_fields=3, num_numeric=0, vocab=12, zipf=1.2, seed=4, deep_scale=0.0)
    rows = [tuple("v%d" % v for v in ranks) + (float(label),) for ranks, label in zip(data.ranks.tolist(),
                                                                                        data.labels.tolist())]
    return rows[:900], rows[900:]


def ctr_frame(session, rows):
    return session.createDataFrame(rows, ["a", "b", "c", "click"])


def auc(scored):
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    return BinaryClassificationEvaluator(labelCol="click").evaluate(scored)


def test_the_classifier_fits_and_transforms_on_connect(connect, digits):
    from sparkps.spark.ml import SparkpsClassifier
    X, y, X_test, y_test = digits
    model = SparkpsClassifier(layers=[64, 16, 10], numEpochs=3, batchSize=32, numWorkers=2,
                              earlyStoppingPatience=0).fit(digits_frame(connect, X, y))
    rows = model.transform(digits_frame(connect, X_test, y_test)).select("prediction", "label").collect()
    accuracy = np.mean([r.prediction == r.label for r in rows])
    assert accuracy > 0.8 and len(model.history) == 3


def test_the_ctr_classifier_fits_and_transforms_on_connect(connect, clicks):
    from sparkps.spark.ml import SparkpsCTRClassifier
    train, test = clicks
    model = SparkpsCTRClassifier(labelCol="click", categoricalCols=["a", "b", "c"], model="fm", numEpochs=3,
                                 batchSize=64, learningRate=0.05, numWorkers=2).fit(ctr_frame(connect, train))
    assert auc(model.transform(ctr_frame(connect, test))) > 0.6


def test_cross_validator_fits_on_connect(connect, clicks):
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from sparkps.spark.ml import SparkpsCTRClassifier
    train, _ = clicks
    clf = SparkpsCTRClassifier(labelCol="click", categoricalCols=["a", "b", "c"], numEpochs=1, batchSize=64,
                               numWorkers=2)
    grid = ParamGridBuilder().addGrid(clf.model, ["lr", "fm"]).build()
    fitted = CrossValidator(estimator=clf, estimatorParamMaps=grid, numFolds=2, seed=3,
                            evaluator=BinaryClassificationEvaluator(labelCol="click")).fit(ctr_frame(connect, train))
    assert len(fitted.avgMetrics) == 2 and all(0.0 <= m <= 1.0 for m in fitted.avgMetrics)
    assert fitted.bestModel.getOrDefault("model") == ["lr", "fm"][int(np.argmax(fitted.avgMetrics))]


def test_the_ctr_job_runs_with_spark_api_mode_connect(tmp_path):
    """jobs/train_ctr.py as spark-submit --conf spark.api.mode=connect runs it: its own local Connect server."""
    from sparkps.ctr.synthetic import planted_ctr, write_criteo_tsv
    data = planted_ctr(2000, vocab=20, zipf=1.3, linear_scale=0.5, fm_scale=0.0, deep_scale=0.0, seed=3)
    paths = [str(tmp_path / name) for name in ("train.tsv", "test.tsv")]
    for path, part in zip(paths, (slice(0, 1500), slice(1500, None))):
        write_criteo_tsv(type(data)(*[x[part] if hasattr(x, "shape") else x for x in data]), path)
    import pyspark
    submit = os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "bin", "spark-submit")
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, PYTHONPATH=ROOT)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    out = subprocess.run([submit, "--master", "local[2]", "--conf", "spark.api.mode=connect",
                          os.path.join(ROOT, "jobs", "train_ctr.py"), "--train", paths[0], "--test", paths[1],
                          "--format", "criteo", "--model", "lr", "--epochs", "2", "--batch-size", "128", "--lr",
                          "0.05", "--validation-fraction", "0", "--output", str(tmp_path / "out")],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]     # spark-submit: python errors on stdout
    found = re.fullmatch(r"test AUC (\d\.\d{4}) logloss (\d+\.\d{4}) \(500 rows\)", out.stdout.strip().splitlines()[-1])
    assert found and float(found.group(1)) > 0.65, out.stdout[-2000:]


def test_the_ctr_job_runs_on_a_remote_connect_server(connect_url, tmp_path):
    """jobs/train_ctr.py run as plain python with ``--remote sc://HOST:PORT``: the session's Connect server trains it
    (no JVM of the job's own), with the scheduler placed by --scheduler."""
    from sparkps.ctr.synthetic import planted_ctr, write_criteo_tsv
    data = planted_ctr(800, vocab=20, zipf=1.3, linear_scale=0.5, fm_scale=0.0, deep_scale=0.0, seed=3)
    paths = [str(tmp_path / name) for name in ("train.tsv", "test.tsv")]
    for path, part in zip(paths, (slice(0, 600), slice(600, None))):
        write_criteo_tsv(type(data)(*[x[part] if hasattr(x, "shape") else x for x in data]), path)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=ROOT)
    for key in ("SPARK_CONNECT_MODE_ENABLED", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_REMOTE"):
        env.pop(key, None)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", "train_ctr.py"), "--remote", connect_url,
                          "--scheduler", "stage", "--train", paths[0], "--test", paths[1], "--format", "criteo",
                          "--model", "lr", "--epochs", "2", "--batch-size", "64", "--lr", "0.05",
                          "--output", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert re.fullmatch(r"test AUC \d\.\d{4} logloss \d+\.\d{4} \(200 rows\)", out.stdout.strip().splitlines()[-1])
    assert (tmp_path / "out" / "model").is_dir()


def test_the_classifier_job_runs_on_a_remote_connect_server(connect_url, tmp_path):
    """jobs/train_classifier.py run as plain python with ``--remote sc://HOST:PORT`` on the digits it exports: the
    session's Connect server trains and scores it."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=ROOT)
    for key in ("SPARK_CONNECT_MODE_ENABLED", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_REMOTE"):
        env.pop(key, None)
    job = os.path.join(ROOT, "jobs", "train_classifier.py")
    data = tmp_path / "digits"
    exported = subprocess.run([sys.executable, job, "--export-digits", str(data)], env=env, capture_output=True,
                              text=True, timeout=120)
    assert exported.returncode == 0, exported.stdout[-2000:] + exported.stderr[-2000:]
    out = subprocess.run([sys.executable, job, "--remote", connect_url, "--train", str(data / "train.libsvm"),
                          "--validation", str(data / "test.libsvm"), "--num-features", "64", "--layers", "64,32,10",
                          "--epochs", "2", "--batch-size", "32", "--lr", "0.1", "--output", str(tmp_path / "out")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert (tmp_path / "out" / "model" / "metadata.json").is_file()
    assert (tmp_path / "out" / "summary.json").is_file()


def test_a_killed_worker_is_named_on_connect(connect, digits):
    """A worker task whose Python process is SIGKILLed mid-fit fails the fit with one error naming that worker, and
    no process of the fit outlives it. The client here can reach the tasks, so the scheduler runs in this process:
    the running fit's trainer (found among this process's objects) tells worker 1's pid."""
    import gc
    import signal
    import threading

    from sparkps.errors import ClusterError
    from sparkps.spark.driver.trainer import SparkTrainer
    from sparkps.spark.ml import SparkpsClassifier
    X, y = digits[0], digits[1]
    frame = digits_frame(connect, X, y)
    done, killed = threading.Event(), {}

    def kill_worker_1():
        while not done.is_set():
            for trainer in [o for o in gc.get_objects() if isinstance(o, SparkTrainer)]:
                nodes = (trainer.status() or {}).get("nodes", [])
                worker = [n for n in nodes if n.get("role") == "worker" and n.get("rank") == 1 and n.get("pid")]
                steps = (trainer.status() or {}).get("progress") or {}
                if worker and steps:
                    killed["pid"] = int(worker[0]["pid"])
                    os.kill(killed["pid"], signal.SIGKILL)
                    return
            done.wait(0.1)

    watcher = threading.Thread(target=kill_worker_1, daemon=True)
    watcher.start()
    try:
        with pytest.raises(ClusterError, match=r"worker 1") as failure:
            SparkpsClassifier(layers=[64, 16, 10], numEpochs=200, batchSize=8, numWorkers=2, maxRestarts=0,
                              earlyStoppingPatience=0).fit(frame)
    finally:
        done.set()
        watcher.join(10)
    assert killed, "worker 1 never registered: %s" % failure.value

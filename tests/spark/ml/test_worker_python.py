"""The CTR estimator on local[2] with PYSPARK_PYTHON unset, and its saved model scored in a new program: the worker
Python is settled before the estimator or the loaded model wraps any Python function, so the tasks import sparkps
(the default ``python3`` of this machine lacks zmq)."""
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SCRIPT = textwrap.dedent("""
    from pyspark.sql import SparkSession
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    rows = [(float(i % 2), "a%d" % (i % 3), "b%d" % (i % 2), i) for i in range(64)]    # distinct rows: some held out
    frame = spark.createDataFrame(rows, ["click", "site", "app", "id"])
    model = SparkpsCTRClassifier(labelCol="click", categoricalCols=["site", "app"], model="lr", numEpochs=1,
                                 batchSize=16, numWorkers=2, numServers=1).fit(frame)
    print("fitted epochs", len(model.history))
    model.write().overwrite().save("ctr-model")
    spark.stop()
""")

SCORE = textwrap.dedent("""
    from pyspark.sql import SparkSession
    from sparkps.spark.ml import SparkpsCTRModel
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    frame = spark.createDataFrame([(1.0, "a1", "b0"), (0.0, "a2", "b1")], ["click", "site", "app"])
    rows = SparkpsCTRModel.load("ctr-model").transform(frame).select("probability").collect()   # runs the UDF
    print("scored rows", sum(0.0 < row.probability[1] < 1.0 for row in rows))
    spark.stop()
""")


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env.update(PYTHONPATH=ROOT, SPARK_LOCAL_IP="127.0.0.1", OMP_NUM_THREADS="1")
    return env


def test_ctr_estimator_fits_and_a_loaded_model_scores_without_pyspark_python(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], env=clean_env(), capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fitted epochs 1" in done.stdout
    # a new program loads the saved model and scores with no fit before it: transform settles the worker Python
    (tmp_path / "score.py").write_text(SCORE)
    done = subprocess.run([sys.executable, "score.py"], env=clean_env(), capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "scored rows 2" in done.stdout

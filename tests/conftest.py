"""Shared fixtures: one local[2] SparkSession for every Spark test of the session."""
import os
import sys

import pytest

from spark_env import spark_env

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# A pytest-xdist worker runs from `python -c`: its __main__ has neither __spec__ nor __file__, which
# pyspark.sql.connect takes for a doctest run and answers with sys.exit(0) when Spark Connect's packages are
# missing (MLflow imports it to tell Connect models apart).  Name the worker's main module as pytest's.
_main = sys.modules["__main__"]
if getattr(_main, "__spec__", None) is None and not hasattr(_main, "__file__"):
    _main.__file__ = pytest.__file__


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "ignore:PySpark does not yet fully support pandas:FutureWarning")


@pytest.fixture(scope="session", autouse=True)
def launch_status_file(tmp_path_factory):
    """`sparkps launch` writes its status file here, not into the user's ~/.sparkps (and each test process of
    a parallel run has its own)."""
    path = str(tmp_path_factory.mktemp("status") / "launch-status.json")
    previous = os.environ.get("SPARKPS_STATUS_FILE")
    os.environ["SPARKPS_STATUS_FILE"] = path
    yield path
    if previous is None:
        os.environ.pop("SPARKPS_STATUS_FILE", None)
    else:
        os.environ["SPARKPS_STATUS_FILE"] = previous


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession (UI off, 2 shuffle partitions), stopped at the end of the session."""
    for key, value in spark_env().items():
        os.environ.setdefault(key, value)
    from pyspark.sql import SparkSession
    session = (SparkSession.builder.master("local[2]").appName("sparkps-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.ui.showConsoleProgress", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def viewfs(spark, tmp_path):
    """The suite's session with Hadoop's ``viewfs://unit/data`` mounted onto ``tmp_path`` (a store's URI over a local
    folder), unmounted after; yields ``tmp_path``."""
    conf = spark._jsc.hadoopConfiguration()
    keys = {"fs.viewfs.mounttable.unit.link./data": "file://" + str(tmp_path), "fs.viewfs.impl.disable.cache": "true"}
    for key, value in keys.items():
        conf.set(key, value)
    yield tmp_path
    for key in keys:
        conf.unset(key)


@pytest.fixture(scope="session")
def digits():
    """scikit-learn's handwritten digits scaled to [0, 1], split 80/20: (X_train, y_train, X_test, y_test)."""
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    data = load_digits()
    X = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.float32)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    return X_train, y_train, X_test, y_test


@pytest.fixture(scope="module")
def digits_rdd(spark, digits):
    """The digits' training rows as a cached RDD of (features, label) in 2 partitions, and the test arrays:
    (rdd, X_test, y_test)."""
    X_train, y_train, X_test, y_test = digits
    rdd = spark.sparkContext.parallelize(list(zip(X_train, y_train)), 2).cache()
    rdd.count()
    return rdd, X_test, y_test


@pytest.fixture
def ps_cluster():
    """Factory of ``cluster.PSCluster``s; each is closed at tear-down, which asserts the job finished cleanly.

        def test_x(ps_cluster):
            with ps_cluster(num_servers=2, num_workers=2) as c:   # or without ``with``: closed at tear-down
                c.run_workers(lambda kv: ...)
    """
    from cluster import PSCluster
    made = []

    def make(**kwargs):
        made.append(PSCluster(**kwargs))
        return made[-1]
    yield make
    for c in made:
        c.close()


@pytest.fixture
def node_cluster():
    """Factory of ``cluster.NodeCluster``s (bare Postoffices); each is stopped at tear-down."""
    from cluster import NodeCluster
    made = []

    def make(**kwargs):
        made.append(NodeCluster(**kwargs))
        return made[-1]
    yield make
    for c in made:
        c.stop()

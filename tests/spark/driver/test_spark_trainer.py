"""SparkTrainer on real Spark local[2]: 2 workers + 1 server in one barrier stage, on scikit-learn's digits."""
import os
import time

import numpy as np
import pytest

from cluster import CLUSTER_TIMEOUTS
from sparkps.errors import ClusterError, ConfigError
from sparkps.spark import SparkModel, SparkTrainer, mlp_symbol

pytestmark = pytest.mark.spark

SGD = {"learning_rate": 0.1, "momentum": 0.9}


def trainer(num_epoch=10, **kw):
    kw.setdefault("num_workers", 2)
    kw.setdefault("num_servers", 1)
    return SparkTrainer(mlp_symbol([64, 64, 10]), (64,), batch_size=32, num_epoch=num_epoch,
                        optimizer_params=SGD, progress=False, timeout=120, **kw)


def server_processes(scheduler_uri):
    """Pids of live processes whose command line names this job's scheduler (its server processes)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if scheduler_uri in cmdline and state != "Z":
            found.append(int(pid))
    return found


def wait_until_gone(scheduler_uri, timeout=20.0):
    """Poll /proc until no process of this job is left (at most ``timeout`` s); returns what is left."""
    deadline = time.monotonic() + timeout
    left = server_processes(scheduler_uri)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = server_processes(scheduler_uri)
    return left


def test_fit_predict_transform_save_load_on_digits(spark, digits, tmp_path, caplog):
    X_train, y_train, X_test, y_test = digits
    sc = spark.sparkContext
    fitted = trainer()
    with caplog.at_level("INFO", logger="sparkps.spark"):
        model = fitted.fit(sc.parallelize(list(zip(X_train, y_train)), 3))
    assert wait_until_gone(fitted.scheduler_uri) == []
    progress = [r.getMessage() for r in caplog.records if r.name == "sparkps.spark"]
    assert any(line.startswith("epoch ") and "samples/s" in line for line in progress), progress
    assert [h["epoch"] for h in model.history] == list(range(10))

    outputs = model.predict(sc.parallelize(list(X_test), 4)).collect()      # input order is kept
    accuracy = np.mean(np.argmax(outputs, axis=1) == y_test)
    assert accuracy >= 0.93, accuracy

    from pyspark.ml.linalg import Vectors
    df = spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X_test, y_test)],
                               ["features", "label"])
    scored = model.transform(df).select("label", "prediction", "probability").collect()
    assert np.mean([r.label == r.prediction for r in scored]) == pytest.approx(accuracy)
    np.testing.assert_allclose(scored[0].probability.toArray(), outputs[0], rtol=1e-5, atol=1e-6)

    model.save(str(tmp_path / "digits"))
    again = SparkModel.load(str(tmp_path / "digits"))
    np.testing.assert_allclose(again.predict_numpy(X_test), np.stack(outputs), rtol=1e-5, atol=1e-6)
    from sparkps import FeedForward
    single = FeedForward.load(str(tmp_path / "digits" / "model"), model.epoch)
    np.testing.assert_allclose(single.predict(X_test), np.stack(outputs), rtol=1e-5, atol=1e-6)


def test_the_first_progress_line_comes_before_the_first_epoch_ends(spark, digits, caplog):
    """One short epoch (4 batches a worker): the line that the stage started comes before any worker ended its
    first epoch (the live progress alone, polled every quarter second, came after it)."""
    X_train, y_train = digits[0][:256], digits[1][:256]
    fitted = trainer(num_epoch=1)
    with caplog.at_level("INFO", logger="sparkps.spark"):
        fitted.fit(spark.sparkContext.parallelize(list(zip(X_train, y_train)), 2))
    lines = [r for r in caplog.records if r.name == "sparkps.spark"]
    assert lines[0].created < fitted.last_fit["first_epoch_end"], lines[0]
    assert lines[0].getMessage() == "training stage started: 2 workers and 1 server starting", lines[0]
    said = [r.getMessage() for r in lines]
    registered = [i for i, line in enumerate(said) if " registered after " in line]
    trained = [i for i, line in enumerate(said) if line.startswith("epoch ")]
    assert trained and all(i < trained[0] for i in registered), said   # never said once training is reported


def test_more_workers_than_slots_is_refused_before_launch(spark, digits):
    rdd = spark.sparkContext.parallelize(list(zip(digits[0][:100], digits[1][:100])), 2)
    with pytest.raises(ConfigError, match=r"needs 3 task slots for 3 workers but local\[2\] has 2: "
                                          r"use num_workers <= 2"):
        trainer(num_workers=3).fit(rdd)


def test_a_failing_worker_fails_fit_with_its_message_and_leaves_nothing(spark, digits):
    X_train, y_train = digits[0], digits[1]

    def poison(index, rows):
        for i, row in enumerate(rows):
            if index == 1 and i == 200:
                raise ValueError("row 200 of partition 1 is corrupt")
            yield row

    rdd = spark.sparkContext.parallelize(list(zip(X_train, y_train)), 2).mapPartitionsWithIndex(poison)
    fitted = trainer(num_epoch=3)
    # the worker's own error ends the fit (a heartbeat or request timeout would name no ValueError)
    with pytest.raises(ClusterError, match="worker 1 .*failed: .*ValueError: row 200 of partition 1 is corrupt"):
        fitted.fit(rdd)
    assert wait_until_gone(fitted.scheduler_uri) == []
    assert spark.sparkContext.parallelize(range(4), 2).sum() == 6       # Spark still usable afterwards


@pytest.mark.parametrize("kvstore, cut", [("dist_sync", 0), ("dist_async", 0), ("dist_sync", 1200),
                                         ("dist_async", 150)])
def test_uneven_and_empty_partitions(spark, digits, kvstore, cut, tmp_path):
    """Partition 0 gets the first ``cut`` rows (none: worker 0, which returns the model, has no data)."""
    X_train, y_train, X_test, y_test = digits
    rows = list(zip(X_train, y_train))
    rdd = spark.sparkContext.parallelize([rows[:cut], rows[cut:]], 2).flatMap(lambda part: part)
    counts = rdd.glom().map(len).collect()
    assert counts == [cut, len(X_train) - cut]
    model = trainer(num_epoch=4, kvstore=kvstore, checkpoint_dir=str(tmp_path)).fit(rdd)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-0001", "epoch-0002", "epoch-0003", "epoch-0004"]
    assert (tmp_path / "epoch-0004" / "manifest.json").exists()
    accuracy = np.mean(model.predict_numpy(X_test).argmax(axis=1) == y_test)
    assert accuracy >= 0.85, accuracy


@pytest.mark.gpu
def test_gpu_workers_train_with_cupy(spark, digits):
    from sparkps.backend import Context, get_array_module
    from sparkps.errors import BackendUnavailable
    try:
        get_array_module(Context.parse("gpu"))
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    X_train, y_train, X_test, y_test = digits
    model = trainer(num_epoch=6, ctx="gpu").fit(spark.sparkContext.parallelize(list(zip(X_train, y_train)), 2))
    assert np.mean(model.predict_numpy(X_test).argmax(axis=1) == y_test) >= 0.93


def test_a_killed_server_fails_fit_naming_the_server(spark, digits):
    import signal
    import threading
    X_train, y_train = digits[0], digits[1]
    fitted = trainer(num_epoch=500, timeouts=dict(CLUSTER_TIMEOUTS, register=30))
    outcome = {}

    def fit():
        try:
            fitted.fit(spark.sparkContext.parallelize(list(zip(X_train, y_train)), 2))
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=fit, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and thread.is_alive():       # wait until both workers train
        status = fitted.status() or {}
        if len(status.get("progress") or {}) == 2:
            break
        time.sleep(0.1)
    servers = server_processes(fitted.scheduler_uri)
    assert len(servers) == 1, "the server process is not running"
    os.kill(servers[0], signal.SIGKILL)
    thread.join(60)                 # only against a hang
    assert not thread.is_alive()
    assert isinstance(outcome.get("error"), ClusterError)
    # the death as its process's watch saw it, not a heartbeat or request timeout noticing it later
    assert "server 0 failed: its process (started by worker 0) was killed by SIGKILL" in str(outcome["error"]), \
        outcome["error"]
    assert wait_until_gone(fitted.scheduler_uri) == []


def test_fit_gives_up_after_its_timeout_and_cleans_up(spark, digits):
    from sparkps.errors import PeerTimeout
    fitted = trainer(num_epoch=1000)
    fitted.timeout = 3
    with pytest.raises(PeerTimeout, match="did not finish within 3 s"):     # the fit's timeout, by its value
        fitted.fit(spark.sparkContext.parallelize(list(zip(digits[0], digits[1])), 2))
    assert wait_until_gone(fitted.scheduler_uri) == []
    assert fitted.status() is None


def test_a_misspelt_optimizer_parameter_is_refused_before_anything_starts():
    with pytest.raises(ConfigError, match="momentom"):
        SparkTrainer(mlp_symbol([64, 10]), (64,), optimizer_params={"learning_rate": 0.1, "momentom": 0.9})


def test_a_convolutional_net_trains_on_flat_feature_rows(spark, digits):
    """Rows hold 64 flat features; input_shape (1, 8, 8) gives the conv net its NCHW batches."""
    import sparkps.symbol as sym
    X_train, y_train, X_test, y_test = digits
    net = sym.Convolution(sym.Variable("data"), kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv1")
    net = sym.Pooling(sym.Activation(net, act_type="relu"), kernel=(2, 2), stride=(2, 2), pool_type="max")
    net = sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(net), num_hidden=10, name="fc"), name="softmax")
    model = SparkTrainer(net, (1, 8, 8), batch_size=32, num_epoch=8, num_workers=2, num_servers=1,
                         optimizer_params=SGD, progress=False, timeout=120).fit(
        spark.sparkContext.parallelize(list(zip(X_train, y_train)), 2))
    accuracy = np.mean(np.argmax(model.predict_numpy(X_test), axis=1) == y_test)
    assert accuracy >= 0.93, accuracy

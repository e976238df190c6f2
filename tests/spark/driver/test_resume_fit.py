"""Resume after a failure on real Spark local[2]: a server process or a worker's Python process is SIGKILLed in
the middle of ``SparkTrainer.fit`` (the plan's fault hook, at a fixed step), the fit restarts the stage from the
newest checkpoint and ends within 1 % of a clean run's accuracy; restarts are bounded; ``fit(resume=True)``
continues a stopped job; a half-written manifest is passed over."""
import json
import os

import numpy as np
import pytest

from cluster import CLUSTER_TIMEOUTS
from sparkps.errors import ClusterError, ConfigError
from sparkps.runtime.resume import latest_checkpoint
from sparkps.spark import SparkTrainer, mlp_symbol

pytestmark = pytest.mark.spark

SGD = {"learning_rate": 0.1, "momentum": 0.9}
EPOCHS = 3


def trainer(checkpoint_dir, num_epoch=EPOCHS, **kw):
    return SparkTrainer(mlp_symbol([64, 32, 10]), (64,), batch_size=32, num_epoch=num_epoch, num_workers=2,
                        num_servers=1, optimizer_params=SGD, progress=False, timeout=240, seed=3,
                        checkpoint_dir=str(checkpoint_dir), timeouts=dict(CLUSTER_TIMEOUTS), **kw)


@pytest.fixture(scope="module")
def clean(digits_rdd, tmp_path_factory):
    """Accuracy of an uninterrupted run with the same seed."""
    rdd, X_test, y_test = digits_rdd
    model = trainer(tmp_path_factory.mktemp("clean")).fit(rdd)
    return accuracy(model, X_test, y_test)


def accuracy(model, X, y):
    return float(np.mean(model.predict_numpy(X).argmax(axis=1) == y))


@pytest.mark.parametrize("kill, rank", [("server", 0), ("worker", 1)])
def test_a_killed_role_restarts_from_the_checkpoint_and_ends_as_a_clean_run(digits_rdd, clean, tmp_path, kill, rank):
    rdd, X_test, y_test = digits_rdd
    fit = trainer(tmp_path, checkpoint_steps=5)
    fit.fault = {"kill": kill, "rank": rank, "at_step": 30}      # epoch 2 of 3 (about 23 steps an epoch)
    model = fit.fit(rdd)
    restarts = fit.last_fit["restarts"]
    assert len(restarts) == 1, restarts
    entry = restarts[0]
    assert entry["checkpoint"] is not None and entry["checkpoint_step"] >= 25, entry
    assert entry["lost_steps"] is not None and 0 <= entry["lost_steps"] <= 10, entry   # progress: once a second
    assert entry["seconds_to_resume"] > 0
    assert [h.get("restarts") for h in model.history if h.get("restarts")] == [1]
    assert [h["epoch"] for h in model.history] == list(range(EPOCHS))
    assert abs(accuracy(model, X_test, y_test) - clean) <= 0.01, (accuracy(model, X_test, y_test), clean)


def test_after_max_restarts_one_error_names_the_role_that_died(digits_rdd, tmp_path):
    rdd, _, _ = digits_rdd
    fit = trainer(tmp_path, checkpoint_steps=10, max_restarts=1)
    fit.fault = {"kill": "worker", "rank": 1, "at_step": 3, "attempts": 5}
    with pytest.raises(ClusterError, match=r"died again after 1 restart\(s\) \(max_restarts=1\)") as err:
        fit.fit(rdd)
    assert str(err.value).startswith("worker 1 died again"), err.value
    assert "Python worker exited unexpectedly" in str(err.value)


def test_resume_continues_a_stopped_job_past_a_half_written_manifest(digits_rdd, clean, tmp_path):
    rdd, X_test, y_test = digits_rdd
    trainer(tmp_path, num_epoch=2).fit(rdd)          # the job "stopped" after 2 of 3 epochs
    newest = latest_checkpoint(str(tmp_path))
    assert os.path.basename(newest.path) == "epoch-0002" and newest.epoch == 2
    manifest = os.path.join(newest.path, "manifest.json")
    with open(manifest) as f:
        text = f.read()
    json.loads(text)
    with open(manifest, "w") as f:                  # a crash while writing it
        f.write(text[: len(text) // 2])
    assert os.path.basename(latest_checkpoint(str(tmp_path)).path) == "epoch-0001"
    resumed = trainer(tmp_path)
    model = resumed.fit(rdd, resume=True)
    assert [h["epoch"] for h in model.history] == [0, 1, 2]
    assert resumed.last_fit["restarts"] == []
    assert abs(accuracy(model, X_test, y_test) - clean) <= 0.01


def test_resume_without_a_checkpoint_is_a_config_error(digits_rdd, tmp_path):
    with pytest.raises(ConfigError, match="no complete checkpoint in"):
        trainer(tmp_path).fit(digits_rdd[0], resume=True)
    with pytest.raises(ConfigError, match="no complete checkpoint in"):     # every strategy resumes
        trainer(tmp_path, kvstore="dist_model_average").fit(digits_rdd[0], resume=True)


def test_the_driver_names_the_worker_of_a_failed_barrier_task_and_restarts_only_transient_failures():
    from sparkps.errors import DataError, PeerTimeout
    from sparkps.spark.driver.restarts import ProgressLog, Restarts, failed_role, history_with_restarts
    from sparkps.spark.driver.stage import StageFailed, describe_stage_error
    spark_text = ("org.apache.spark.SparkException: Job aborted due to stage failure: Could not recover from a "
                  "failed barrier ResultStage. Most recent failure reason: Stage failed because barrier task "
                  "ResultTask(7, 1) finished unsuccessfully.\norg.apache.spark.SparkException: Python worker "
                  "exited unexpectedly (crashed)")
    line = describe_stage_error(RuntimeError(spark_text))
    assert line.startswith("worker 1 failed: SparkException: Python worker exited unexpectedly"), line
    assert failed_role(StageFailed(line)) == "worker 1"
    assert failed_role(StageFailed("x", node="server 0 (node 1)")) == "server 0"
    restarts = Restarts(max_restarts=1)
    assert restarts.allowed(StageFailed("server 0 (node 1) stopped sending heartbeats"))
    assert not restarts.allowed(StageFailed("worker 0 failed: DataError: row 3: label is NaN"))
    assert not restarts.allowed(PeerTimeout("training did not finish within 60 s (timeout)"))
    assert not restarts.allowed(DataError("bad"))

    class View:
        def update(self, status):
            self.status = status
    progress = ProgressLog(View())
    for epoch, nbatch in ((0, 5), (0, 23), (1, 4)):      # worker 0: epoch 0 had 23 steps, 4 of epoch 1 done
        progress.update({"progress": {0: {"epoch": epoch, "nbatch": nbatch}}})
    assert progress.steps_of(0) == 27 and progress.steps_of(1) is None
    entry = restarts.record(StageFailed(line), None, progress)
    assert (entry["role"], entry["checkpoint"], entry["lost_steps"]) == ("worker 1", None, 27)
    assert "restart 1 of 1: worker 1 died" in restarts.describe(entry)
    assert not restarts.allowed(StageFailed("server 0 (node 1) stopped sending heartbeats"))   # none left
    assert restarts.give_up(StageFailed(line)).args[0].startswith("worker 1 died again after 1 restart(s)")
    assert history_with_restarts([{"epoch": 0}, {"epoch": 1}], restarts.entries) == [{"epoch": 0, "restarts": 1},
                                                                                      {"epoch": 1}]

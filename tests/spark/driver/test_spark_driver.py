"""The driver's pure parts: progress summaries from scheduler status, and naming the failed role."""
import io

import pytest

from sparkps.spark.driver.progress import ProgressView, format_summary, summarize
from sparkps.spark.driver.results import fit_timings, merge_histories
from sparkps.spark.driver.stage import describe_stage_error


def status(*entries):
    return {"progress": {rank: dict(zip(("epoch", "nbatch", "samples", "metrics"), entry))
                         for rank, entry in enumerate(entries)}}


def test_summary_takes_the_slowest_epoch_and_averages_metrics():
    summary = summarize(status((3, 10, 320, {"accuracy": 0.9}), (2, 12, 384, {"accuracy": 0.7}))["progress"], 2)
    assert summary == {"epoch": 2, "step": 22, "samples": 704, "metrics": {"accuracy": 0.8}, "workers": 2,
                       "stopped": False}
    assert format_summary(summary, 5, 1234.4) == "epoch 3/5 step 22 accuracy=0.8000 1234 samples/s"
    assert summarize({0: {"epoch": 4}}, 2)["epoch"] == 0          # a worker that has not reported yet


def test_log_lines_count_samples_across_epochs_skipped_between_snapshots():
    out = io.StringIO()
    now = [100.0]
    view = ProgressView(num_epoch=10, num_workers=1, bar=False, log_every=0, stream=out, clock=lambda: now[0])
    view.update(status((0, 5, 500, {"accuracy": 0.5})))
    now[0] += 1.0                                         # one second passes
    view.update(status((3, 2, 200, {"accuracy": 0.9})))   # epochs 1 and 2 finished meanwhile
    assert view.samples_per_s == 1200.0                   # 2 * 500 + 200 samples in 1 s
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("sparkps: epoch 1/10 step 5 accuracy=0.5000")
    assert lines[1].startswith("sparkps: epoch 4/10 step 2 accuracy=0.9000") and "samples/s" in lines[1]


def test_after_early_stopping_the_line_and_the_bar_show_the_epoch_training_ended_at():
    stopped = status((5, 3, 96, {"logloss": 0.4}), (5, 3, 96, {"logloss": 0.5}))
    for entry in stopped["progress"].values():
        entry["stopped"] = True
    summary = summarize(stopped["progress"], 2)
    assert summary["stopped"] and format_summary(summary, 10, 0) == "epoch 6/10 (stopped early) step 6 logloss=0.4500"
    one_stopped = status((5, 3, 96, {}), (5, 3, 96, {}))
    one_stopped["progress"][0]["stopped"] = True
    assert not summarize(one_stopped["progress"], 2)["stopped"]            # every worker, or not yet
    out = io.StringIO()
    view = ProgressView(num_epoch=10, num_workers=2, bar=False, log_every=60, stream=out)
    view.update(status((5, 3, 96, {"logloss": 0.4}), (5, 3, 96, {"logloss": 0.5})))
    view.update(stopped)                      # the same epoch, now known to be the last: a line says so
    view.close(finished=True)
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("sparkps: epoch 6/10 (stopped early)") and "10/10" not in out.getvalue()
    bar_out = io.StringIO()
    bar = ProgressView(num_epoch=10, num_workers=2, bar=True, stream=bar_out)
    bar.update(stopped)
    shown = bar._bar
    bar.close(finished=True)
    assert shown.n == 6 and "6/10" in bar_out.getvalue() and "10/10" not in bar_out.getvalue()


def test_the_stage_start_and_the_registration_of_every_role_are_said_once():
    out, now = io.StringIO(), [10.0]
    view = ProgressView(num_epoch=3, num_workers=2, num_servers=1, bar=False, stream=out, clock=lambda: now[0])
    view.stage_started()
    now[0] += 2.5
    view.update({"nodes": [{"role": "worker"}, {"role": "server"}]})           # one worker still starting
    view.update({"nodes": [{"role": "worker"}, {"role": "server"}, {"role": "worker"}]})
    view.update({"nodes": [{"role": "worker"}, {"role": "server"}, {"role": "worker"}]})
    assert out.getvalue().splitlines() == ["sparkps: training stage started: 2 workers and 1 server starting",
                                           "sparkps: 2 workers and 1 server registered after 2.5 s; reading rows"]
    late = ProgressView(num_epoch=3, num_workers=1, num_servers=1, bar=False, log_every=60, stream=io.StringIO())
    late.stage_started()
    late.update(dict(status((0, 4, 128, {})), nodes=[{"role": "worker"}, {"role": "server"}]))
    assert " registered " not in late._stream.getvalue()        # training reported first: no stale line


def test_the_failed_role_is_dug_out_of_spark_errors():
    scheduler_status = {"errors": [{"node": "server 0 (node 1)",
                                    "message": "server 0 (node 1) stopped sending heartbeats"}]}
    assert describe_stage_error(RuntimeError("x"), scheduler_status) == \
        "server 0 (node 1) stopped sending heartbeats"
    spark_text = ("An error occurred while calling collectAndServe.\n"
                  "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
                  "sparkps.spark.task.barrier_task.WorkerFailed: sparkps worker 1 failed: ValueError: bad row\n")
    assert describe_stage_error(RuntimeError(spark_text)) == "worker 1 failed: ValueError: bad row"
    java_text = ("An error occurred while calling o1.collect.\n"
                 ": org.apache.spark.SparkException: Job aborted due to stage failure: lost executor\n")
    assert describe_stage_error(RuntimeError(java_text)) == \
        "a Spark task failed: SparkException: Job aborted due to stage failure: lost executor"


def test_histories_are_averaged_by_rows_and_rates_leave_out_start_up():
    results = [{"rank": 0, "rows": 300, "history": [{"epoch": 0, "accuracy": 0.9}], "batches": 11,
                "first_batch_end": 10.0, "last_batch_end": 12.0},
               {"rank": 1, "rows": 100, "history": [{"epoch": 0, "accuracy": 0.5}], "batches": 5,
                "first_batch_end": 10.5, "last_batch_end": 11.0}]
    assert merge_histories(results) == [{"epoch": 0, "accuracy": 0.8}]
    stats = fit_timings(results, batch_size=32)
    assert stats["rows"] == [300, 100] and stats["steady_seconds"] == 2.0
    assert stats["steady_samples_per_s"] == (10 + 4) * 32 / 2.0
    assert "validation_seconds" not in stats       # no worker scored held-out rows


def test_the_validation_seconds_are_the_slowest_workers_of_each_part():
    results = [{"rank": 0, "validation": {"rows_pull": 0.5, "scoring": 2.0, "snapshot": 1.5}},
               {"rank": 1, "validation": {"rows_pull": 0.75, "scoring": 1.0, "snapshot": 0.0}}]
    assert fit_timings(results, batch_size=32)["validation_seconds"] == {
        "rows_pull": 0.75, "scoring": 2.0, "snapshot": 1.5}


# Spark's own texts (Spark 4): a barrier stage after its executor was lost, and a stage the standalone master ended
EXECUTOR_LOST = (
    "An error occurred while calling o90.collectAndServe.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Could not recover from a failed barrier "
    "ResultStage. Most recent failure reason: Stage failed because barrier task ResultTask(3, 1) finished "
    "unsuccessfully.\nExecutorLostFailure (executor 1 exited caused by one of the running tasks) Reason: Command "
    "exited with code 137\n\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler."
    "scala:2935)\n")
APP_REMOVED = (
    "An error occurred while calling o90.collectAndServe.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Master removed our application: FAILED\n"
    "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2935)\n")


def test_a_lost_executor_and_a_removed_application_are_named():
    """Both used to end as Spark's first line ('Could not recover from a failed barrier ResultStage'); the removed
    application is no role's fault and no restart can get past it."""
    from sparkps.spark.driver.restarts import restartable
    from sparkps.spark.driver.stage import StageFailed
    assert describe_stage_error(RuntimeError(EXECUTOR_LOST)) == \
        "executor 1 was lost with worker 1 (exited caused by one of the running tasks; Command exited with code 137)"
    removed = describe_stage_error(RuntimeError(APP_REMOVED), {"errors": [{"node": "worker 0", "message": "x"}]})
    assert removed == "the cluster manager ended the application: Master removed our application: FAILED"
    assert restartable(StageFailed(describe_stage_error(RuntimeError(EXECUTOR_LOST))))
    assert not restartable(StageFailed(removed))


def test_a_lost_executor_without_checkpoints_says_what_to_set():
    from sparkps.spark.driver.stage import StageFailed
    from sparkps.spark.driver.trainer import _raise_without_checkpoints
    lost = StageFailed(describe_stage_error(RuntimeError(EXECUTOR_LOST)))
    with pytest.raises(StageFailed, match=r"^executor 1 was lost with worker 1 \(.*\); without checkpoints the "
                                          r"fit cannot restart from one: set checkpoint_dir \(the jobs' "
                                          r"--checkpoint-dir DIR with --max-restarts N, the estimators' "
                                          r"checkpointDir and maxRestarts\)"):
        _raise_without_checkpoints(lost, None)
    _raise_without_checkpoints(lost, "/ckpt")                                     # restarts handle it
    _raise_without_checkpoints(StageFailed("worker 0 failed: ValueError: bad row"), None)     # no restart helps

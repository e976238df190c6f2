"""Restarts of the strategies that train on the workers, on real Spark local[2]: under ``dist_model_average`` the
servers hold the last average, under ``dist_easgd`` the center; a worker's Python process SIGKILLed mid-fit makes
``fit`` restart the stage, every worker starts again from the checkpointed average / center and skips the steps
it holds (its meetings with the servers times the period), and the fit ends within 1 % of a clean run."""
import numpy as np
import pytest

from cluster import CLUSTER_TIMEOUTS
from sparkps.spark import SparkTrainer, mlp_symbol

pytestmark = pytest.mark.spark

EPOCHS = 6
# (options, period): EASGD's center lags the workers; meeting every 2 steps keeps it close, so that its final
# accuracy varies little between runs (its meetings interleave in a different order in each run)
STRATEGIES = {"dist_model_average": ({"interval_steps": 4}, 4), "dist_easgd": ({"communication_period": 2}, 2)}


def trainer(checkpoint_dir, kvstore, **kw):
    return SparkTrainer(mlp_symbol([64, 32, 10]), (64,), batch_size=32, num_epoch=EPOCHS, num_workers=2,
                        num_servers=1, optimizer_params={"learning_rate": 0.1, "momentum": 0.5}, progress=False,
                        timeout=240, seed=3, checkpoint_dir=str(checkpoint_dir), timeouts=dict(CLUSTER_TIMEOUTS),
                        kvstore=kvstore, kvstore_params=STRATEGIES[kvstore][0], **kw)


def accuracy(model, X, y):
    return float(np.mean(model.predict_numpy(X).argmax(axis=1) == y))


@pytest.mark.parametrize("kvstore", sorted(STRATEGIES))
def test_a_killed_worker_restarts_from_the_servers_average_or_center(digits_rdd, tmp_path, kvstore):
    rdd, X_test, y_test = digits_rdd
    clean = accuracy(trainer(tmp_path / "clean", kvstore).fit(rdd), X_test, y_test)
    fit = trainer(tmp_path / "killed", kvstore, checkpoint_steps=6)
    fit.fault = {"kill": "worker", "rank": 1, "at_step": 40}     # epoch 2 of 6 (about 23 steps an epoch)
    period = STRATEGIES[kvstore][1]
    model = fit.fit(rdd)
    restarts = fit.last_fit["restarts"]
    assert len(restarts) == 1, restarts
    entry = restarts[0]
    # a checkpoint of the fit's second epoch: the workers are not in lockstep, so worker 0, whose steps number the
    # checkpoints, may be a dozen steps behind the killed worker's step 40 on a loaded machine
    assert entry["checkpoint"] is not None and entry["checkpoint_step"] >= 24, entry
    # the servers count meetings: every worker resumes at a whole number of periods, at most the checkpoint's step
    held = {int(rank): steps for rank, steps in entry["resumed_steps"].items()}
    assert set(held) == {0, 1} and all(s % period == 0 and s > 0 for s in held.values()), held
    assert held[0] <= entry["checkpoint_step"], (held, entry)
    assert entry["lost_steps"] is not None and entry["lost_steps"] >= entry["checkpoint_step"] - held[0], entry
    assert [h.get("restarts") for h in model.history if h.get("restarts")] == [1], (model.history, entry)
    assert [h["epoch"] for h in model.history] == list(range(EPOCHS))
    assert abs(accuracy(model, X_test, y_test) - clean) <= 0.01, (accuracy(model, X_test, y_test), clean)


def test_a_restart_seen_after_worker_0_finished_marks_the_last_epoch():
    """Under an asynchronous strategy worker 0 may end its last epoch (and checkpoint it) while a dead worker is
    being detected: the restart resumes from a checkpoint past the history's last epoch."""
    from sparkps.spark.driver.restarts import history_with_restarts
    history = [{"epoch": e, "accuracy": 0.5} for e in range(3)]
    marked = history_with_restarts(history, [{"epoch": 3}, {"epoch": 1}])
    assert [h.get("restarts") for h in marked] == [None, 1, 1]
    assert history_with_restarts([], [{"epoch": 2}]) == []

"""Spark's console progress bar is off while a fit shows sparkps's progress, and back on afterwards."""
import pytest

from sparkps.errors import ClusterError
from sparkps.spark import SparkTrainer, mlp_symbol
from sparkps.spark.driver.console import spark_progress_shown

pytestmark = pytest.mark.spark


@pytest.fixture
def spark_bar(spark):
    """The shared session with Spark's console progress bar running (as in the pyspark shell), then without."""
    sc = spark.sparkContext
    jsc = sc._jsc.sc()
    field = jsc.getClass().getDeclaredField("_progressBar")
    field.setAccessible(True)
    field.set(jsc, sc._jvm.scala.Some(sc._jvm.org.apache.spark.ui.ConsoleProgressBar(jsc)))
    yield sc
    bar = field.get(jsc)
    if not bar.isEmpty():
        bar.get().stop()
    field.set(jsc, sc._jvm.scala.Option.empty())


def test_the_spark_bar_is_paused_during_the_training_stage(spark_bar, digits, monkeypatch):
    from sparkps.spark.driver import trainer as trainer_module
    seen = []

    def stage(action, scheduler, *args, **kwargs):
        seen.append((spark_progress_shown(action.sc), action.description))
        scheduler.stop()
        raise ClusterError("stage replaced by the test")

    monkeypatch.setattr(trainer_module, "run_watched", stage)
    assert spark_progress_shown(spark_bar)
    rdd = spark_bar.parallelize(list(zip(digits[0][:20], digits[1][:20])), 2)
    with pytest.raises(ClusterError, match="stage replaced by the test"):
        SparkTrainer(mlp_symbol([64, 10]), (64,), num_epoch=1, progress=False).fit(rdd)
    assert seen and seen[0][0] is False
    assert spark_progress_shown(spark_bar)


def test_an_active_mlflow_run_gets_params_and_per_epoch_metrics(monkeypatch):
    """A stand-in module with MLflow's three calls (MLflow itself is not a dependency)."""
    import sys
    import types

    from sparkps.spark.driver.tracking import log_fit
    logged = {"params": {}, "metrics": []}
    fake = types.ModuleType("mlflow")
    fake.active_run = lambda: object()
    fake.log_params = logged["params"].update
    fake.log_metrics = lambda metrics, step: logged["metrics"].append((step, metrics))
    monkeypatch.setitem(sys.modules, "mlflow", fake)
    history = [{"epoch": 0, "accuracy": 0.5}, {"epoch": 1, "accuracy": 0.75}]
    assert log_fit({"num_epoch": 2, "model": "MLP 64-10"}, history)
    assert logged["params"] == {"num_epoch": "2", "model": "MLP 64-10"}
    assert logged["metrics"] == [(1, {"accuracy": 0.5}), (2, {"accuracy": 0.75})]
    fake.active_run = lambda: None
    assert not log_fit({}, history)

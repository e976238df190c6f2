"""An Angel network's per-epoch learning-rate decay on Spark: the CTR estimator counts the training rows in its
statistics pass and hands the network the rows of one worker, so StandardDecay / WarmRestarts reach the optimizer
(instead of the constant rate fit_args falls back to without a row count)."""
import json
import logging
import pathlib

import numpy as np
import pytest

pytestmark = pytest.mark.spark

NETWORK = pathlib.Path(__file__).resolve().parents[3] / "jobs" / "networks" / "deepfm.json"


class Launched(Exception):
    """Raised by the stand-in trainer: the estimator got as far as building it."""


@pytest.fixture
def captured(monkeypatch):
    """The keyword arguments the estimator gives SparkTrainer (the fit stops there)."""
    import sparkps.spark.ml.ctr_classifier as ctr
    seen = {}

    def trainer(symbol, input_shape, **kwargs):
        seen.update(kwargs)
        raise Launched()
    monkeypatch.setattr(ctr, "SparkTrainer", trainer)
    return seen


def angel_network(tmp_path, **train):
    config = json.loads(NETWORK.read_text())
    config["data"].update(numfield=2, indexrange=64)
    embedding = next(layer for layer in config["layers"] if layer["name"] == "embedding")
    embedding["outputdim"] = 2 * embedding["numfactors"]
    config["train"].update(train)
    path = tmp_path / "deepfm2.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize("decay,kind", [({"decayclass": "StandardDecay", "decayalpha": 0.5}, "AngelStandardDecay"),
                                        ({"decayclass": "WarmRestarts", "decayintervals": 3}, "AngelWarmRestarts")])
def test_a_per_epoch_decay_gets_the_rows_of_a_worker(spark, tmp_path, captured, caplog, decay, kind):
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier
    rng = np.random.default_rng(0)
    rows = [(float(rng.random() < 0.3), str(rng.integers(10)), str(rng.integers(10))) for _ in range(203)]
    frame = spark.createDataFrame(rows, ["click", "a", "b"])
    clf = SparkpsCTRClassifier(labelCol="click", categoricalCols=["a", "b"], network=angel_network(tmp_path, **decay),
                               model="", batchSize=25, numWorkers=2, validationFraction=0.0)
    with caplog.at_level(logging.WARNING, logger="sparkps.nets.angel_decay"), pytest.raises(Launched):
        clf.fit(frame)
    schedule = captured["optimizer_params"]["lr_scheduler"]
    assert type(schedule).__name__ == kind
    assert schedule.updates_per_epoch == 5          # 203 rows: 102 a worker, in batches of 25
    assert "stays constant" not in caplog.text

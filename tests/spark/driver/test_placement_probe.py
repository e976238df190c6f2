"""'auto' scheduler placement asks the tasks whether they reach the driver's address (a one-task probe job) when
they may run on other machines, and puts the scheduler inside the stage when they do not: on real Spark local[2],
the probe made to run (as on a cluster master) against a driver address that refuses connections."""
import socket

import numpy as np
import pytest

from sparkps.spark import SparkTrainer, mlp_symbol
from sparkps.spark.driver import placement

pytestmark = pytest.mark.spark


def refusing_listener(host):
    """A socket bound to ``host`` that does not listen: every connection to its port is refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, 0))
    return sock


def test_auto_places_the_scheduler_in_the_stage_when_tasks_cannot_reach_the_driver(spark, monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(96, 6)).astype(np.float32)
    y = (X[:, 0] - X[:, 2] > 0).astype(np.float32)
    df = spark.createDataFrame([(X[i].tolist(), float(y[i])) for i in range(len(X))], ["features", "label"]) \
        .repartition(2)

    def trainer(**kw):
        return SparkTrainer(mlp_symbol([6, 8, 2]), (6,), batch_size=16, num_epoch=2, progress=False, timeout=180,
                            seed=5, optimizer_params={"learning_rate": 0.1}, **kw)

    on_driver = trainer(scheduler="driver")
    expected = on_driver.fit(df)
    host = "127.0.0.1"
    assert placement.tasks_reach(spark, host)               # the probe's own answer where the driver listens
    monkeypatch.setattr(placement, "needs_probe", lambda *a: True)          # as on a cluster master
    monkeypatch.setattr(placement, "driver_listener", refusing_listener)    # the driver's address refuses
    assert not placement.tasks_reach(spark, host)
    import sparkps.spark.driver.trainer as trainer_module
    monkeypatch.setattr(trainer_module, "needs_probe", lambda *a: True)
    auto = trainer()
    model = auto.fit(df)
    assert auto.last_placement == "stage" and auto.last_fit["placement"] == "stage"
    assert on_driver.last_placement == "driver"
    for name in expected.arg_params:
        np.testing.assert_allclose(np.asarray(model.arg_params[name]), np.asarray(expected.arg_params[name]),
                                   rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_probe_runs_only_for_auto_on_a_classic_cluster_master():
    assert placement.needs_probe("auto", False, "spark://head:7077")
    assert placement.needs_probe("AUTO", False, "yarn")
    assert not placement.needs_probe("auto", False, "local[2]")
    assert not placement.needs_probe("driver", False, "yarn")
    assert not placement.needs_probe("auto", True, "yarn")
    assert placement.choose_placement("auto", False, "yarn", reached=False) == "stage"
    assert placement.choose_placement("auto", False, "yarn", reached=True) == "driver"
    assert placement.choose_placement("driver", False, "yarn", reached=False) == "driver"

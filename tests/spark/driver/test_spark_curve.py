"""CURVE on Spark: which roles encrypt (on by default whenever they bind beyond loopback, one function decides),
the warning about Spark's unprotected RPC on a cluster master, and a local[2] fit with curve=True that trains
while a plaintext peer holding the job's secret gets nothing accepted by the scheduler or a server."""
import logging
import threading
import time

import numpy as np
import pytest
import zmq

from sparkps.comm import message as wire
from sparkps.comm.message import curve_for, secret_bytes
from sparkps.errors import ConfigError, PeerTimeout
from sparkps.scheduler.client import fetch_status
from sparkps.spark import SparkTrainer, mlp_symbol
from sparkps.spark.driver import encryption


@pytest.mark.parametrize("host, requested, expected", [
    ("127.0.0.1", None, False), ("127.0.1.1", None, False), ("::1", None, False), ("localhost", None, False),
    ("10.1.2.3", None, True), ("192.168.0.7", None, True), ("fe80::1", None, True),
    ("10.1.2.3", False, False), ("127.0.0.1", True, True)])
def test_curve_is_on_whenever_a_role_binds_beyond_loopback_unless_told(host, requested, expected):
    assert curve_for(host, requested) is expected
    assert encryption.fit_curve(requested, host) is expected


@pytest.mark.parametrize("env, requested, expected", [
    ({"SPARKPS_CURVE": "1"}, None, True), ({"SPARKPS_CURVE": "yes"}, None, True),
    ({"SPARKPS_CURVE": "0"}, None, False), ({"SPARKPS_CURVE": "1"}, False, False),
    ({"SPARKPS_CURVE": ""}, None, False), ({}, True, True)])
def test_sparkps_curve_in_the_driver_environment_decides_when_the_fit_does_not(env, requested, expected, monkeypatch):
    """Argument > SPARKPS_CURVE > default (loopback: off), the same resolver as launch and the CLI roles."""
    monkeypatch.delenv("SPARKPS_CURVE", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert encryption.fit_curve(requested, "127.0.0.1") is expected
    assert curve_for("10.1.2.3", requested, env={"SPARKPS_CURVE": "0"}) is (requested is True)


def test_a_bad_sparkps_curve_is_named(monkeypatch):
    monkeypatch.setenv("SPARKPS_CURVE", "maybe")
    with pytest.raises(ConfigError, match="SPARKPS_CURVE must be"):
        encryption.fit_curve(None, "127.0.0.1")


def test_a_cluster_master_without_spark_rpc_protection_is_warned_about_once(caplog, monkeypatch):
    monkeypatch.setattr(encryption, "_WARNED", set())
    assert encryption.unprotected_rpc_settings("local[2]", {}) == []
    assert encryption.unprotected_rpc_settings("spark://h:7077", {"spark.authenticate": "true",
                                                                  "spark.network.crypto.enabled": "true"}) == []
    with caplog.at_level(logging.WARNING, logger="sparkps.spark.driver.encryption"):
        for _ in range(3):
            assert encryption.warn_unprotected_rpc("spark://h:7077", {"spark.authenticate": "true"}) == \
                ["spark.network.crypto.enabled"]
        encryption.warn_unprotected_rpc("local[2]", {})
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "spark.network.crypto.enabled is off on master spark://h:7077" in warnings[0]


def plaintext_answer(address, secret, timeout=1.0):
    """Send a correctly signed STATUS from a plaintext DEALER to ``address``; the reply frames, or None."""
    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    try:
        sock.connect(address)
        sock.send_multipart(wire.encode(wire.Message("STATUS", rid=1), secret_bytes(secret)))
        return sock.recv_multipart() if sock.poll(int(timeout * 1000)) else None
    finally:
        sock.close(0)
        context.term()


@pytest.mark.spark
@pytest.mark.parametrize("asked", ["argument", "environment"])
def test_a_curve_fit_trains_and_a_plaintext_peer_gets_nothing_accepted(spark, digits, asked, monkeypatch):
    """CURVE asked by ``curve=True``, or by SPARKPS_CURVE=1 in the driver's environment with ``curve=None``."""
    X_train, y_train, X_test, y_test = digits
    if asked == "environment":
        monkeypatch.setenv("SPARKPS_CURVE", "1")
    fitted = SparkTrainer(mlp_symbol([64, 64, 10]), (64,), batch_size=32, num_epoch=150, num_workers=2,
                          num_servers=1, optimizer_params={"learning_rate": 0.1, "momentum": 0.9}, progress=False,
                          timeout=180, curve=True if asked == "argument" else None)
    probes = {}

    def probe():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            scheduler = fitted._scheduler
            status = scheduler.status() if scheduler is not None else {}
            servers = [n["address"] for n in status.get("nodes", []) if n["role"] == "server"]
            if servers and status.get("registered") == 3:
                uri, secret = scheduler.uri, scheduler.secret
                probes["server"] = plaintext_answer(servers[0], secret)
                probes["scheduler"] = plaintext_answer(uri, secret)
                try:
                    fetch_status(uri, secret, timeout=1.0, curve=False)
                    probes["plaintext status"] = "answered"
                except PeerTimeout:
                    probes["plaintext status"] = "refused"
                # asked last: a CURVE peer's answer that every node is still registered shows the plaintext probes
                # above met live nodes (not a job that had already finished)
                probes["curve status"] = fetch_status(uri, secret, timeout=10.0, curve=True)["registered"]
                probes["still training"] = fitted._scheduler is scheduler
                return
            time.sleep(0.1)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    model = fitted.fit(spark.sparkContext.parallelize(list(zip(X_train, y_train)), 2))
    thread.join(30)
    assert probes == {"scheduler": None, "server": None, "plaintext status": "refused", "curve status": 3,
                      "still training": True}
    accuracy = float(np.mean(model.predict_numpy(X_test).argmax(axis=1) == y_test))
    assert accuracy > 0.9, accuracy

"""Angel's learning-rate decays from a network's train section: the rate of every update equals the one Angel's
stateful StepSizeScheduler gives (written out below as Angel's GraphLearner drives it: ``next()`` once before each
epoch, or once after each batch's push), and bad decay settings fail when the network loads, naming the file."""
import json
import logging
import math

import pytest

from sparkps.errors import ConfigError
from sparkps.lr_scheduler import scheduler_from_config
from sparkps.nets import angel_json


class AngelStandard:
    """Angel's StandardDecay, as its Scala class: each next() counts one more step."""

    def __init__(self, eta, alpha):
        self.eta, self.alpha, self.current = eta, alpha, 0

    def next(self):
        self.current += 1
        return self.eta / math.sqrt(1.0 + self.alpha * self.current)


class AngelWarm:
    """Angel's WarmRestarts, as its Scala class (eta_min = eta / 10, interval doubling at each restart)."""

    def __init__(self, eta, alpha, interval):
        self.eta_max, self.eta_min, self.alpha = eta, eta / 10, alpha
        self.current, self.restarts, self.interval = 0.0, 0, interval

    def next(self):
        self.current += 1
        value = self.eta_min + 0.5 * (self.eta_max - self.eta_min) * (1 + math.cos(self.current / self.interval
                                                                                   * math.pi))
        if self.current == self.interval:
            self.current, self.interval, self.restarts = 0.0, self.interval * 2, self.restarts + 1
            self.eta_max = self.eta_max / math.sqrt(1.0 + self.restarts * self.alpha)
        return value


def network(**train):
    """A tiny Angel network (one embedding under a loss) with ``train`` as its train section."""
    return json.dumps({
        "data": {"indexrange": 10, "numfield": 2}, "train": dict(train), "default_optimizer": "sgd",
        "layers": [{"name": "embedding", "type": "embedding", "numfactors": 1, "outputdim": 2},
                   {"name": "fc", "type": "FCLayer", "outputdims": [1], "transfuncs": ["identity"],
                    "inputlayer": "embedding"},
                   {"name": "loss", "type": "simplelosslayer", "lossfunc": "logloss", "inputlayer": "fc"}]})


def schedule(train, num_rows=None, batch_size=4, **kwargs):
    args = angel_json.loads(network(lr=0.8, batchsize=batch_size, **train), "net.json").fit_args(
        num_rows=num_rows, **kwargs)
    sched = args.get("lr_scheduler")
    if sched is not None:
        sched.base_lr = args["learning_rate"]           # as the optimizer sets it
    return sched


def per_epoch_rates(sched, epochs, updates_per_epoch):
    """{update: rate} at every update of ``epochs`` epochs."""
    return [[sched(e * updates_per_epoch + i + 1) for i in range(updates_per_epoch)] for e in range(epochs)]


def test_standard_decay_per_epoch_is_angels():
    sched = schedule({"decayclass": "StandardDecay", "decayalpha": 0.3}, num_rows=10, batch_size=4)   # 3 a epoch
    angel = AngelStandard(0.8, 0.3)
    for rates in per_epoch_rates(sched, 6, 3):
        expected = angel.next()                          # GraphLearner: setLR(next()) before the epoch
        assert rates == pytest.approx([expected] * 3, rel=1e-12)


def test_warm_restarts_per_epoch_is_angels_across_restarts():
    sched = schedule({"decayclass": "WarmRestarts", "decayalpha": 0.5, "decayintervals": 2}, num_rows=8,
                     batch_size=4)
    angel = AngelWarm(0.8, 0.5, 2)
    expected = [angel.next() for _ in range(15)]         # cycles of 2, 4, 8 epochs: three restarts
    assert [rates[0] for rates in per_epoch_rates(sched, 15, 2)] == pytest.approx(expected, rel=1e-12)
    assert expected[1] == pytest.approx(0.08) and expected[2] > expected[1]       # the end of a cycle; a restart


def test_warm_restarts_default_interval_and_decay_on_batch_are_angels():
    sched = schedule({"decayclass": "warmrestarts", "decayonbatch": True})          # alpha 0.001, interval 100
    angel = AngelWarm(0.8, 0.001, 100)
    expected = [0.8] + [angel.next() for _ in range(450)]     # update n runs at the rate set after update n - 1
    assert [sched(n) for n in range(1, 452)] == pytest.approx(expected, rel=1e-12)


def test_standard_decay_on_batch_needs_no_rows():
    sched = schedule({"decayclass": "StandardDecay", "decayalpha": 0.1, "decayonbatch": True})
    angel = AngelStandard(0.8, 0.1)
    assert [sched(n) for n in range(1, 8)] == pytest.approx([0.8] + [angel.next() for _ in range(6)], rel=1e-12)


def test_constant_learning_rate_and_no_decay_keys_give_no_schedule():
    assert schedule({"decayclass": "ConstantLearningRate", "decayalpha": 0.5}, num_rows=100) is None
    assert schedule({}, num_rows=100) is None


def test_standard_decay_reads_decaybeta_without_decayalpha_and_prefers_decayalpha():
    assert schedule({"decayclass": "StandardDecay", "decaybeta": 0.01}, num_rows=8).decay == 0.01
    assert schedule({"decaybeta": 0.01, "decayalpha": 0.2}, num_rows=8).decay == 0.2


def test_a_decay_rebuilds_from_its_config():
    for train in ({"decayclass": "WarmRestarts", "decayalpha": 0.5, "decayintervals": 3},
                  {"decayclass": "StandardDecay", "decayalpha": 0.5}):
        sched = schedule(train, num_rows=12)
        again = scheduler_from_config(json.loads(json.dumps(sched.to_config())))
        assert [again(n) for n in range(1, 40)] == [sched(n) for n in range(1, 40)]


@pytest.mark.parametrize("train, message", [
    ({"decayclass": "CosineDecay"}, r"net.json: train.decayclass 'CosineDecay' is not supported; supported: "
                                    r"ConstantLearningRate, StandardDecay, WarmRestarts"),
    ({"decayclass": "WarmRestarts", "decayalpha": "fast"}, r"net.json: train.decayalpha must be a number >= 0"),
    ({"decayclass": "WarmRestarts", "decayintervals": 0}, r"net.json: train.decayintervals must be a positive"),
    ({"decayalpha": 0.1, "decayonbatch": "yes"}, r"net.json: train.decayonbatch must be true or false"),
])
def test_bad_decay_settings_fail_when_the_network_loads(train, message):
    with pytest.raises(ConfigError, match=message):
        angel_json.loads(network(**train), "net.json")


def test_a_per_epoch_decay_without_rows_is_an_error_when_required_and_else_logged_once(caplog):
    net = angel_json.loads(network(decayclass="WarmRestarts", decayalpha=0.1), "net.json")
    with pytest.raises(ConfigError, match=r"net.json: train.decayclass WarmRestarts decays once per epoch and needs "
                                          r"the number of training rows \(num_rows\) to count the updates per "
                                          r"epoch; none was given"):
        net.fit_args(require_rows=True)
    with caplog.at_level(logging.WARNING, logger="sparkps.nets.angel_decay"):
        assert "lr_scheduler" not in net.fit_args() and "lr_scheduler" not in net.fit_args()
    logged = [r.getMessage() for r in caplog.records if "learning rate stays constant" in r.getMessage()]
    assert len(logged) == 1 and "net.json" in logged[0]
    assert "lr_scheduler" in net.fit_args(num_rows=100)

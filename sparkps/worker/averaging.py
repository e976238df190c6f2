"""Strategies where workers train locally and meet the servers every few steps: model averaging and EASGD.

The optimizer runs on the worker (``DistKVStore.set_optimizer`` keeps it here); ``pushpull(keys, grads,
out=weights)`` updates ``weights`` in place and every ``period`` steps meets the servers:

``ModelAverage`` (``dist_model_average``, ``interval_steps=k``)
    every k steps each worker pushes its weights; the servers' ``average`` policy makes the table their mean
    (a sync round), and every worker continues from it. ``finish`` pushes the weights once more (steps
    since the last average are not lost), so the final model is the average of the workers' last weights.
``ElasticAverage`` (``dist_easgd``, ``communication_period=τ``, ``moving_rate=α``, default ``0.9 / (τ ·
workers)`` as TensorFlow's ElasticAverageOptimizer)
    every τ steps, asynchronously: pull the center ``c``; ``d = local - c``; ``local -= α·d``; push ``-α·d``
    to servers whose optimizer is plain SGD at learning rate 1 (so ``center += α·d``). The final model is
    the center (what a pull returns).

What each call blocks on is that of the DistKVStore request it makes (at most the request timeout).
"""
import numpy as np

from sparkps import optimizer as opt_mod
from sparkps.errors import ConfigError


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError("%s must be a positive int, got %r" % (name, value))
    return value


class LocalTraining:
    """The local optimizer and step count shared by the strategies; ``period`` steps between meetings."""

    def __init__(self, period):
        self.period = period
        self.steps = 0
        self.meetings = 0
        self.updater = None
        self.last = None  # (keys, weight arrays) of the last step: what finish sends

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` here, on this worker's weights."""
        self.updater = opt_mod.get_updater(optimizer)

    def held_steps(self, meetings):
        """Steps of a worker that the servers' weights hold, from how many of its meetings they applied (what a
        checkpoint counts): every meeting follows ``period`` local steps, and what the worker trained since its
        last meeting is only in its own weights (a restart trains it again, from the servers' weights)."""
        return int(meetings) * self.period

    def step(self, worker, keys, grads, weights):
        """One local update of ``weights`` (in place); meets the servers when the period is over."""
        if self.updater is None:
            raise ConfigError("local training needs an optimizer: call set_optimizer before pushpull")
        for key, grad, weight in zip(keys, grads, weights):
            self.updater(key, grad, weight)
        self.steps += 1
        self.last = (list(keys), list(weights))
        if self.steps % self.period == 0:
            self.meet(worker, keys, weights)
            self.meetings += 1


class ModelAverage(LocalTraining):
    """``dist_model_average``: every ``interval_steps`` steps the workers' weights become their mean."""
    strategy = "dist_model_average"
    server_policy = {"name": "average"}
    rounds = "own"

    def __init__(self, num_workers, interval_steps=1):
        super().__init__(_positive_int("interval_steps", interval_steps))

    def server_optimizer(self, optimizer):
        """The servers hold no optimizer: a round's applied value is the mean itself."""
        return None

    def meet(self, worker, keys, weights):
        worker.wait(worker.pushpull(keys, weights, weights))

    def finish(self, worker):
        """Average once more if this worker stepped since the last average."""
        if self.last is not None and self.steps % self.period:
            self.meet(worker, *self.last)


class ElasticAverage(LocalTraining):
    """``dist_easgd``: every ``communication_period`` steps an elastic pull towards (and of) the center."""
    strategy = "dist_easgd"
    server_policy = None
    rounds = None

    def __init__(self, num_workers, communication_period=10, moving_rate=None):
        super().__init__(_positive_int("communication_period", communication_period))
        if moving_rate is None:
            moving_rate = 0.9 / (self.period * num_workers)
        if isinstance(moving_rate, bool) or not isinstance(moving_rate, (int, float)) or not 0 < moving_rate <= 1:
            raise ConfigError("moving_rate must be a number in (0, 1], got %r" % (moving_rate,))
        self.moving_rate = float(moving_rate)
        self._center = None

    def server_optimizer(self, optimizer):
        """Plain SGD at learning rate 1: a pushed ``-α·d`` moves the center by ``+α·d``."""
        return opt_mod.create("sgd", learning_rate=1.0, rescale_grad=1.0, wd=0.0)

    def meet(self, worker, keys, weights):
        if self._center is None or [c.shape for c in self._center] != [w.shape for w in weights]:
            self._center = [np.empty(np.shape(w), np.float32) for w in weights]
        worker.wait(worker.pull(keys, self._center))
        alpha = np.float32(self.moving_rate)
        moves = []
        for weight, center in zip(weights, self._center):
            step = alpha * (np.asarray(weight) - center)
            weight -= step
            moves.append(-step)
        worker.wait(worker.push(keys, moves))

    def finish(self, worker):
        """Nothing to send: the final model is the center."""
        return None


# the worker side of each strategy the table marks as training on the workers (strategies.LOCAL_STRATEGIES)
LOCAL_TRAINING = {kind.strategy: kind for kind in (ModelAverage, ElasticAverage)}

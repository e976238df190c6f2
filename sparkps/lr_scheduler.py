"""Learning-rate schedulers driven by the optimizer's ``num_update`` (pure functions of it).

    sched = FactorScheduler(step=100, factor=0.5)
    opt = sparkps.optimizer.create('sgd', learning_rate=0.1, lr_scheduler=sched)

A scheduler holds no history, so a parameter server rebuilt from ``to_config()`` at update ``t`` gives the
same rate as the original. The optimizer sets ``base_lr`` from its ``learning_rate``.
"""
import itertools
import math
import numbers

from sparkps.errors import ConfigError

SCHEDULERS = {}


def _register(cls):
    SCHEDULERS[cls.name] = cls
    return cls


def _positive_int(owner, key, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError(f"{owner}: {key} must be a positive integer, got {value!r}")
    return int(value)


class LRScheduler:
    """Base: optional linear/constant warm-up over ``warmup_steps`` from ``warmup_begin_lr``."""
    name = None
    keys = ()

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0.0, warmup_mode='linear'):
        if warmup_mode not in ('linear', 'constant'):
            raise ConfigError(f"warmup_mode must be 'linear' or 'constant', got {warmup_mode!r}")
        self.base_lr = float(base_lr)
        self.warmup_steps = int(warmup_steps)
        self.warmup_begin_lr = float(warmup_begin_lr)
        self.warmup_mode = warmup_mode

    def __call__(self, num_update):
        """Return the learning rate for update number ``num_update`` (counted from 1)."""
        if num_update < self.warmup_steps:
            if self.warmup_mode == 'constant':
                return self.warmup_begin_lr
            frac = num_update / self.warmup_steps
            return self.warmup_begin_lr + (self.base_lr - self.warmup_begin_lr) * frac
        return self._rate(num_update)

    def _rate(self, num_update):
        raise NotImplementedError

    def to_config(self):
        """Return ``{"name": ..., "params": {...}}`` (plain JSON)."""
        params = {k: getattr(self, k) for k in ('base_lr', 'warmup_steps', 'warmup_begin_lr', 'warmup_mode')
                  + self.keys}
        return {'name': self.name, 'params': params}


@_register
class FactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` every ``step`` updates, never below ``stop_factor_lr``."""
    name = 'factor'
    keys = ('step', 'factor', 'stop_factor_lr')

    def __init__(self, step, factor=1.0, stop_factor_lr=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.step = _positive_int('FactorScheduler', 'step', step)
        if factor > 1.0:
            raise ConfigError(f"FactorScheduler: factor must be <= 1 to decay the rate, got {factor!r}")
        self.factor = float(factor)
        self.stop_factor_lr = float(stop_factor_lr)

    def _rate(self, num_update):
        decays = max(0, (int(num_update) - 1) // self.step)
        return max(self.base_lr * self.factor ** decays, self.stop_factor_lr)


@_register
class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` once the update count passes each entry of ``step`` (increasing)."""
    name = 'multifactor'
    keys = ('step', 'factor')

    def __init__(self, step, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        steps = [_positive_int('MultiFactorScheduler', 'step', s) for s in step]
        if any(b <= a for a, b in itertools.pairwise(steps)):
            raise ConfigError(f"MultiFactorScheduler: steps must increase, got {steps}")
        self.step = steps
        self.factor = float(factor)

    def _rate(self, num_update):
        passed = sum(1 for s in self.step if num_update > s)
        return self.base_lr * self.factor ** passed


@_register
class CosineScheduler(LRScheduler):
    """Cosine decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates (after warm-up)."""
    name = 'cosine'
    keys = ('max_update', 'final_lr')

    def __init__(self, max_update, final_lr=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_update = _positive_int('CosineScheduler', 'max_update', max_update)
        if self.max_update <= self.warmup_steps:
            raise ConfigError("CosineScheduler: max_update must exceed warmup_steps")
        self.final_lr = float(final_lr)

    def _rate(self, num_update):
        if num_update >= self.max_update:
            return self.final_lr
        frac = (num_update - self.warmup_steps) / (self.max_update - self.warmup_steps)
        return self.final_lr + (self.base_lr - self.final_lr) * (1 + math.cos(math.pi * frac)) / 2


@_register
class PolyScheduler(LRScheduler):
    """Polynomial decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates (after warm-up), as MXNet::

        lr = final_lr + (base_lr - final_lr) * (1 - (t - warmup_steps) / (max_update - warmup_steps)) ** pwr
    """
    name = 'poly'
    keys = ('max_update', 'pwr', 'final_lr')

    def __init__(self, max_update, pwr=2, final_lr=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_update = _positive_int('PolyScheduler', 'max_update', max_update)
        if self.max_update <= self.warmup_steps:
            raise ConfigError("PolyScheduler: max_update must exceed warmup_steps")
        self.pwr = float(pwr)
        self.final_lr = float(final_lr)

    def _rate(self, num_update):
        if num_update >= self.max_update:
            return self.final_lr
        frac = (num_update - self.warmup_steps) / (self.max_update - self.warmup_steps)
        return self.final_lr + (self.base_lr - self.final_lr) * (1.0 - frac) ** self.pwr


class _AngelDecay(LRScheduler):
    """Angel's decays (``com.tencent.angel.ml.core.optimizer.decayer``) as pure functions of ``num_update``.

    Angel asks its decay for the next rate once per epoch, before the epoch's first batch (``GraphLearner``,
    the default), so epoch ``e`` (from 0) trains at the decay's step ``e + 1``; with ``on_batch`` (Angel's
    ``ml.opt.decay.on.batch``) once per batch, after that batch's gradient is pushed, so update ``n`` (from 1)
    runs at step ``n - 1`` (the first update at the initial rate, step 0). ``updates_per_epoch`` turns an
    update count into an epoch (unused with ``on_batch``)."""

    def __init__(self, updates_per_epoch=1, on_batch=False, **kwargs):
        super().__init__(**kwargs)
        self.updates_per_epoch = _positive_int(type(self).__name__, 'updates_per_epoch', updates_per_epoch)
        self.on_batch = bool(on_batch)

    def step(self, num_update):
        """Angel's decay step of update ``num_update`` (counted from 1)."""
        done = max(int(num_update) - 1, 0)
        return done if self.on_batch else done // self.updates_per_epoch + 1

    def _rate(self, num_update):
        return self.rate_at(self.step(num_update))

    def rate_at(self, step):
        """The rate after ``step`` calls of Angel's ``next()`` (step 0: the initial rate)."""
        raise NotImplementedError


def _non_negative(owner, key, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
        raise ConfigError(f"{owner}: {key} must be a number >= 0, got {value!r}")
    return float(value)


@_register
class AngelStandardDecay(_AngelDecay):
    """Angel's StandardDecay: ``lr / sqrt(1 + decay * t)`` at step ``t`` (see ``_AngelDecay`` for the steps)."""
    name = 'angel_standard'
    keys = ('updates_per_epoch', 'decay', 'on_batch')

    def __init__(self, updates_per_epoch=1, decay=0.001, on_batch=False, **kwargs):
        super().__init__(updates_per_epoch, on_batch, **kwargs)
        self.decay = _non_negative('AngelStandardDecay', 'decay', decay)

    def rate_at(self, step):
        return self.base_lr / math.sqrt(1.0 + self.decay * step)


@_register
class AngelWarmRestarts(_AngelDecay):
    """Angel's WarmRestarts (SGDR): cosine cycles from ``eta_max`` down to ``eta_min = lr / 10``; the first
    cycle is ``interval`` steps long, each next one twice the last, and after the ``k``-th restart
    ``eta_max`` is divided by ``sqrt(1 + k * alpha)``. At position ``c`` (1..length) of a cycle of ``length``
    steps the rate is ``eta_min + (eta_max - eta_min) * (1 + cos(pi * c / length)) / 2`` (the last step of a
    cycle is ``eta_min``); step 0 is ``lr``."""
    name = 'angel_warm_restarts'
    keys = ('updates_per_epoch', 'alpha', 'interval', 'on_batch')

    def __init__(self, updates_per_epoch=1, alpha=0.001, interval=100, on_batch=False, **kwargs):
        super().__init__(updates_per_epoch, on_batch, **kwargs)
        self.alpha = _non_negative('AngelWarmRestarts', 'alpha', alpha)
        self.interval = _positive_int('AngelWarmRestarts', 'interval', interval)

    def rate_at(self, step):
        if step <= 0:
            return self.base_lr
        eta_min, eta_max = self.base_lr / 10.0, self.base_lr
        start, length, restarts = 0, self.interval, 0
        while step > start + length:          # whole cycles before this step: O(log step)
            start, length, restarts = start + length, length * 2, restarts + 1
            eta_max /= math.sqrt(1.0 + restarts * self.alpha)
        return eta_min + 0.5 * (eta_max - eta_min) * (1.0 + math.cos(math.pi * (step - start) / length))


def scheduler_from_config(config):
    """Rebuild a scheduler from ``to_config()`` output; unknown names or keys -> ConfigError."""
    if not isinstance(config, dict) or set(config) - {'name', 'params'}:
        raise ConfigError(f"lr_scheduler config must be {{'name', 'params'}}, got {config!r}")
    cls = SCHEDULERS.get(config.get('name'))
    if cls is None:
        raise ConfigError(f"unknown lr_scheduler {config.get('name')!r}; known: {sorted(SCHEDULERS)}")
    params = dict(config.get('params') or {})
    allowed = {'base_lr', 'warmup_steps', 'warmup_begin_lr', 'warmup_mode'} | set(cls.keys)
    unknown = set(params) - allowed
    if unknown:
        raise ConfigError(f"unknown lr_scheduler key(s) {sorted(unknown)} for {cls.name!r}")
    return cls(**params)

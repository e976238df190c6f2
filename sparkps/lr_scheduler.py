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

"""Weight initializers with MXNet's interface: ``init(name, array)`` fills ``array`` in place.

    init = Xavier(rnd_type='gaussian', factor_type='in', magnitude=2, seed=0)
    init('fc1_weight', arr)     # random by the rule
    init('fc1_bias', arr)       # zeros, by name

Names ending in ``bias``, ``beta`` or ``moving_mean`` get 0; ``gamma`` and ``moving_var`` get 1; ``weight``
gets the initializer's rule. Random numbers come from a numpy Generator (``seed=`` or ``rng=``, or the
``rng`` argument of a call) and are copied into numpy or CuPy arrays alike.
"""
import re

import numpy as np

from sparkps.errors import ConfigError, ShapeError

_ZERO_SUFFIXES = ('bias', 'beta', 'moving_mean', 'moving_avg')
_ONE_SUFFIXES = ('gamma', 'moving_var', 'moving_inv_var')


def _assign(array, values):
    values = np.asarray(values, dtype=array.dtype)
    if isinstance(array, np.ndarray):
        array[...] = values
    elif hasattr(array, 'set'):
        array.set(np.ascontiguousarray(np.broadcast_to(values, array.shape)))
    else:
        array[...] = values


class Initializer:
    """Base class: dispatches on the parameter name; subclasses implement ``_init_weight``."""

    def __init__(self, seed=None, rng=None):
        self.rng = rng if rng is not None else np.random.default_rng(seed)

    def __call__(self, name, array, rng=None):
        """Fill ``array`` in place according to ``name``; returns nothing. Unknown names -> ConfigError."""
        rng = rng if rng is not None else self.rng
        name = str(name)
        if name.endswith(_ZERO_SUFFIXES):
            _assign(array, 0.0)
        elif name.endswith(_ONE_SUFFIXES):
            _assign(array, 1.0)
        elif name.endswith('weight'):
            self._init_weight(name, array, rng)
        else:
            self._init_default(name, array, rng)

    def _init_default(self, name, array, rng):
        raise ConfigError(f"initializer {type(self).__name__}: no rule for parameter {name!r} (names "
                          f"should end in weight, bias, gamma, beta, moving_mean or moving_var)")

    def _init_weight(self, name, array, rng):
        raise NotImplementedError

    def __repr__(self):
        return f'{type(self).__name__}()'


class Zero(Initializer):
    """Every parameter (weights too) set to 0."""

    def _init_weight(self, name, array, rng):
        _assign(array, 0.0)


class One(Initializer):
    """Weights set to 1 (biases still 0)."""

    def _init_weight(self, name, array, rng):
        _assign(array, 1.0)


class Constant(Initializer):
    """Weights set to ``value`` (biases still 0)."""

    def __init__(self, value, **kwargs):
        super().__init__(**kwargs)
        self.value = float(value)

    def _init_weight(self, name, array, rng):
        _assign(array, self.value)


class Uniform(Initializer):
    """Weights drawn from U(-scale, scale)."""

    def __init__(self, scale=0.07, **kwargs):
        super().__init__(**kwargs)
        self.scale = float(scale)

    def _init_weight(self, name, array, rng):
        _assign(array, rng.uniform(-self.scale, self.scale, size=array.shape))


class Normal(Initializer):
    """Weights drawn from N(0, sigma^2)."""

    def __init__(self, sigma=0.01, **kwargs):
        super().__init__(**kwargs)
        self.sigma = float(sigma)

    def _init_weight(self, name, array, rng):
        _assign(array, rng.normal(0.0, self.sigma, size=array.shape))


class Xavier(Initializer):
    """Glorot/Xavier: scale = sqrt(magnitude / factor), factor the fan-in, fan-out or their mean.

    With ``rnd_type='uniform'`` weights are U(-scale, scale); with ``'gaussian'`` N(0, scale^2).
    For a weight of shape (out, in, *kernel): fan_in = in * prod(kernel), fan_out = out * prod(kernel).
    """

    def __init__(self, rnd_type='uniform', factor_type='avg', magnitude=3.0, **kwargs):
        super().__init__(**kwargs)
        if rnd_type not in ('uniform', 'gaussian'):
            raise ConfigError(f"Xavier: rnd_type must be 'uniform' or 'gaussian', got {rnd_type!r}")
        if factor_type not in ('avg', 'in', 'out'):
            raise ConfigError(f"Xavier: factor_type must be 'avg', 'in' or 'out', got {factor_type!r}")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, float(magnitude)

    def _init_weight(self, name, array, rng):
        shape = tuple(array.shape)
        if len(shape) < 2:
            raise ShapeError(f"Xavier initializer needs a weight of 2 or more dimensions; {name!r} has "
                             f"shape {shape}")
        receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        factor = {'avg': (fan_in + fan_out) / 2.0, 'in': fan_in, 'out': fan_out}[self.factor_type]
        scale = np.sqrt(self.magnitude / factor)
        if self.rnd_type == 'uniform':
            values = rng.uniform(-scale, scale, size=shape)
        else:
            values = rng.normal(0.0, scale, size=shape)
        _assign(array, values)

    def __repr__(self):
        return f'Xavier(rnd_type={self.rnd_type!r}, factor_type={self.factor_type!r}, magnitude={self.magnitude})'


class MSRAPrelu(Xavier):
    """He initialisation: Xavier with gaussian draws and magnitude 2 / (1 + slope^2)."""

    def __init__(self, factor_type='avg', slope=0.25, **kwargs):
        super().__init__(rnd_type='gaussian', factor_type=factor_type, magnitude=2.0 / (1 + slope ** 2),
                         **kwargs)


class Mixed(Initializer):
    """Use the first initializer whose regular expression matches the parameter name.

        Mixed(['.*embed.*', '.*'], [Normal(0.1), Xavier()])
    """

    def __init__(self, patterns, initializers, **kwargs):
        super().__init__(**kwargs)
        if len(patterns) != len(initializers):
            raise ConfigError(f"Mixed: {len(patterns)} patterns but {len(initializers)} initializers")
        self.map = [(re.compile(p), init) for p, init in zip(patterns, initializers)]

    def __call__(self, name, array, rng=None):
        for pattern, init in self.map:
            if pattern.match(str(name)):
                init(name, array, rng=rng)
                return
        raise ConfigError(f"Mixed initializer: parameter {name!r} matches none of "
                          f"{[p.pattern for p, _ in self.map]}")


def create(init):
    """Return ``init`` if it is an Initializer, else build one from a name ('xavier', 'uniform', ...)."""
    if isinstance(init, Initializer):
        return init
    table = {'xavier': Xavier, 'uniform': Uniform, 'normal': Normal, 'zero': Zero, 'zeros': Zero,
             'one': One, 'ones': One, 'msra': MSRAPrelu}
    cls = table.get(str(init).lower())
    if cls is None:
        raise ConfigError(f"unknown initializer {init!r}; known: {sorted(table)}")
    return cls()

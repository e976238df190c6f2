"""Weight initializers with MXNet's interface: ``init(name, array)`` fills ``array`` in place.

    init = Xavier(rnd_type='gaussian', factor_type='in', magnitude=2, seed=0)
    init('fc1_weight', arr)     # random by the rule
    init('fc1_bias', arr)       # zeros, by name

Names ending in ``bias``, ``beta`` or ``moving_mean`` get 0; ``gamma`` and ``moving_var`` get 1; ``weight``
gets the initializer's rule; names starting with ``upsampling`` get ``Bilinear``'s (as MXNet). Random numbers
come from a numpy Generator (``seed=`` or ``rng=``, or the ``rng`` argument of a call) and are copied into
numpy or CuPy arrays alike.

``dumps()`` (also ``str(init)``) gives MXNet's JSON form ``'["xavier", {"magnitude": 2, ...}]'``, which
``create`` reads back; ``Variable('w', init=Xavier())`` stores it so the variable keeps its own initializer.
"""
import json
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
    """Base class: dispatches on the parameter name; subclasses implement ``_init_weight``. Keyword
    arguments beyond ``seed``/``rng`` are the settings ``dumps`` writes."""

    def __init__(self, seed=None, rng=None, **settings):
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self._kwargs = settings

    def dumps(self):
        """MXNet's JSON form: ``[lower-case class name, settings]``."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __str__(self):
        return self.dumps()

    def __call__(self, name, array, rng=None):
        """Fill ``array`` in place according to ``name``; returns nothing. Unknown names -> ConfigError."""
        rng = rng if rng is not None else self.rng
        name = str(name)
        if name.startswith('upsampling'):
            Bilinear._init_weight(self, name, array, rng)
        elif name.endswith(_ZERO_SUFFIXES):
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
    """Weights set to ``value``, a number or an array broadcast to the weight's shape (biases still 0)."""

    def __init__(self, value, **kwargs):
        value = value.tolist() if hasattr(value, 'tolist') and np.ndim(value) else value
        super().__init__(value=value, **kwargs)
        self.value = np.asarray(value, dtype=np.float64) if np.ndim(value) else float(value)

    def _init_weight(self, name, array, rng):
        try:
            _assign(array, np.broadcast_to(self.value, array.shape))
        except ValueError:
            raise ShapeError(f"Constant initializer: value of shape {np.shape(self.value)} does not fit "
                             f"{name!r} of shape {tuple(array.shape)}") from None


class Bilinear(Initializer):
    """Bilinear up-sampling kernels for a (channels, 1, h, w) Deconvolution weight (MXNet's ``Bilinear``)."""

    def _init_weight(self, name, array, rng=None):
        shape = tuple(array.shape)
        if len(shape) != 4:
            raise ShapeError(f"Bilinear initializer needs a 4-d weight; {name!r} has shape {shape}")
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        x = 1 - np.abs(np.arange(shape[3]) / f - c)
        y = 1 - np.abs(np.arange(shape[2]) / f - c)
        _assign(array, np.broadcast_to(np.outer(y, x).astype(np.float32), shape))


class Uniform(Initializer):
    """Weights drawn from U(-scale, scale)."""

    def __init__(self, scale=0.07, **kwargs):
        super().__init__(scale=scale, **kwargs)
        self.scale = float(scale)

    def _init_weight(self, name, array, rng):
        _assign(array, rng.uniform(-self.scale, self.scale, size=array.shape))


class Normal(Initializer):
    """Weights drawn from N(0, sigma^2)."""

    def __init__(self, sigma=0.01, **kwargs):
        super().__init__(sigma=sigma, **kwargs)
        self.sigma = float(sigma)

    def _init_weight(self, name, array, rng):
        _assign(array, rng.normal(0.0, self.sigma, size=array.shape))


class Xavier(Initializer):
    """Glorot/Xavier: scale = sqrt(magnitude / factor), factor the fan-in, fan-out or their mean.

    With ``rnd_type='uniform'`` weights are U(-scale, scale); with ``'gaussian'`` N(0, scale^2).
    For a weight of shape (out, in, *kernel): fan_in = in * prod(kernel), fan_out = out * prod(kernel).
    """

    def __init__(self, rnd_type='uniform', factor_type='avg', magnitude=3, **kwargs):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude, **kwargs)
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
        self._kwargs = {'factor_type': factor_type, 'slope': slope}


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


INITIALIZERS = {'xavier': Xavier, 'uniform': Uniform, 'normal': Normal, 'zero': Zero, 'zeros': Zero, 'one': One,
                'ones': One, 'msra': MSRAPrelu, 'msraprelu': MSRAPrelu, 'constant': Constant, 'bilinear': Bilinear}


def create(init):
    """Return ``init`` if it is an Initializer, else build one from a name ('xavier', 'uniform', ...) or from
    ``dumps()`` output (``'["constant", {"value": 1}]'``)."""
    if isinstance(init, Initializer):
        return init
    text = str(init).strip()
    name, settings = text, {}
    if text.startswith('['):
        try:
            name, settings = json.loads(text)
        except ValueError:
            raise ConfigError(f"cannot read initializer {text!r}: expected '[name, {{settings}}]' JSON") from None
    cls = INITIALIZERS.get(str(name).lower())
    if cls is None:
        raise ConfigError(f"unknown initializer {name!r}; known: {sorted(INITIALIZERS)}")
    try:
        return cls(**settings)
    except TypeError as exc:
        raise ConfigError(f"initializer {name!r} does not take {settings}: {exc}") from None

"""The Optimizer base class: hyper-parameters, update counts, JSON configs and state as numpy arrays.

An optimizer updates a weight in place from its gradient::

    opt = sparkps.train.optimizer.create('sgd', learning_rate=0.1, momentum=0.9)
    state = opt.create_state(0, weight)
    opt.update(0, weight, grad, state)        # weight changes in place

Every update first forms ``g = clip(rescale_grad * grad, clip_gradient) + wd * weight`` (FTRL keeps
``wd`` out of ``g`` and uses it in its closed form instead). Works for numpy and CuPy arrays alike: all
arithmetic goes through numpy ufuncs with ``out=``, which CuPy arrays take over.

Optimizers travel to the parameter servers as ``to_config()`` dicts (plain JSON), never pickled, and their
state travels as a list of numpy arrays (``state_to_arrays``).
"""
import numbers

import numpy as np

from sparkps.backend import asnumpy as _to_numpy
from sparkps.errors import ConfigError, DataError
from sparkps.train.lr_scheduler import LRScheduler, scheduler_from_config

OPTIMIZERS = {}
_BASE_KEYS = ('learning_rate', 'wd', 'rescale_grad', 'clip_gradient', 'begin_num_update', 'lr_mult',
              'wd_mult', 'param_idx2name')


def register(cls):
    """Class decorator: make ``cls`` available to ``create(cls.name)`` and ``from_config``."""
    OPTIMIZERS[cls.name] = cls
    return cls


def create(name, **kwargs):
    """Build an optimizer by name (``'sgd'``, ``'nag'``, ``'adam'``, ...). Unknown names and unknown
    hyper-parameters -> ConfigError naming them."""
    if isinstance(name, Optimizer):
        return name
    cls = OPTIMIZERS.get(str(name).lower())
    if cls is None:
        raise ConfigError(f"unknown optimizer {name!r}; known: {sorted(OPTIMIZERS)}")
    _check_hyper_params(cls, kwargs)
    return cls(**kwargs)


def _check_hyper_params(cls, params):
    known = set(_BASE_KEYS) | set(cls.hyper_params) | {'lr_scheduler'}
    unknown = set(params) - known
    if unknown:
        known = sorted(known)
        raise ConfigError(f"unknown hyper-parameter(s) {sorted(unknown)} for optimizer {cls.name!r}; "
                          f"known: {known}")


def from_config(config):
    """Rebuild an optimizer from ``Optimizer.to_config()`` output (a JSON-able dict).

    Unknown optimizer names, unknown top-level keys and unknown hyper-parameters raise ConfigError
    naming them.
    """
    if not isinstance(config, dict):
        raise ConfigError(f"optimizer config must be a dict, got {type(config).__name__}")
    extra = set(config) - {'name', 'params', 'lr_scheduler'}
    if extra:
        raise ConfigError(f"unknown optimizer config key(s) {sorted(extra)}")
    name = config.get('name')
    cls = OPTIMIZERS.get(str(name).lower()) if name is not None else None
    if cls is None:
        raise ConfigError(f"unknown optimizer {name!r} in config; known: {sorted(OPTIMIZERS)}")
    params = dict(config.get('params') or {})
    _check_hyper_params(cls, params)
    sched = config.get('lr_scheduler')
    if sched is not None:
        params['lr_scheduler'] = scheduler_from_config(sched)
    return cls(**params)


def _check_number(name, value, minimum=None, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"optimizer parameter {name!r} must be a number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"optimizer parameter {name!r} must be >= {minimum}, got {value!r}")
    return float(value)


def _int_keyed(name, mapping):
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise ConfigError(f"optimizer parameter {name!r} must be a dict, got {type(mapping).__name__}")
    try:
        return {int(k): v for k, v in mapping.items()}
    except (TypeError, ValueError):
        raise ConfigError(f"optimizer parameter {name!r} needs integer parameter indices as keys") from None


class Optimizer:
    """Base class. Subclasses set ``name``, ``hyper_params`` and implement ``create_state``/``_step``.

    Parameters: ``learning_rate``; ``wd`` (L2 weight decay); ``rescale_grad`` (gradients are multiplied by
    it first, FeedForward sets 1/batch_size); ``clip_gradient`` (clip to [-c, c] after rescaling, None = off);
    ``lr_scheduler`` (an LRScheduler or its config, driven by ``num_update``); ``begin_num_update``;
    ``lr_mult``/``wd_mult`` ({index: multiplier}); ``param_idx2name`` ({index: name}: parameters whose name
    does not end in ``_weight`` get no weight decay unless ``wd_mult`` says otherwise, as MXNet).
    """
    name = None
    hyper_params = ()
    wd_in_grad = True

    def __init__(self, learning_rate=0.01, wd=0.0, rescale_grad=1.0, clip_gradient=None, lr_scheduler=None,
                 begin_num_update=0, lr_mult=None, wd_mult=None, param_idx2name=None):
        self.lr = _check_number('learning_rate', learning_rate, 0.0)
        self.wd = _check_number('wd', wd, 0.0)
        self.rescale_grad = _check_number('rescale_grad', rescale_grad)
        self.clip_gradient = _check_number('clip_gradient', clip_gradient, 0.0, allow_none=True)
        if isinstance(lr_scheduler, dict):
            lr_scheduler = scheduler_from_config(lr_scheduler)
        if lr_scheduler is not None and not isinstance(lr_scheduler, LRScheduler):
            raise ConfigError(f"lr_scheduler must be an LRScheduler or its config, got {lr_scheduler!r}")
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is not None:
            lr_scheduler.base_lr = self.lr
        self.begin_num_update = int(begin_num_update)
        self.num_update = self.begin_num_update
        self.index_update_count = {}
        self.param_idx2name = {k: str(v) for k, v in _int_keyed('param_idx2name', param_idx2name).items()}
        self.lr_mult = {k: float(v) for k, v in _int_keyed('lr_mult', lr_mult).items()}
        self.wd_mult = {k: float(v) for k, v in _int_keyed('wd_mult', wd_mult).items()}
        self._explicit_wd_mult = dict(self.wd_mult)
        for index, pname in self.param_idx2name.items():
            if not pname.endswith('_weight') and index not in self.wd_mult:
                self.wd_mult[index] = 0.0
        self._scratch = {}

    # ----- learning rate and counts -------------------------------------------------------------
    @property
    def learning_rate(self):
        """The learning rate the next update uses (the scheduler's value at ``num_update`` if any)."""
        return self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr

    def set_learning_rate(self, lr):
        """Set the base learning rate (with a scheduler: the scheduler's ``base_lr``)."""
        self.lr = _check_number('learning_rate', lr, 0.0)
        if self.lr_scheduler is not None:
            self.lr_scheduler.base_lr = self.lr

    def _update_count(self, index):
        count = self.index_update_count.get(index, self.begin_num_update) + 1
        self.index_update_count[index] = count
        self.num_update = max(self.num_update, count)
        return count

    def _get_lr(self, index):
        return self.learning_rate * self.lr_mult.get(index, 1.0)

    def _get_wd(self, index):
        return self.wd * self.wd_mult.get(index, 1.0)

    def update_counts(self):
        """Return the update counters as a JSON-able dict (for checkpoints)."""
        return {'num_update': self.num_update,
                'index_update_count': {str(k): v for k, v in self.index_update_count.items()}}

    def set_update_counts(self, counts):
        """Restore counters saved by ``update_counts()``."""
        self.num_update = int(counts['num_update'])
        self.index_update_count = {int(k): int(v) for k, v in counts['index_update_count'].items()}

    # ----- config -------------------------------------------------------------------------------
    def to_config(self):
        """Return ``{"name", "params", "lr_scheduler"}``: plain JSON that ``from_config`` rebuilds."""
        params = {'learning_rate': self.lr, 'wd': self.wd, 'rescale_grad': self.rescale_grad,
                  'clip_gradient': self.clip_gradient, 'begin_num_update': self.begin_num_update,
                  'lr_mult': {str(k): v for k, v in self.lr_mult.items()},
                  'wd_mult': {str(k): v for k, v in self._explicit_wd_mult.items()},
                  'param_idx2name': {str(k): v for k, v in self.param_idx2name.items()}}
        for key in self.hyper_params:
            params[key] = getattr(self, key)
        sched = self.lr_scheduler.to_config() if self.lr_scheduler is not None else None
        return {'name': self.name, 'params': params, 'lr_scheduler': sched}

    def __repr__(self):
        hyper = ', '.join(f'{k}={getattr(self, k)!r}' for k in self.hyper_params)
        return f'{type(self).__name__}(learning_rate={self.lr}, wd={self.wd}, {hyper})'

    # ----- state --------------------------------------------------------------------------------
    def create_state(self, index, weight):
        """Return the optimizer state for parameter ``index``: None or a tuple of arrays like ``weight``."""
        return None

    def _zeros_state(self, weight, count):
        return tuple(np.zeros_like(weight) for _ in range(count))

    def state_to_arrays(self, state):
        """Return ``state`` as a list of numpy arrays (copies), e.g. for a checkpoint."""
        if state is None:
            return []
        return [np.array(_to_numpy(a), copy=True) for a in state]

    def state_from_arrays(self, index, weight, arrays):
        """Build the state of parameter ``index`` from ``state_to_arrays`` output, on ``weight``'s backend.

        Raises DataError when the number or shapes of the arrays do not fit this optimizer and weight.
        """
        state = self.create_state(index, weight)
        expected = [] if state is None else list(state)
        if len(arrays) != len(expected):
            raise DataError(f"optimizer {self.name!r} state of parameter {index} needs {len(expected)} "
                            f"arrays, got {len(arrays)}")
        for target, source in zip(expected, arrays):
            source = np.asarray(source)
            if tuple(source.shape) != tuple(target.shape):
                raise DataError(f"optimizer {self.name!r} state of parameter {index}: shape "
                                f"{tuple(source.shape)} does not match weight shape {tuple(target.shape)}")
            if isinstance(target, np.ndarray):
                target[...] = source
            else:
                target.set(np.ascontiguousarray(source, dtype=target.dtype))
        return state

    # ----- update -------------------------------------------------------------------------------
    def _buffers(self, index, weight):
        """Two scratch arrays shaped like ``weight``, reused across steps (no per-step allocation)."""
        bufs = self._scratch.get(index)
        if (bufs is None or bufs[0].shape != weight.shape or bufs[0].dtype != weight.dtype
                or type(bufs[0]) is not type(weight)):
            bufs = (np.empty_like(weight), np.empty_like(weight))
            self._scratch[index] = bufs
        return bufs

    def _prepared_grad(self, index, weight, grad, wd):
        """Return (g, tmp): g = clip(rescale_grad * grad) (+ wd * weight), in scratch memory."""
        if tuple(grad.shape) != tuple(weight.shape):
            raise DataError(f"optimizer {self.name!r}: gradient shape {tuple(grad.shape)} of parameter "
                            f"{index} does not match weight shape {tuple(weight.shape)}")
        g, tmp = self._buffers(index, weight)
        np.multiply(grad, self.rescale_grad, out=g)
        if self.clip_gradient is not None:
            np.clip(g, -self.clip_gradient, self.clip_gradient, out=g)
        if wd and self.wd_in_grad:
            np.multiply(weight, wd, out=tmp)
            g += tmp
        return g, tmp

    def update(self, index, weight, grad, state):
        """Update ``weight`` in place from ``grad`` (left unchanged) and ``state`` (updated in place)."""
        count = self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g, tmp = self._prepared_grad(index, weight, grad, wd)
        self._step(weight, g, tmp, state, lr, wd, count)

    def _step(self, weight, g, tmp, state, lr, wd, count):
        raise NotImplementedError


class Updater:
    """Apply an optimizer to (index, grad, weight) triples, keeping per-index state (MXNet's updater)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}

    def __call__(self, index, grad, weight):
        if index not in self.states:
            self.states[index] = self.optimizer.create_state(index, weight)
        self.optimizer.update(index, weight, grad, self.states[index])


def get_updater(optimizer):
    """Return an ``Updater`` for ``optimizer`` (as ``mx.optimizer.get_updater``)."""
    return Updater(optimizer)

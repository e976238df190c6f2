"""The Optimizer base class: hyper-parameters, update counts, JSON configs and state as numpy arrays.

An optimizer updates a weight in place from its gradient::

    opt = sparkps.optimizer.create('sgd', learning_rate=0.1, momentum=0.9)
    state = opt.create_state(0, weight)
    opt.update(0, weight, grad, state)        # weight changes in place

Every update first forms the gradient ``g`` the way MXNet 1.x's kernel for that optimizer does
(``src/operator/optimizer_op-inl.h``), named by the class attribute ``grad_decay``:

- ``'after_clip'``: ``g = clip(rescale_grad * grad) + wd * weight`` (SGD, NAG, Signum);
- ``'before_clip'``: ``g = clip(rescale_grad * grad + wd * weight)`` (Adam, RMSProp, Adamax, Nadam, FTML);
- ``'none'``: ``g = clip(rescale_grad * grad)``; the step applies ``wd`` itself (AdaGrad, AdaDelta, FTRL,
  LAMB, SGLD).

Works for numpy and CuPy arrays alike: all arithmetic goes through numpy ufuncs with ``out=``, which CuPy
arrays take over. ``multi_precision=True`` keeps a float32 master copy of float16 weights in the state
(``update_multi_precision``, which ``Updater`` calls), as MXNet.

Optimizers travel to the parameter servers as ``to_config()`` dicts (plain JSON), never pickled, and their
state travels as a list of numpy arrays (``state_to_arrays``).
"""
import numbers

import numpy as np

from sparkps.backend import asnumpy as _to_numpy
from sparkps.errors import ConfigError, DataError
from sparkps.lr_scheduler import LRScheduler, scheduler_from_config
from sparkps.optimizer.abilities import LAZY_ROWS, ROW_COUNTS, check_ability
from sparkps.optimizer.sparse import dense_part, is_row_sparse, sparse_update

OPTIMIZERS = {}
_BASE_KEYS = ('learning_rate', 'wd', 'rescale_grad', 'clip_gradient', 'begin_num_update', 'lr_mult',
              'wd_mult', 'param_idx2name', 'multi_precision', 'clip_weights')
_SET_LR_WARNING = ("LRScheduler of the optimizer has already been defined. Note that set_learning_rate can "
                   "mutate the value of the learning rate of the optimizer only when the LRScheduler of the "
                   "optimizer is undefined.")
_DECAYED_SUFFIXES = ('_weight', '_gamma')


def register(cls):
    """Class decorator: make ``cls`` available to ``create(cls.name)`` and ``from_config``. A class without a
    ``name`` (an MXNet-style custom optimizer) is registered under its lower-cased class name."""
    if not cls.__dict__.get('name'):
        cls.name = cls.__name__.lower()
    if cls.declares(ROW_COUNTS) and cls.update_rows is Optimizer.update_rows:
        raise ConfigError(f"optimizer {cls.name!r} declares 'row_counts' but does not override update_rows, the "
                          f"per-row update that reads each row's count")
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
    known = set(_BASE_KEYS) | set(cls.hyper_params) | set(cls.aliases) | {'lr_scheduler', 'sym'}
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

    Parameters (MXNet 1.x's): ``learning_rate`` (None: the scheduler's rate, or 0.01 without one; given
    together with ``lr_scheduler`` it overwrites the scheduler's ``base_lr``); ``wd`` (L2 weight decay);
    ``rescale_grad`` (gradients are multiplied by it first, FeedForward sets 1/batch_size); ``clip_gradient``
    (clip to [-c, c], None = off); ``lr_scheduler`` (an LRScheduler or its config, driven by ``num_update``);
    ``begin_num_update``; ``lr_mult``/``wd_mult`` ({index or parameter name: multiplier});
    ``param_idx2name`` ({index: name}: parameters whose name ends neither in ``_weight`` nor in ``_gamma`` get
    no weight decay unless ``wd_mult`` says otherwise); ``sym`` (a Symbol whose ``__lr_mult__`` /
    ``__wd_mult__`` attributes set the multipliers of its arguments, found by name through
    ``param_idx2name``); ``multi_precision`` (float32 master copies of float16 weights); ``clip_weights``
    (clip weights to [-c, c] after each update, None = off).

        >>> opt = create('sgd', learning_rate=0.1, param_idx2name={0: 'fc_weight', 1: 'fc_bias'}, wd=1e-4)
        >>> opt.wd_mult
        {1: 0.0}
    """
    name = None
    hyper_params = ()
    aliases = ()            # older hyper-parameter names still accepted on construction
    grad_decay = 'after_clip'
    elementwise = True      # an update of a piece of a weight equals that piece of the whole update
    ABILITIES = frozenset()  # what the class can do (sparkps.optimizer.abilities): none unless declared
    STATES = 0              # state arrays per weight element with the default hyper-parameters (see num_states)
    lazy_update = True      # with 'lazy_rows': a RowSparse gradient updates only its rows (SGD and Adam's option)

    def __init__(self, learning_rate=None, wd=0.0, rescale_grad=1.0, clip_gradient=None, lr_scheduler=None,
                 begin_num_update=0, lr_mult=None, wd_mult=None, param_idx2name=None, sym=None,
                 multi_precision=False, clip_weights=None):
        if isinstance(lr_scheduler, dict):
            lr_scheduler = scheduler_from_config(lr_scheduler)
        if lr_scheduler is not None and not isinstance(lr_scheduler, LRScheduler):
            raise ConfigError(f"lr_scheduler must be an LRScheduler or its config, got {lr_scheduler!r}")
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = _check_number('learning_rate', learning_rate, 0.0, allow_none=True)
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is not None and self.lr is not None:
            lr_scheduler.base_lr = self.lr
        self.wd = _check_number('wd', wd, 0.0)
        self.rescale_grad = _check_number('rescale_grad', rescale_grad)
        self.clip_gradient = _check_number('clip_gradient', clip_gradient, 0.0, allow_none=True)
        self.clip_weights = _check_number('clip_weights', clip_weights, 0.0, allow_none=True)
        self.multi_precision = bool(multi_precision)
        self.begin_num_update = int(begin_num_update)
        self.num_update = self.begin_num_update
        self.index_update_count = {}
        self.param_idx2name = {k: str(v) for k, v in _int_keyed('param_idx2name', param_idx2name).items()}
        sym_lr, sym_wd = _symbol_mults(sym, self.param_idx2name)
        self.lr_mult = {**sym_lr, **self._by_index('lr_mult', lr_mult)}
        self._explicit_wd_mult = {**sym_wd, **self._by_index('wd_mult', wd_mult)}
        self.wd_mult = dict(self._explicit_wd_mult)
        for index, pname in self.param_idx2name.items():
            if not pname.endswith(_DECAYED_SUFFIXES) and index not in self.wd_mult:
                self.wd_mult[index] = 0.0
        self._scratch = {}

    def _by_index(self, what, mapping):
        """{index: float} from a dict keyed by indices or by parameter names (names need param_idx2name)."""
        if mapping is None:
            return {}
        if not isinstance(mapping, dict):
            raise ConfigError(f"optimizer parameter {what!r} must be a dict, got {type(mapping).__name__}")
        index_of = {n: i for i, n in self.param_idx2name.items()}
        out = {}
        for key, value in mapping.items():
            if isinstance(key, str) and not key.lstrip('-').isdigit():
                if key not in index_of:
                    raise ConfigError(f"optimizer parameter {what!r} names parameter {key!r}, which is not in "
                                      f"param_idx2name {sorted(index_of)}")
                key = index_of[key]
            out[int(key)] = _check_number(f'{what}[{key}]', value)
        return out

    register = staticmethod(register)                 # MXNet's Optimizer.register / create_optimizer
    create_optimizer = staticmethod(create)

    @property
    def idx2name(self):
        """MXNet's name for ``param_idx2name``."""
        return self.param_idx2name

    @property
    def _index_update_count(self):
        """MXNet's name for ``index_update_count`` (custom optimizers written for MXNet read it)."""
        return self.index_update_count

    # ----- learning rate and counts -------------------------------------------------------------
    @property
    def learning_rate(self):
        """The learning rate the next update uses (the scheduler's value at ``num_update`` if any)."""
        return self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr

    def set_learning_rate(self, lr):
        """Set the learning rate. With an ``lr_scheduler`` raises UserWarning, as MXNet does (the scheduler
        owns the rate then; change ``lr_scheduler.base_lr`` instead)."""
        if self.lr_scheduler is not None:
            raise UserWarning(_SET_LR_WARNING)
        self.lr = _check_number('learning_rate', lr, 0.0)

    def set_lr_mult(self, args_lr_mult):
        """Replace the learning-rate multipliers ({index or name: multiplier})."""
        self.lr_mult = self._by_index('lr_mult', args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Replace the explicit weight-decay multipliers ({index or name: multiplier}); parameters not named
        ``*_weight``/``*_gamma`` keep no decay unless listed."""
        self._explicit_wd_mult = self._by_index('wd_mult', args_wd_mult)
        self.wd_mult = dict(self._explicit_wd_mult)
        for index, pname in self.param_idx2name.items():
            if not pname.endswith(_DECAYED_SUFFIXES) and index not in self.wd_mult:
                self.wd_mult[index] = 0.0

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
        if self.multi_precision:
            params['multi_precision'] = True
        if self.clip_weights is not None:
            params['clip_weights'] = self.clip_weights
        for key in self.hyper_params:
            params[key] = getattr(self, key)
        sched = self.lr_scheduler.to_config() if self.lr_scheduler is not None else None
        return {'name': self.name, 'params': params, 'lr_scheduler': sched}

    def __repr__(self):
        hyper = ', '.join(f'{k}={getattr(self, k)!r}' for k in self.hyper_params)
        return f'{type(self).__name__}(learning_rate={self.lr}, wd={self.wd}, {hyper})'

    # ----- abilities ----------------------------------------------------------------------------
    @classmethod
    def declares(cls, ability):
        """Whether the class declares ``ability`` (one of :data:`sparkps.optimizer.abilities.KNOWN_ABILITIES`);
        ConfigError naming an unknown one. Never blocks."""
        return check_ability(ability) in cls.ABILITIES

    def is_capable(self, ability):
        """Whether this optimizer, with its hyper-parameters, can do ``ability``: what its class declares, less
        ``'lazy_rows'`` when ``lazy_update`` is off. ConfigError naming an unknown ability. Never blocks."""
        return self.declares(ability) and (ability != LAZY_ROWS or self.lazy_update)

    def num_states(self):
        """The state arrays (each shaped like the weight) ``create_state`` makes with these hyper-parameters."""
        return self.STATES

    # ----- state --------------------------------------------------------------------------------
    def create_state(self, index, weight):
        """Return the optimizer state for parameter ``index``: None (this base keeps none) or a tuple of
        arrays like ``weight``."""

    def create_state_multi_precision(self, index, weight):
        """As ``create_state``; for a float16 weight with ``multi_precision`` the state is
        ``(float32 master copy, *create_state(index, master))``."""
        if self.multi_precision and not is_row_sparse(weight) and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (master,) + tuple(self.create_state(index, master) or ())
        return self.create_state(index, weight)

    def _zeros_state(self, weight, count):
        return tuple(np.zeros_like(dense_part(weight)) for _ in range(count))

    def state_to_arrays(self, state):
        """Return ``state`` as a list of numpy arrays (copies), e.g. for a checkpoint."""
        if state is None:
            return []
        return [np.array(_to_numpy(a), copy=True) for a in state]

    def state_from_arrays(self, index, weight, arrays):
        """Build the state of parameter ``index`` from ``state_to_arrays`` output, on ``weight``'s backend.

        Raises DataError when the number or shapes of the arrays do not fit this optimizer and weight.
        """
        state = self.create_state_multi_precision(index, weight)
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
        """Return (g, tmp): the gradient as ``grad_decay`` forms it, in scratch memory."""
        if tuple(grad.shape) != tuple(weight.shape):
            raise DataError(f"optimizer {self.name!r}: gradient shape {tuple(grad.shape)} of parameter "
                            f"{index} does not match weight shape {tuple(weight.shape)}")
        g, tmp = self._buffers(index, weight)
        np.multiply(grad, self.rescale_grad, out=g)
        decay = wd and self.grad_decay != 'none'
        if decay and self.grad_decay == 'before_clip':
            np.multiply(weight, wd, out=tmp)
            g += tmp
        if self.clip_gradient is not None:
            np.clip(g, -self.clip_gradient, self.clip_gradient, out=g)
        if decay and self.grad_decay == 'after_clip':
            np.multiply(weight, wd, out=tmp)
            g += tmp
        return g, tmp

    def update(self, index, weight, grad, state):
        """Update ``weight`` in place from ``grad`` (left unchanged) and ``state`` (updated in place).
        Lists of indices, weights, grads and states update several parameters, as MXNet's multi-tensor
        updates (each exactly as its own update)."""
        if isinstance(index, (list, tuple)):
            for args in _parallel(index, weight, grad, state):
                self.update(*args)
            return
        if is_row_sparse(grad) or is_row_sparse(weight):    # sparkps.rows.values.RowSparse (optimizer/sparse.py)
            sparse_update(self, index, weight, grad, state)
            return
        count = self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g, tmp = self._prepared_grad(index, weight, grad, wd)
        self._step(weight, g, tmp, state, lr, wd, count, index)
        if self.clip_weights is not None:
            np.clip(weight, -self.clip_weights, self.clip_weights, out=weight)

    def update_multi_precision(self, index, weight, grad, state):
        """``update``; for a float16 weight with ``multi_precision`` the float32 master copy in ``state``
        is updated from a float32 gradient and cast back into ``weight``. Takes lists as ``update``."""
        if isinstance(index, (list, tuple)):
            for args in _parallel(index, weight, grad, state):
                self.update_multi_precision(*args)
            return
        if self.multi_precision and not is_row_sparse(weight) and weight.dtype == np.float16:
            master, inner = state[0], tuple(state[1:]) or None
            self.update(index, master, grad if is_row_sparse(grad) else grad.astype(np.float32), inner)
            weight[...] = master.astype(np.float16)
            return
        self.update(index, weight, grad, state)

    def update_rows(self, index, weights, grads, states, counts):
        """The per-row update of a sparse table (:class:`sparkps.optimizer.rowwise.RowOptimizer`): update the
        gathered rows ``weights`` (n, dim) of parameter ``index`` and their gathered ``states`` (a tuple, or None)
        in place from ``grads`` (n, dim), left as they are. ``counts`` (n,) holds each row's own update count,
        this update included. Here it is ``update`` on the gathered rows, with the parameter's own update count;
        an optimizer whose step reads each row's count (one declaring ``'row_counts'``: Adam's bias correction)
        overrides it. Never blocks."""
        self.update(index, weights, grads, states)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        raise NotImplementedError


def _parallel(index, weight, grad, state):
    lists = [list(index), list(weight), list(grad), list(state)]
    if len({len(v) for v in lists}) != 1:
        raise ConfigError("optimizer update: %d indices, %d weights, %d gradients and %d states must match"
                          % tuple(len(v) for v in lists))
    return zip(*lists)


def _symbol_mults(sym, idx2name):
    """({index: lr_mult}, {index: wd_mult}) from the ``__lr_mult__``/``__wd_mult__`` attributes of ``sym``."""
    if sym is None:
        return {}, {}
    attrs = sym.attr_dict()
    lr_mult, wd_mult = {}, {}
    for index, pname in idx2name.items():
        node = attrs.get(pname, {})
        for key, out in (('__lr_mult__', lr_mult), ('__wd_mult__', wd_mult)):
            if key in node:
                try:
                    out[index] = float(node[key])
                except ValueError:
                    raise ConfigError(f"parameter {pname!r}: attribute {key}={node[key]!r} is not a "
                                      f"number") from None
    return lr_mult, wd_mult

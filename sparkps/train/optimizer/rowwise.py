"""Per-row (lazy) optimizer updates for sparse tables: only the rows a gradient names change.

A :class:`RowOptimizer` wraps one of the dense optimizers of this package and applies it to a gathered
block of rows ``(n, dim)`` with their gathered state, as TensorFlow's and MXNet's lazy sparse updates do:
rows the gradient does not name keep their value and state (no momentum drift, no decay). The update math
is the dense optimizer's own (``Optimizer.update`` on the gathered rows), so a row updated here changes
exactly as the dense optimizer would change it. Adam is the exception in one respect: its bias correction
uses each row's own step count (how often that row was updated), kept by the table in ``counts``; its
gradient is still formed by the dense ``_prepared_grad`` (rescale, clip, weight decay) and ``clip_weights``
applies as in ``Optimizer.update``.

On a server the optimizer instance belongs to one table (index 0 is "this table" for its update count,
learning-rate multipliers and scheduler), so a table may use a different optimizer from the dense parameters.
The local kvstore shares the job's optimizer between its dense keys and its tables and passes the table's key as
``index``, so ``lr_mult``/``wd_mult`` and the update count of that key apply as they do to a dense key.

>>> ropt = RowOptimizer(create('adagrad', learning_rate=0.1))
>>> w = np.ones((2, 3), np.float32); state = ropt.create_state(2, 3)
>>> ropt.update(w, np.full((2, 3), 0.5, np.float32), state, np.zeros(2, np.int64))
>>> round(float(w[0, 0]), 4)
0.9
"""
import numpy as np

from sparkps.errors import ConfigError
from sparkps.train.optimizer.base import Optimizer, create, from_config

LAZY = frozenset(('sgd', 'nag', 'adagrad', 'adam', 'ftrl', 'rmsprop', 'adadelta'))
_TABLE_INDEX = 0


def _build(optimizer):
    if isinstance(optimizer, Optimizer):
        return optimizer
    if isinstance(optimizer, dict):
        return from_config(optimizer)
    if isinstance(optimizer, str):
        return create(optimizer)
    raise ConfigError(f"a table optimizer is an Optimizer, its config or its name, got {optimizer!r}")


class RowOptimizer:
    """Applies ``optimizer`` to gathered rows as parameter ``index`` (0: a table's own optimizer). Not
    thread-safe (one table, one server thread). ``table`` names the table in the error for an optimizer
    without a per-row form."""

    def __init__(self, optimizer, index=_TABLE_INDEX, table=None):
        self.optimizer = _build(optimizer)
        self.index = index
        if self.optimizer.name not in LAZY:
            where = f"table {table!r}: " if table is not None else ""
            raise ConfigError(f"{where}optimizer {self.optimizer.name!r} has no per-row form; "
                              f"sparse tables take {sorted(LAZY)}")
        probe = self.optimizer.create_state(index, np.zeros((1, 1), np.float32))
        self.num_states = 0 if probe is None else len(probe)
        self.per_row_count = self.optimizer.name == 'adam'

    @property
    def name(self):
        """The wrapped optimizer's name."""
        return self.optimizer.name

    def create_state(self, n, dim, dtype=np.float32):
        """Zero state for ``n`` rows: a list of ``num_states`` arrays (n, dim) of ``dtype``."""
        return [np.zeros((n, dim), dtype) for _ in range(self.num_states)]

    def update(self, weights, grads, states, counts):
        """Update the gathered ``weights`` (n, dim) and ``states`` in place from ``grads`` (n, dim), left as
        they are. ``counts`` (n,) holds each row's update count and is incremented (used by adam)."""
        counts += 1
        opt, index = self.optimizer, self.index
        if not self.per_row_count:
            opt.update(index, weights, grads, tuple(states) if states else None)
            return
        opt._update_count(index)
        lr, wd = opt._get_lr(index), opt._get_wd(index)
        g, tmp = opt._prepared_grad(index, weights, grads, wd)
        _adam_rows(opt, weights, g, tmp, states, lr, counts)
        if opt.clip_weights is not None:
            np.clip(weights, -opt.clip_weights, opt.clip_weights, out=weights)

    def set_learning_rate(self, lr):
        """Set the base learning rate of the wrapped optimizer."""
        self.optimizer.set_learning_rate(lr)

    def config(self):
        """The wrapped optimizer's JSON config."""
        return self.optimizer.to_config()


def _adam_rows(opt, weight, g, tmp, state, lr, counts):
    """Adam's dense step with the bias correction of each row's own count ``t``::

        m = beta1 m + (1-beta1) g;  v = beta2 v + (1-beta2) g^2
        weight -= lr * sqrt(1-beta2^t) / (1-beta1^t) * m / (sqrt(v) + epsilon)
    """
    mean, var = state
    t = counts.astype(np.float64)[:, None]
    lr_t = (lr * np.sqrt(1.0 - opt.beta2 ** t) / (1.0 - opt.beta1 ** t)).astype(weight.dtype)
    mean *= opt.beta1
    np.multiply(g, 1.0 - opt.beta1, out=tmp)
    mean += tmp
    var *= opt.beta2
    np.multiply(g, g, out=tmp)
    tmp *= 1.0 - opt.beta2
    var += tmp
    np.sqrt(var, out=tmp)
    tmp += opt.epsilon
    np.divide(mean, tmp, out=tmp)
    tmp *= lr_t
    weight -= tmp

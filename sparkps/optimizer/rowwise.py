"""Per-row (lazy) optimizer updates for sparse tables: only the rows a gradient names change.

A :class:`RowOptimizer` wraps one of the dense optimizers of this package and applies it to a gathered
block of rows ``(n, dim)`` with their gathered state, as TensorFlow's and MXNet's lazy sparse updates do:
rows the gradient does not name keep their value and state (no momentum drift, no decay). The update math
is the dense optimizer's own: :meth:`Optimizer.update_rows <sparkps.optimizer.base.Optimizer.update_rows>`, which
runs ``Optimizer.update`` on the gathered rows, so a row updated here changes exactly as the dense optimizer would
change it. An optimizer runs here when its class declares ``'row_wise'`` (:mod:`sparkps.optimizer.abilities`). A
class whose per-row step differs from its dense one overrides ``update_rows``: Adam (declaring ``'row_counts'``)
takes each row's own step count (how often that row was updated, kept by the table in ``counts``) for its bias
correction; its gradient is still formed by the dense ``_prepared_grad`` (rescale, clip, weight decay) and
``clip_weights`` applies as in ``Optimizer.update``.

A table is one parameter of the optimizer it runs: its index is the one ``param_idx2name`` gives its name
(FeedForward numbers the tables after the dense parameters), so the table's own ``lr_mult``/``wd_mult`` — given by
name, by its Variable's ``__lr_mult__``/``__wd_mult__``, or MXNet's rule that only ``*_weight``/``*_gamma`` decay —
apply to it, never those of another parameter. A table its optimizer does not name is index -1 (multipliers 1).

A table with its own optimizer (Angel's per-layer ``optimizer``) sees the gradient the job's optimizer sees:
:meth:`RowOptimizer.follow` gives it the job's ``rescale_grad`` (1 / batch size, times 1 / workers under
``dist_sync``), unless it declared its own the job's ``clip_gradient``, and without a schedule of its own the job's
learning-rate schedule (from the table's own rate).

>>> ropt = RowOptimizer(create('adagrad', learning_rate=0.1))
>>> w = np.ones((2, 3), np.float32); state = ropt.create_state(2, 3)
>>> ropt.update(w, np.full((2, 3), 0.5, np.float32), state, np.zeros(2, np.int64))
>>> round(float(w[0, 0]), 4)
0.9
"""
import numpy as np

from sparkps.errors import ConfigError
from sparkps.lr_scheduler import scheduler_from_config
from sparkps.optimizer.abilities import ROW_WISE
from sparkps.optimizer.base import OPTIMIZERS, Optimizer, create, from_config

UNNAMED_TABLE = -1      # the index of a table its optimizer's param_idx2name does not name


def _build(optimizer):
    if isinstance(optimizer, Optimizer):
        return optimizer
    if isinstance(optimizer, dict):
        return from_config(optimizer)
    if isinstance(optimizer, str):
        return create(optimizer)
    raise ConfigError(f"a table optimizer is an Optimizer, its config or its name, got {optimizer!r}")


class RowOptimizer:
    """Applies ``optimizer`` to gathered rows of table ``table`` as its parameter ``index`` (None: the index
    ``param_idx2name`` gives ``table``, else ``UNNAMED_TABLE``). Not thread-safe (one table, one server thread).
    ``table`` also names the table in the error for an optimizer without a per-row form."""

    def __init__(self, optimizer, index=None, table=None):
        self.optimizer = _build(optimizer)
        self.index = table_index(self.optimizer, table) if index is None else index
        self.declared_clip = self.optimizer.clip_gradient
        if not self.optimizer.is_capable(ROW_WISE):
            where = f"table {table!r}: " if table is not None else ""
            raise ConfigError(f"{where}optimizer {self.optimizer.name!r} has no per-row form; "
                              f"sparse tables take {row_wise_names()}")
        self.num_states = self.optimizer.num_states()

    def follow(self, job):
        """Take the gradient scaling of the job's optimizer ``job`` (an Optimizer or its config): see
        :func:`follow_job_scaling`. State and counts are kept."""
        follow_job_scaling(self.optimizer, _build(job), self.declared_clip)

    @property
    def name(self):
        """The wrapped optimizer's name."""
        return self.optimizer.name

    def create_state(self, n, dim, dtype=np.float32):
        """Zero state for ``n`` rows: a list of ``num_states`` arrays (n, dim) of ``dtype``."""
        return [np.zeros((n, dim), dtype) for _ in range(self.num_states)]

    def update(self, weights, grads, states, counts):
        """Update the gathered ``weights`` (n, dim) and ``states`` in place from ``grads`` (n, dim), left as
        they are. ``counts`` (n,) holds each row's update count and is incremented first; the optimizer's own
        :meth:`~sparkps.optimizer.base.Optimizer.update_rows` runs the update."""
        counts += 1
        self.optimizer.update_rows(self.index, weights, grads, tuple(states) if states else None, counts)

    def set_learning_rate(self, lr):
        """Set the base learning rate of the wrapped optimizer."""
        self.optimizer.set_learning_rate(lr)

    def config(self):
        """The wrapped optimizer's JSON config."""
        return self.optimizer.to_config()


def row_wise_names():
    """The registered optimizers whose class declares a per-row form (``'row_wise'``), sorted."""
    return sorted(name for name, cls in OPTIMIZERS.items() if cls.declares(ROW_WISE))


def table_index(optimizer, table):
    """The parameter index of table ``table`` in ``optimizer``: the one its ``param_idx2name`` names it by, else
    ``UNNAMED_TABLE``."""
    for index, name in optimizer.param_idx2name.items():
        if name == table:
            return index
    return UNNAMED_TABLE


def follow_job_scaling(own, job, declared_clip=None):
    """Give a table's own optimizer ``own`` the job optimizer's gradient scaling, in place: ``job.rescale_grad``
    (FeedForward's 1 / (batch size x workers)) and ``job.clip_gradient`` unless the table declared its own
    ``declared_clip``; and, when ``own`` has no learning-rate schedule, the job's schedule from its own rate (Angel's
    decay applies to every layer). So a table with plain sgd of its own takes the steps the job's sgd would."""
    own.rescale_grad = job.rescale_grad
    own.clip_gradient = declared_clip if declared_clip is not None else job.clip_gradient
    if own.lr_scheduler is None and job.lr_scheduler is not None:
        schedule = scheduler_from_config(job.lr_scheduler.to_config())
        schedule.base_lr = own.lr
        own.lr_scheduler = schedule


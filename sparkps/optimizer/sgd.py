"""Gradient-descent optimizers: SGD with momentum, Nesterov's NAG, Signum (signSGD) and SGLD.

Each ``_step`` is MXNet 1.x's kernel (``sgd_mom_update``, ``nag_mom_update``, ``signum_update``,
``signsgd_update``) or Python update (SGLD) written with in-place numpy ufuncs.
"""
import math

import numpy as np

from sparkps.optimizer.abilities import FUSED, LAZY_ROWS, ROW_WISE
from sparkps.optimizer.base import Optimizer, _check_number, register


@register
class SGD(Optimizer):
    """SGD with optional momentum (``g = clip(rescale_grad * grad) + wd * weight``)::

        mom = momentum * mom - lr * g;  weight += mom        (momentum > 0)
        weight -= lr * g                                     (momentum == 0, no state)
    """
    ABILITIES = frozenset((FUSED, ROW_WISE, LAZY_ROWS))
    name = 'sgd'
    hyper_params = ('momentum', 'lazy_update')

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = _check_number('momentum', momentum, 0.0)
        self.lazy_update = bool(lazy_update)   # row-sparse gradients: update their rows only (optimizer/sparse.py)

    def num_states(self):
        return 1 if self.momentum else 0

    def create_state(self, index, weight):
        return self._zeros_state(weight, 1) if self.momentum else None

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        g *= lr
        if state is None:
            weight -= g
            return
        mom, = state
        mom *= self.momentum
        mom -= g
        weight += mom


@register
class NAG(SGD):
    """Nesterov accelerated gradient, MXNet 1.x's ``nag_mom_update`` (momentum kept scaled by -lr, so a
    changed learning rate applies to new gradients only)::

        mom = momentum * mom;  weight += momentum * mom - (1 + momentum) * lr * g;  mom -= lr * g
    """
    ABILITIES = frozenset((FUSED, ROW_WISE))
    name = 'nag'
    hyper_params = ('momentum',)       # no row-sparse kernel in MXNet: a row-sparse gradient is densified

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        g *= lr
        if state is None:
            weight -= g
            return
        mom, = state
        mom *= self.momentum
        np.multiply(mom, self.momentum, out=tmp)
        weight += tmp
        np.multiply(g, 1.0 + self.momentum, out=tmp)
        weight -= tmp
        mom -= g


@register
class Signum(Optimizer):
    """Signum (Bernstein et al. 2018) and, with ``momentum=0``, signSGD; MXNet 1.x's kernels::

        mom = momentum * mom - (1 - momentum) * (clip(rescale_grad * grad) + wd * weight)
        weight = (1 - lr * wd_lh) * weight + lr * sign(mom)
        momentum == 0:  weight = (1 - lr * (wd + wd_lh)) * weight - lr * sign(grad)
    """
    STATES = 1
    name = 'signum'
    hyper_params = ('momentum', 'wd_lh')
    grad_decay = 'none'

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = _check_number('momentum', momentum, 0.0)
        self.wd_lh = _check_number('wd_lh', wd_lh, 0.0)

    def num_states(self):
        return 1 if self.momentum else 0

    def create_state(self, index, weight):
        return self._zeros_state(weight, 1) if self.momentum else None

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        if state is None:
            np.sign(g, out=g)
            g *= lr
            weight *= 1.0 - lr * (wd + self.wd_lh)
            weight -= g
            return
        mom, = state
        if wd:
            np.multiply(weight, wd, out=tmp)
            g += tmp
        mom *= self.momentum
        g *= 1.0 - self.momentum
        mom -= g
        np.sign(mom, out=tmp)
        tmp *= lr
        if self.wd_lh:
            weight *= 1.0 - lr * self.wd_lh
        weight += tmp


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics, MXNet 1.x's update::

        weight += -lr / 2 * (clip(rescale_grad * grad) + wd * weight) + normal(0, sqrt(lr))

    ``seed`` seeds this optimizer's own noise generator (None: fresh entropy).
    """
    name = 'sgld'
    hyper_params = ('seed',)
    grad_decay = 'none'

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = None if seed is None else int(seed)
        self._rng = np.random.default_rng(self.seed)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        if wd:
            np.multiply(weight, wd, out=tmp)
            g += tmp
        g *= -lr / 2.0
        weight += g
        noise = self._rng.normal(0.0, math.sqrt(lr), size=weight.shape)
        if isinstance(tmp, np.ndarray):
            tmp[...] = noise
        else:
            tmp.set(noise.astype(tmp.dtype))
        weight += tmp

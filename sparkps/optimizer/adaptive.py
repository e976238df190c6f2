"""Optimizers with per-element adaptive steps: Adam, AdaGrad, RMSProp, AdaDelta, FTRL (MXNet 1.x numerics)."""
import math

import numpy as np

from sparkps.optimizer.abilities import FUSED, LAZY_ROWS, ROW_COUNTS, ROW_WISE
from sparkps.optimizer.base import Optimizer, _check_number, register


@register
class Adam(Optimizer):
    """Adam with bias correction folded into the step size, MXNet 1.x's ``adam_update``
    (``g = clip(rescale_grad * grad + wd * weight)``: clipped after adding weight decay)::

        m = beta1 m + (1-beta1) g;  v = beta2 v + (1-beta2) g^2
        weight -= lr * sqrt(1-beta2^t) / (1-beta1^t) * m / (sqrt(v) + epsilon)
    """
    ABILITIES = frozenset((FUSED, ROW_WISE, LAZY_ROWS, ROW_COUNTS))
    STATES = 2
    name = 'adam'
    hyper_params = ('beta1', 'beta2', 'epsilon', 'lazy_update')
    grad_decay = 'before_clip'

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lazy_update = bool(lazy_update)   # row-sparse gradients: update their rows only (optimizer/sparse.py)
        self.beta1 = _check_number('beta1', beta1, 0.0)
        self.beta2 = _check_number('beta2', beta2, 0.0)
        self.epsilon = _check_number('epsilon', epsilon, 0.0)

    def create_state(self, index, weight):
        return self._zeros_state(weight, 2)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        lr_t = lr * math.sqrt(1.0 - self.beta2 ** count) / (1.0 - self.beta1 ** count)
        adam_step(self, weight, g, tmp, state, lr_t)

    def update_rows(self, index, weights, grads, states, counts):
        """The per-row update with the bias correction of each row's own count ``t`` (``counts``, this update
        included): ``lr_t = lr * sqrt(1-beta2^t) / (1-beta1^t)``, one per row, so a row first updated at the
        table's 100th step starts as a fresh Adam would. The gradient is formed as ``update`` forms it (rescale,
        weight decay, clip) and ``clip_weights`` applies after the step; the parameter's update count still
        drives the learning-rate schedule."""
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g, tmp = self._prepared_grad(index, weights, grads, wd)
        t = counts.astype(np.float64)[:, None]
        lr_t = (lr * np.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)).astype(weights.dtype)
        adam_step(self, weights, g, tmp, states, lr_t)
        if self.clip_weights is not None:
            np.clip(weights, -self.clip_weights, self.clip_weights, out=weights)


def adam_step(opt, weight, g, tmp, state, lr_t):
    """Adam's update, in place, with the bias-corrected rate ``lr_t`` (a number; or one per row, shaped (n, 1), for
    the per-row counts of a sparse table, :meth:`Adam.update_rows`); ``opt`` gives beta1, beta2, epsilon::

        m = beta1 m + (1-beta1) g;  v = beta2 v + (1-beta2) g^2;  weight -= lr_t * m / (sqrt(v) + epsilon)
    """
    mean, var = state
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


@register
class AdaGrad(Optimizer):
    """AdaGrad, MXNet 1.x's update (``g = clip(rescale_grad * grad)``, the constant inside the root)::

        h += g^2;  weight -= lr * (g / sqrt(h + eps) + wd * weight)

    ``epsilon`` is accepted as the older name of ``eps``.
    """
    ABILITIES = frozenset((FUSED, ROW_WISE, LAZY_ROWS))
    STATES = 1
    name = 'adagrad'
    hyper_params = ('eps',)
    aliases = ('epsilon',)
    grad_decay = 'none'

    def __init__(self, eps=1e-7, epsilon=None, **kwargs):
        super().__init__(**kwargs)
        self.eps = _check_number('eps', eps if epsilon is None else epsilon, 0.0)

    @property
    def float_stable_eps(self):
        """MXNet's attribute name for ``eps``."""
        return self.eps

    def create_state(self, index, weight):
        return self._zeros_state(weight, 1)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        history, = state
        np.multiply(g, g, out=tmp)
        history += tmp
        np.add(history, self.eps, out=tmp)
        np.sqrt(tmp, out=tmp)
        g /= tmp
        if wd:
            np.multiply(weight, wd, out=tmp)
            g += tmp
        g *= lr
        weight -= g


@register
class RMSProp(Optimizer):
    """RMSProp (Tieleman & Hinton), or Graves' centered form with ``centered=True``; MXNet 1.x's
    ``rmsprop_update``/``rmspropalex_update`` (``g = clip(rescale_grad * grad + wd * weight)``, weights
    clipped to ``clip_weights`` after the step)::

        n = gamma1 n + (1-gamma1) g^2;  weight -= lr * g / sqrt(n + epsilon)
        centered: a = gamma1 a + (1-gamma1) g;
                  delta = gamma2 delta - lr * g / sqrt(n - a^2 + epsilon);  weight += delta
    """
    ABILITIES = frozenset((FUSED, ROW_WISE))
    STATES = 1
    name = 'rmsprop'
    hyper_params = ('gamma1', 'gamma2', 'epsilon', 'centered')
    grad_decay = 'before_clip'

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = _check_number('gamma1', gamma1, 0.0)
        self.gamma2 = _check_number('gamma2', gamma2, 0.0)
        self.epsilon = _check_number('epsilon', epsilon, 0.0)
        self.centered = bool(centered)

    def num_states(self):
        return 3 if self.centered else 1

    def create_state(self, index, weight):
        return self._zeros_state(weight, 3 if self.centered else 1)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        n = state[0]
        n *= self.gamma1
        np.multiply(g, g, out=tmp)
        tmp *= 1.0 - self.gamma1
        n += tmp
        if not self.centered:
            np.add(n, self.epsilon, out=tmp)
            np.sqrt(tmp, out=tmp)
            np.divide(g, tmp, out=tmp)
            tmp *= lr
            weight -= tmp
            return
        _, avg, delta = state
        avg *= self.gamma1
        np.multiply(g, 1.0 - self.gamma1, out=tmp)
        avg += tmp
        np.multiply(avg, avg, out=tmp)
        np.subtract(n, tmp, out=tmp)
        tmp += self.epsilon
        np.sqrt(tmp, out=tmp)
        np.divide(g, tmp, out=tmp)
        tmp *= lr
        delta *= self.gamma2
        delta -= tmp
        weight += delta


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler), MXNet 1.x's update: no learning rate (as MXNet, ``learning_rate`` is ignored)::

        acc_g = rho acc_g + (1-rho) g^2;  d = sqrt(acc_d + eps) / sqrt(acc_g + eps) * g
        acc_d = rho acc_d + (1-rho) d^2;  weight -= d + wd * weight
    """
    ABILITIES = frozenset((FUSED, ROW_WISE))
    STATES = 2
    name = 'adadelta'
    hyper_params = ('rho', 'epsilon')
    grad_decay = 'none'

    def __init__(self, rho=0.9, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = _check_number('rho', rho, 0.0)
        self.epsilon = _check_number('epsilon', epsilon, 0.0)

    def create_state(self, index, weight):
        return self._zeros_state(weight, 2)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        acc_g, acc_delta = state
        acc_g *= self.rho
        np.multiply(g, g, out=tmp)
        tmp *= 1.0 - self.rho
        acc_g += tmp
        np.add(acc_delta, self.epsilon, out=tmp)
        np.sqrt(tmp, out=tmp)
        g *= tmp                                  # g now holds sqrt(acc_d + eps) * g
        np.add(acc_g, self.epsilon, out=tmp)
        np.sqrt(tmp, out=tmp)
        g /= tmp                                  # g now holds the step d
        acc_delta *= self.rho
        np.multiply(g, g, out=tmp)
        tmp *= 1.0 - self.rho
        acc_delta += tmp
        if wd:
            np.multiply(weight, wd, out=tmp)
            g += tmp
        weight -= g


@register
class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al.); ``wd`` is the L2 term of the closed form, not added to g::

        z += g - (sqrt(n + g^2) - sqrt(n)) * weight / lr;  n += g^2
        weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd)   where |z| > lamda1, else 0
    """
    ABILITIES = frozenset((FUSED, ROW_WISE, LAZY_ROWS))
    STATES = 2
    name = 'ftrl'
    hyper_params = ('lamda1', 'beta')
    grad_decay = 'none'

    def __init__(self, learning_rate=0.1, lamda1=0.01, beta=1.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1 = _check_number('lamda1', lamda1, 0.0)
        self.beta = _check_number('beta', beta, 0.0)

    def create_state(self, index, weight):
        return self._zeros_state(weight, 2)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        z, n = state
        z += g
        np.sqrt(n, out=tmp)
        tmp *= weight
        tmp /= lr
        z += tmp                                 # + sqrt(n) * w / lr
        g *= g
        n += g                                   # n = n + g^2
        np.sqrt(n, out=tmp)
        tmp *= weight
        tmp /= lr
        z -= tmp                                 # - sqrt(n + g^2) * w / lr
        np.sqrt(n, out=tmp)
        tmp += self.beta
        tmp /= lr
        tmp += wd
        np.sign(z, out=g)
        g *= self.lamda1
        g -= z
        np.divide(g, tmp, out=weight)
        np.abs(z, out=tmp)
        weight *= tmp > self.lamda1

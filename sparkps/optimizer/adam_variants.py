"""Adam's relatives in MXNet 1.x: Adamax, Nadam, FTML and LAMB, with MXNet's numerics.

Adamax, Nadam and FTML form ``g = clip(rescale_grad * grad + wd * weight)``; LAMB clips the rescaled
gradient and adds ``wd * weight`` to its Adam direction. LAMB scales each step by the norms of the whole
weight and direction, so it is not elementwise: apply it to whole parameters, never to pieces of one.
"""
import math

import numpy as np

from sparkps.errors import ConfigError
from sparkps.optimizer.base import Optimizer, _check_number, register


@register
class Adamax(Optimizer):
    """Adamax (Kingma & Ba, section 7.1), MXNet 1.x's update::

        m = beta1 m + (1-beta1) g;  u = max(beta2 u, |g|);  weight -= lr / (1 - beta1^t) * m / u
    """
    STATES = 2
    name = 'adamax'
    hyper_params = ('beta1', 'beta2')
    grad_decay = 'before_clip'

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = _check_number('beta1', beta1, 0.0)
        self.beta2 = _check_number('beta2', beta2, 0.0)

    def create_state(self, index, weight):
        return self._zeros_state(weight, 2)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        mean, u = state
        mean *= self.beta1
        np.multiply(g, 1.0 - self.beta1, out=tmp)
        mean += tmp
        u *= self.beta2
        np.abs(g, out=tmp)
        np.maximum(u, tmp, out=u)
        np.divide(mean, u, out=tmp)
        tmp *= lr / (1.0 - self.beta1 ** count)
        weight -= tmp


@register
class Nadam(Optimizer):
    """Nesterov Adam (Dozat 2016), MXNet 1.x's update with its momentum schedule::

        mu_t = beta1 (1 - 0.5 * 0.96^(t * schedule_decay));  S_t = mu_1 * ... * mu_t
        m = beta1 m + (1-beta1) g;  v = beta2 v + (1-beta2) g^2
        m_bar = (1 - mu_t) g / (1 - S_t) + mu_{t+1} m / (1 - S_t mu_{t+1})
        weight -= lr * m_bar / (sqrt(v / (1 - beta2^t)) + epsilon)

    ``schedule`` says whose update count ``t`` and product ``S`` are: ``'per_parameter'`` (the default) gives
    each parameter its own (a function of its update count), so a parameter's steps do not depend on how many
    other parameters the optimizer updates, nor on their order, nor on how parameters are spread over servers.
    ``'shared'`` is MXNet 1.x's Python update bit for bit: one product ``S`` for the whole optimizer, multiplied
    by ``mu_t`` (``t`` the updated parameter's own count) at every update of any parameter; use it to replay
    an MXNet run exactly on one machine. With one parameter both agree.
    """
    STATES = 2
    name = 'nadam'
    hyper_params = ('beta1', 'beta2', 'epsilon', 'schedule_decay', 'schedule')
    grad_decay = 'before_clip'
    SCHEDULES = ('per_parameter', 'shared')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004,
                 schedule='per_parameter', **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = _check_number('beta1', beta1, 0.0)
        self.beta2 = _check_number('beta2', beta2, 0.0)
        self.epsilon = _check_number('epsilon', epsilon, 0.0)
        self.schedule_decay = _check_number('schedule_decay', schedule_decay, 0.0)
        if schedule not in self.SCHEDULES:
            raise ConfigError(f"nadam schedule must be one of {list(self.SCHEDULES)}, got {schedule!r}")
        self.schedule = schedule
        self._schedule = {}          # index -> (t, S_t)
        self.m_schedule = 1.0        # the shared product (schedule='shared'), MXNet's attribute name

    def create_state(self, index, weight):
        return self._zeros_state(weight, 2)

    def _momentum(self, t):
        return self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))

    def update_counts(self):
        """The update counters and, with the shared schedule, its product (restored by ``set_update_counts``)."""
        counts = super().update_counts()
        if self.schedule == 'shared':
            counts['m_schedule'] = self.m_schedule
        return counts

    def set_update_counts(self, counts):
        """Restore ``update_counts()`` output; the per-parameter products follow from the counts."""
        super().set_update_counts(counts)
        self.m_schedule = float(counts.get('m_schedule', 1.0))

    def _m_schedule(self, index, t):
        """S_t = mu_1 * ... * mu_t, carried from the previous step when it was ``t - 1``; with the shared
        schedule, the optimizer's one product times ``mu_t``."""
        if self.schedule == 'shared':
            self.m_schedule *= self._momentum(t)
            return self.m_schedule
        last_t, value = self._schedule.get(index, (0, 1.0))
        if last_t != t - 1:
            last_t, value = 0, 1.0
        for step in range(last_t + 1, t + 1):
            value *= self._momentum(step)
        self._schedule[index] = (t, value)
        return value

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        mean, var = state
        mu_t, mu_next = self._momentum(count), self._momentum(count + 1)
        sched = self._m_schedule(index, count)
        mean *= self.beta1
        np.multiply(g, 1.0 - self.beta1, out=tmp)
        mean += tmp
        var *= self.beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1.0 - self.beta2
        var += tmp
        g *= (1.0 - mu_t) / (1.0 - sched)                      # g now holds (1 - mu_t) g'
        np.multiply(mean, mu_next / (1.0 - sched * mu_next), out=tmp)
        g += tmp                                               # g now holds m_bar
        np.divide(var, 1.0 - self.beta2 ** count, out=tmp)
        np.sqrt(tmp, out=tmp)
        tmp += self.epsilon
        g /= tmp
        g *= lr
        weight -= g


@register
class FTML(Optimizer):
    """Follow the Moving Leader (Zheng & Kwok 2017), MXNet 1.x's ``ftml_update``::

        v = beta2 v + (1-beta2) g^2;  d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
        z = beta1 z + (1-beta1) g - (d_t - beta1 d_{t-1}) weight;  weight = -z / d_t
    """
    STATES = 3
    name = 'ftml'
    hyper_params = ('beta1', 'beta2', 'epsilon')
    grad_decay = 'before_clip'

    def __init__(self, learning_rate=0.0025, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = _check_number('beta1', beta1, 0.0)
        self.beta2 = _check_number('beta2', beta2, 0.0)
        self.epsilon = _check_number('epsilon', epsilon, 0.0)

    def create_state(self, index, weight):
        return self._zeros_state(weight, 3)                     # d, v, z

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        d, v, z = state
        v *= self.beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1.0 - self.beta2
        v += tmp
        np.divide(v, 1.0 - self.beta2 ** count, out=tmp)
        np.sqrt(tmp, out=tmp)
        tmp += self.epsilon
        tmp *= (1.0 - self.beta1 ** count) / lr                 # tmp now holds d_t
        z *= self.beta1
        g *= 1.0 - self.beta1
        z += g
        d *= -self.beta1
        d += tmp                                                # d now holds d_t - beta1 d_{t-1}
        d *= weight
        z -= d
        d[...] = tmp
        np.divide(z, tmp, out=weight)
        np.negative(weight, out=weight)


@register
class LAMB(Optimizer):
    """LAMB (You et al. 2019), MXNet 1.x's ``lamb_update_phase1``/``phase2``::

        m = beta1 m + (1-beta1) g;  v = beta2 v + (1-beta2) g^2
        r = m_hat / (sqrt(v_hat) + epsilon) + wd * weight      (hats: bias-corrected if bias_correction)
        r1 = clip(||weight||, lower_bound, upper_bound);  r2 = ||r||
        weight -= lr * (r1 / r2 if r1 and r2 else 1) * r
    """
    STATES = 2
    name = 'lamb'
    hyper_params = ('beta1', 'beta2', 'epsilon', 'lower_bound', 'upper_bound', 'bias_correction')
    grad_decay = 'none'
    elementwise = False     # whole-tensor norms: never apply it to pieces of a parameter

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, lower_bound=None,
                 upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = _check_number('beta1', beta1, 0.0)
        self.beta2 = _check_number('beta2', beta2, 0.0)
        self.epsilon = _check_number('epsilon', epsilon, 0.0)
        self.lower_bound = _check_number('lower_bound', lower_bound, 0.0, allow_none=True)
        self.upper_bound = _check_number('upper_bound', upper_bound, 0.0, allow_none=True)
        self.bias_correction = bool(bias_correction)

    def create_state(self, index, weight):
        return self._zeros_state(weight, 2)

    def _step(self, weight, g, tmp, state, lr, wd, count, index=0):
        mean, var = state
        mean *= self.beta1
        np.multiply(g, 1.0 - self.beta1, out=tmp)
        mean += tmp
        var *= self.beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1.0 - self.beta2
        var += tmp
        mean_scale, var_scale = 1.0, 1.0
        if self.bias_correction:
            mean_scale, var_scale = 1.0 / (1.0 - self.beta1 ** count), 1.0 / (1.0 - self.beta2 ** count)
        np.multiply(var, var_scale, out=tmp)
        np.sqrt(tmp, out=tmp)
        tmp += self.epsilon
        np.multiply(mean, mean_scale, out=g)
        g /= tmp
        if wd:
            np.multiply(weight, wd, out=tmp)
            g += tmp
        r1, r2 = _norm(weight), _norm(g)
        if self.lower_bound:
            r1 = max(r1, self.lower_bound)
        if self.upper_bound:
            r1 = min(r1, self.upper_bound)
        g *= lr * (r1 / r2) if r1 != 0.0 and r2 != 0.0 else lr
        weight -= g


def _norm(array):
    return math.sqrt(float(np.sum(np.square(array, dtype=np.float64))))

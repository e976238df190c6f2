"""numpy re-implementations of Apache MXNet 1.9.1's optimizer kernels, written from
src/operator/optimizer_op-inl.h (sgd_update, sgd_mom_update, nag_mom_update, signsgd_update, signum_update,
adam_update, rmsprop_update, rmspropalex_update, ftrl_update, ftml_update, lamb_update_phase1/2) and from the
Python updates of python/mxnet/optimizer/optimizer.py (AdaGrad, AdaDelta, Adamax, Nadam, SGLD).

Each reference is ``Reference(**mxnet_kwargs)`` with ``state(weight) -> list`` and ``step(t, w, g, state) -> w``
(``t`` counts updates from 1), computed in float64 so the optimizer under test is compared with the exact math.
"""
import math

import numpy as np

DEFAULT_LR = {'sgd': 0.01, 'nag': 0.01, 'signum': 0.01, 'adam': 0.001, 'adagrad': 0.01, 'adadelta': 0.01,
              'rmsprop': 0.001, 'ftrl': 0.1, 'ftml': 0.0025, 'adamax': 0.002, 'nadam': 0.001, 'lamb': 0.001,
              'sgld': 0.01}


def clip(x, c):
    return x if c is None else np.clip(x, -c, c)


class Reference:
    name = None
    state_count = 0

    def __init__(self, learning_rate=None, wd=0.0, rescale_grad=1.0, clip_gradient=None, clip_weights=None,
                 multi_precision=False, **hyper):
        self.lr = DEFAULT_LR[self.name] if learning_rate is None else learning_rate
        self.wd, self.rescale, self.clip, self.clip_weights = wd, rescale_grad, clip_gradient, clip_weights
        self.hyper = hyper

    def __getattr__(self, key):
        try:
            return self.__dict__['hyper'][key]
        except KeyError:
            raise AttributeError(key) from None

    def state(self, weight):
        return [np.zeros_like(weight, dtype=np.float64) for _ in range(self.state_count)]


class SGD(Reference):
    name = 'sgd'

    def __init__(self, momentum=0.0, **kw):
        super().__init__(momentum=momentum, **kw)
        self.state_count = 1 if momentum else 0

    def step(self, t, w, g, state):
        lr, wd = self.lr, self.wd
        if not state:                                           # SGDKernel
            return (1 - lr * wd) * w - lr * clip(self.rescale * g, self.clip)
        mom = state[0]                                          # SGDMomKernel
        mom[:] = self.momentum * mom - lr * wd * w - lr * clip(self.rescale * g, self.clip)
        return w + mom


class NAG(SGD):
    name = 'nag'

    def step(self, t, w, g, state):
        lr, wd, mu = self.lr, self.wd, self.momentum
        gr = clip(self.rescale * g, self.clip)
        if not state:
            return (1 - lr * wd) * w - lr * gr
        mom = state[0]                                          # NAGMomKernel
        mom[:] = mu * mom
        out = w - mom + (mu + 1) * (mom - lr * (gr + wd * w))
        mom[:] = mom - lr * (gr + wd * w)
        return out


class Signum(Reference):
    name = 'signum'

    def __init__(self, momentum=0.9, wd_lh=0.0, **kw):
        super().__init__(momentum=momentum, wd_lh=wd_lh, **kw)
        self.state_count = 1 if momentum else 0

    def step(self, t, w, g, state):
        lr, wd, mu = self.lr, self.wd, self.momentum
        if not state:                                           # SignSGDKernel, with wd_lh as PySignum
            return (1 - lr * (wd + self.wd_lh)) * w - lr * np.sign(g)
        mom = state[0]                                          # SignumKernel
        mom[:] = mu * mom - (1 - mu) * wd * w - (1 - mu) * clip(self.rescale * g, self.clip)
        return (1 - lr * self.wd_lh) * w + lr * np.sign(mom)


class Adam(Reference):
    name, state_count = 'adam', 2

    def __init__(self, beta1=0.9, beta2=0.999, epsilon=1e-8, **kw):
        super().__init__(beta1=beta1, beta2=beta2, epsilon=epsilon, **kw)

    def step(self, t, w, g, state):
        lr = self.lr * math.sqrt(1 - self.beta2 ** t) / (1 - self.beta1 ** t)
        gr = clip(self.rescale * g + self.wd * w, self.clip)    # AdamUpdateKernel: clip after weight decay
        mean, var = state
        mean[:] = self.beta1 * mean + (1 - self.beta1) * gr
        var[:] = self.beta2 * var + (1 - self.beta2) * gr * gr
        return w - lr * mean / (np.sqrt(var) + self.epsilon)


class AdaGrad(Reference):
    name, state_count = 'adagrad', 1

    def __init__(self, eps=1e-7, **kw):
        super().__init__(eps=eps, **kw)

    def step(self, t, w, g, state):
        gr = clip(self.rescale * g, self.clip)
        history = state[0]
        history += gr * gr
        return w - self.lr * (gr / np.sqrt(history + self.eps) + self.wd * w)


class AdaDelta(Reference):
    name, state_count = 'adadelta', 2

    def __init__(self, rho=0.9, epsilon=1e-5, **kw):
        super().__init__(rho=rho, epsilon=epsilon, **kw)

    def step(self, t, w, g, state):
        gr = clip(self.rescale * g, self.clip)
        acc_g, acc_delta = state
        acc_g[:] = self.rho * acc_g + (1 - self.rho) * gr * gr
        delta = np.sqrt(acc_delta + self.epsilon) / np.sqrt(acc_g + self.epsilon) * gr
        acc_delta[:] = self.rho * acc_delta + (1 - self.rho) * delta * delta
        return w - delta - self.wd * w


class RMSProp(Reference):
    name = 'rmsprop'

    def __init__(self, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False, **kw):
        super().__init__(gamma1=gamma1, gamma2=gamma2, epsilon=epsilon, centered=centered, **kw)
        self.state_count = 3 if centered else 1

    def step(self, t, w, g, state):
        gr = clip(self.rescale * g + self.wd * w, self.clip)
        n = state[0]
        n[:] = (1 - self.gamma1) * gr * gr + self.gamma1 * n
        if not self.centered:                                   # RMSPropUpdateKernel
            out = w - self.lr * gr / np.sqrt(n + self.epsilon)
        else:                                                   # RMSPropAlexUpdateKernel
            _, avg, delta = state
            avg[:] = (1 - self.gamma1) * gr + self.gamma1 * avg
            delta[:] = self.gamma2 * delta - self.lr * gr / np.sqrt(n - avg * avg + self.epsilon)
            out = w + delta
        return out if self.clip_weights is None else np.clip(out, -self.clip_weights, self.clip_weights)


class Ftrl(Reference):
    name, state_count = 'ftrl', 2

    def __init__(self, lamda1=0.01, beta=1.0, **kw):
        super().__init__(lamda1=lamda1, beta=beta, **kw)

    def step(self, t, w, g, state):
        gr = clip(self.rescale * g, self.clip)
        z, n = state
        z += gr - (np.sqrt(n + gr * gr) - np.sqrt(n)) * w / self.lr
        n += gr * gr
        return ((np.sign(z) * self.lamda1 - z) / ((self.beta + np.sqrt(n)) / self.lr + self.wd)
                * (np.abs(z) > self.lamda1))


class FTML(Reference):
    name, state_count = 'ftml', 3

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kw):
        super().__init__(beta1=beta1, beta2=beta2, epsilon=epsilon, **kw)

    def step(self, t, w, g, state):
        gr = clip(self.rescale * g + self.wd * w, self.clip)
        d, v, z = state
        v[:] = self.beta2 * v + (1 - self.beta2) * gr * gr
        d_t = (1 - self.beta1 ** t) / self.lr * (np.sqrt(v / (1 - self.beta2 ** t)) + self.epsilon)
        z[:] = self.beta1 * z + (1 - self.beta1) * gr - (d_t - self.beta1 * d) * w
        d[:] = d_t
        return -z / d_t


class Adamax(Reference):
    name, state_count = 'adamax', 2

    def __init__(self, beta1=0.9, beta2=0.999, **kw):
        super().__init__(beta1=beta1, beta2=beta2, **kw)

    def step(self, t, w, g, state):
        lr = self.lr / (1 - self.beta1 ** t)
        gr = clip(self.rescale * g + self.wd * w, self.clip)
        m, u = state
        m[:] = self.beta1 * m + (1 - self.beta1) * gr
        u[:] = np.maximum(self.beta2 * u, np.abs(gr))
        return w - lr * m / u


class Nadam(Reference):
    name, state_count = 'nadam', 2

    def __init__(self, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004, **kw):
        super().__init__(beta1=beta1, beta2=beta2, epsilon=epsilon, schedule_decay=schedule_decay, **kw)
        self.m_schedule = 1.0

    def step(self, t, w, g, state):
        gr = clip(self.rescale * g + self.wd * w, self.clip)
        mu_t = self.beta1 * (1 - 0.5 * 0.96 ** (t * self.schedule_decay))
        mu_next = self.beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule *= mu_t
        m_schedule_next = self.m_schedule * mu_next
        m, v = state
        m[:] = self.beta1 * m + (1 - self.beta1) * gr
        v[:] = self.beta2 * v + (1 - self.beta2) * gr * gr
        m_bar = (1 - mu_t) * gr / (1 - self.m_schedule) + mu_next * m / (1 - m_schedule_next)
        return w - self.lr * m_bar / (np.sqrt(v / (1 - self.beta2 ** t)) + self.epsilon)


class LAMB(Reference):
    name, state_count = 'lamb', 2

    def __init__(self, beta1=0.9, beta2=0.999, epsilon=1e-6, lower_bound=None, upper_bound=None,
                 bias_correction=True, **kw):
        super().__init__(beta1=beta1, beta2=beta2, epsilon=epsilon, lower_bound=lower_bound,
                         upper_bound=upper_bound, bias_correction=bias_correction, **kw)

    def step(self, t, w, g, state):
        gr = clip(self.rescale * g, self.clip)                  # phase 1
        mean, var = state
        mean[:] = self.beta1 * mean + (1 - self.beta1) * gr
        var[:] = self.beta2 * var + (1 - self.beta2) * gr * gr
        if self.bias_correction:
            r = (mean / (1 - self.beta1 ** t)) / (np.sqrt(var / (1 - self.beta2 ** t)) + self.epsilon)
        else:
            r = mean / (np.sqrt(var) + self.epsilon)
        r = r + self.wd * w
        r1, r2 = np.linalg.norm(w), np.linalg.norm(r)           # phase 2
        if self.lower_bound:
            r1 = max(r1, self.lower_bound)
        if self.upper_bound:
            r1 = min(r1, self.upper_bound)
        lr = self.lr * r1 / r2 if r1 != 0 and r2 != 0 else self.lr
        return w - lr * r


class SGLD(Reference):
    """SGLD with its Gaussian noise drawn from ``np.random.default_rng(seed)``, in the optimizer's order."""
    name = 'sgld'

    def __init__(self, seed=None, **kw):
        super().__init__(**kw)
        self.rng = np.random.default_rng(seed)

    def step(self, t, w, g, state):
        gr = clip(self.rescale * g, self.clip)
        w = w - self.lr / 2 * (gr + self.wd * w)
        return w + self.rng.normal(0, math.sqrt(self.lr), size=w.shape)


REFERENCES = {cls.name: cls for cls in (SGD, NAG, Signum, Adam, AdaGrad, AdaDelta, RMSProp, Ftrl, FTML, Adamax,
                                        Nadam, LAMB, SGLD)}

"""Stochastic gradient descent with momentum, and Nesterov accelerated gradient."""
from sparkps.train.optimizer.base import Optimizer, _check_number, register


@register
class SGD(Optimizer):
    """SGD with optional momentum::

        mom = momentum * mom - lr * g;  weight += mom        (momentum > 0)
        weight -= lr * g                                     (momentum == 0, no state)
    """
    name = 'sgd'
    hyper_params = ('momentum',)

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = _check_number('momentum', momentum, 0.0)

    def create_state(self, index, weight):
        return self._zeros_state(weight, 1) if self.momentum else None

    def _step(self, weight, g, tmp, state, lr, wd, count):
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
    """Nesterov accelerated gradient (MXNet's form)::

        mom = momentum * mom + g;  weight -= lr * (g + momentum * mom)
    """
    name = 'nag'

    def _step(self, weight, g, tmp, state, lr, wd, count):
        if state is None:
            g *= lr
            weight -= g
            return
        mom, = state
        mom *= self.momentum
        mom += g
        tmp[...] = mom
        tmp *= self.momentum
        g += tmp
        g *= lr
        weight -= g

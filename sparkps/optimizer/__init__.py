"""Optimizers with MXNet's interface, configurable as plain JSON for the parameter servers.

    opt = sparkps.optimizer.create('adam', learning_rate=1e-3, wd=1e-4)
    opt2 = sparkps.optimizer.from_config(opt.to_config())      # same updates
"""
from sparkps.optimizer.adam_variants import FTML, LAMB, Adamax, Nadam
from sparkps.optimizer.adaptive import AdaDelta, AdaGrad, Adam, Ftrl, RMSProp
from sparkps.optimizer.base import (
    OPTIMIZERS,
    Optimizer,
    create,
    from_config,
    register,
)
from sparkps.optimizer.sgd import NAG, SGD, SGLD, Signum
from sparkps.optimizer.updater import Updater, get_updater

__all__ = [
    'FTML',
    'LAMB',
    'NAG',
    'OPTIMIZERS',
    'SGD',
    'SGLD',
    'AdaDelta',
    'AdaGrad',
    'Adam',
    'Adamax',
    'Ftrl',
    'Nadam',
    'Optimizer',
    'RMSProp',
    'Signum',
    'Updater',
    'create',
    'from_config',
    'get_updater',
    'register',
]

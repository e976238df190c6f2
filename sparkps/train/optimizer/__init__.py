"""Optimizers with MXNet's interface, configurable as plain JSON for the parameter servers.

    opt = sparkps.train.optimizer.create('adam', learning_rate=1e-3, wd=1e-4)
    opt2 = sparkps.train.optimizer.from_config(opt.to_config())      # same updates
"""
from sparkps.train.optimizer.base import (OPTIMIZERS, Optimizer, Updater, create, from_config, get_updater,
                                    register)
from sparkps.train.optimizer.sgd import NAG, SGD, SGLD, Signum
from sparkps.train.optimizer.adaptive import AdaDelta, AdaGrad, Adam, Ftrl, RMSProp
from sparkps.train.optimizer.adam_variants import FTML, LAMB, Adamax, Nadam

__all__ = ['OPTIMIZERS', 'Optimizer', 'Updater', 'create', 'from_config', 'get_updater', 'register',
           'SGD', 'NAG', 'Signum', 'SGLD', 'Adam', 'AdaGrad', 'RMSProp', 'AdaDelta', 'Ftrl', 'Adamax', 'Nadam',
           'FTML', 'LAMB']

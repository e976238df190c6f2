"""sparkps: MXNet-style networks trained by a parameter server inside Apache Spark.

    import sparkps as sp
    net = sp.sym.SoftmaxOutput(sp.sym.FullyConnected(sp.sym.Variable('data'), num_hidden=10), name='softmax')
    model = sp.FeedForward(net, num_epoch=10, optimizer='sgd', learning_rate=0.1)
    model.fit(X, y)

MXNet's module names are modules here, so a script's imports change only in the package name
(``import sparkps.optimizer as opt``, ``from sparkps.model import FeedForward, load_checkpoint``,
``from sparkps.io import NDArrayIter``, ``sparkps.nd.load(path)``; see docs/mxnet.md).

Subpackages are imported on first use, so ``import sparkps`` stays cheap: it imports none of them, nor numpy,
pyspark, ZeroMQ or numba (tests/mxnet_compat/test_import_habits.py).
"""
import importlib

__version__ = '0.2.0'  # 0.2: the role packages and saved-model format 2 (docs/saved_models.md)

_SUBMODULES = {'symbol': 'sparkps.symbol', 'optimizer': 'sparkps.optimizer',
               'initializer': 'sparkps.initializer', 'metric': 'sparkps.metric',
               'io': 'sparkps.io', 'kvstore': 'sparkps.kvstore', 'lr_scheduler': 'sparkps.lr_scheduler',
               'callback': 'sparkps.callback', 'model': 'sparkps.model', 'nd': 'sparkps.nd',
               'backend': 'sparkps.backend', 'errors': 'sparkps.errors'}
_ALIASES = {'sym': 'symbol', 'init': 'initializer', 'kv': 'kvstore', 'opt': 'optimizer'}
_NAMES = {'FeedForward': 'sparkps.train.feedforward', 'cpu': 'sparkps.backend', 'gpu': 'sparkps.backend',
          'Context': 'sparkps.backend', 'AttrScope': 'sparkps.symbol.attribute'}

__all__ = list(_SUBMODULES) + list(_ALIASES) + list(_NAMES)


def __getattr__(name):
    module = _ALIASES.get(name, name)
    if module in _SUBMODULES:
        return importlib.import_module(_SUBMODULES[module])
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'sparkps' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""Key-value stores with MXNet's interface: ``create(type)`` looks the type up in a registry.

    kv = sparkps.kvstore.create('local')                 # LocalKVStore, in this process
    kv = sparkps.kvstore.create('dist_sync', scheduler_uri=uri, secret=secret)   # the parameter server
    kv.is_capable('sync')                                # ask, don't probe (see sparkps.kvstore.base)

MXNet's type names are accepted and ``kv.type`` returns the name asked for; a type sparkps cannot serve
(``nccl``, ``horovod``) is a ConfigError saying so, an unknown one a ConfigError listing the known ones. The
dist types (``dist.py``, over the parameter server's ``KVWorker``) are imported only when asked for, so local
training never loads the parameter-server code. A new store type is one :func:`register` call.
"""
import importlib

from sparkps.errors import ConfigError
from sparkps.kvstore.base import KNOWN_CAPABILITIES, KVStoreBase, key_value_lists
from sparkps.kvstore.local import LocalKVStore
from sparkps.kvstore.strategies import DIST_TYPES

_FACTORIES = {}


def register(name, factory, unsupported=None):
    """Make ``create(name, **kwargs)`` call ``factory(name, **kwargs)``; with ``unsupported`` (a reason),
    ``create(name)`` raises ConfigError with that reason instead."""
    _FACTORIES[name] = (factory, unsupported)


def known_types():
    """Every type name ``create`` accepts, sorted."""
    return sorted(n for n, (_, unsupported) in _FACTORIES.items() if unsupported is None)


def create(name='local', **kwargs):
    """Return a KVStore of type ``name`` (a KVStoreBase instance is returned as it is).

    ``'local'``, ``'device'``, ``'local_allreduce_cpu'``, ... -> LocalKVStore (no options). ``'dist_sync'``,
    ``'dist_async'`` and their ``_device`` forms -> ``sparkps.worker.dist_kvstore.create_dist_kvstore`` (which
    blocks until the worker registered with the scheduler, up to its register timeout; options ``scheduler_uri``,
    ``secret``, ``rank``, ``timeouts``, ``compression``, ...). Unknown types -> ConfigError listing the known.
    """
    if isinstance(name, KVStoreBase):
        return name
    if not isinstance(name, str) or name not in _FACTORIES:
        raise ConfigError(f"unknown kvstore type {name!r} (known: {', '.join(known_types())})")
    factory, unsupported = _FACTORIES[name]
    if unsupported is not None:
        raise ConfigError(f"kvstore type {name!r} is not supported: {unsupported}")
    return factory(name, **kwargs)


def _local(name, **kwargs):
    if kwargs:
        raise ConfigError(f"kvstore {name!r} takes no options, got {sorted(kwargs)}")
    return LocalKVStore(name)


DIST_FACTORY = 'sparkps.worker.dist_kvstore:create_dist_kvstore'


def _dist(name, **kwargs):
    """The dist types live in the worker package, a layer above this one (docs/architecture.md): the registry
    names their factory by its import path and loads it on first use, so local training never loads the
    parameter-server code and no import here runs up a layer."""
    module, _, function = DIST_FACTORY.partition(':')
    return getattr(importlib.import_module(module), function)(name, **kwargs)


for _name in ('local', 'device', 'local_update_cpu', 'local_allreduce_cpu', 'local_allreduce_device'):
    register(_name, _local)
for _name in DIST_TYPES:
    register(_name, _dist)
register('nccl', None, "sparkps has no GPU collective backend; use 'local' or 'dist_sync'")
register('horovod', None, "sparkps trains through its parameter server; use 'dist_sync' or 'dist_async'")
register('p3', None, "priority-based parameter propagation is not implemented; use 'dist_sync'")

__all__ = ['KNOWN_CAPABILITIES', 'KVStoreBase', 'LocalKVStore', 'create', 'key_value_lists', 'known_types',
           'register']

"""Key-value stores with MXNet's interface: ``create(type)`` looks the type up in a registry.

    kv = sparkps.kvstore.create('local')                 # LocalKVStore, in this process
    kv = sparkps.kvstore.create('dist_sync', scheduler_uri=uri, secret=secret)   # the parameter server
    kv.is_capable('sync')                                # ask, don't probe (see sparkps.kvstore.base)

MXNet's type names are accepted and ``kv.type`` returns the name asked for; a type sparkps cannot serve
(``nccl``, ``horovod``) is a ConfigError saying so, an unknown one a ConfigError listing the known ones. The
dist types are registered by the class that serves them, ``sparkps.worker.dist_kvstore.DistKVStore``, when the
worker package is imported; this registry only knows which package provides them and imports it the first time
one is asked for, so local training never loads the parameter-server code. A new store type is one
:func:`register` call.
"""
import importlib

from sparkps.errors import ConfigError
from sparkps.kvstore.base import KNOWN_CAPABILITIES, KVStoreBase, key_value_lists
from sparkps.kvstore.local import LocalKVStore
from sparkps.kvstore.strategies import DIST_TYPES

_FACTORIES = {}
_PROVIDERS = {}   # type name -> the package whose import registers it


def register(name, factory, unsupported=None):
    """Make ``create(name, **kwargs)`` call ``factory(name, **kwargs)``; with ``unsupported`` (a reason),
    ``create(name)`` raises ConfigError with that reason instead."""
    _FACTORIES[name] = (factory, unsupported)


def provided_by(names, package):
    """The types ``names`` are registered by ``package`` (a dotted module name) when it is imported: ``create`` of
    one imports it on first use. For a layer above this one, which may not be imported from here."""
    for name in names:
        _PROVIDERS[name] = package


def known_types():
    """Every type name ``create`` accepts, sorted."""
    served = {n for n, (_, unsupported) in _FACTORIES.items() if unsupported is None}
    return sorted(served | set(_PROVIDERS))


def create(name='local', **kwargs):
    """Return a KVStore of type ``name`` (a KVStoreBase instance is returned as it is).

    ``'local'``, ``'device'``, ``'local_allreduce_cpu'``, ... -> LocalKVStore (no options). ``'dist_sync'``,
    ``'dist_async'`` and their ``_device`` forms -> ``DistKVStore.create`` (which blocks until the worker
    registered with the scheduler, up to its register timeout; options ``scheduler_uri``, ``secret``, ``rank``,
    ``timeouts``, ``compression``, ...). Unknown types -> ConfigError listing the known.
    """
    if isinstance(name, KVStoreBase):
        return name
    if isinstance(name, str) and name not in _FACTORIES and name in _PROVIDERS:
        importlib.import_module(_PROVIDERS[name])     # registers its types (a layer above: looked up on first use)
        if name not in _FACTORIES:
            raise ConfigError(f"kvstore type {name!r}: importing {_PROVIDERS[name]} did not register it")
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


for _name in ('local', 'device', 'local_update_cpu', 'local_allreduce_cpu', 'local_allreduce_device'):
    register(_name, _local)
provided_by(DIST_TYPES, 'sparkps.worker')
register('nccl', None, "sparkps has no GPU collective backend; use 'local' or 'dist_sync'")
register('horovod', None, "sparkps trains through its parameter server; use 'dist_sync' or 'dist_async'")
register('p3', None, "priority-based parameter propagation is not implemented; use 'dist_sync'")

__all__ = ['KNOWN_CAPABILITIES', 'KVStoreBase', 'LocalKVStore', 'create', 'key_value_lists', 'known_types',
           'provided_by', 'register']

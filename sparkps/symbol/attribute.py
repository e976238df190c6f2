"""User attributes of symbols: MXNet's hidden keys and ``AttrScope``.

    with sym.AttrScope(ctx_group='stage1', lr_mult='0.1'):
        fc = sym.FullyConnected(data, num_hidden=10)   # fc and fc_weight carry __lr_mult__ = 0.1

The keys MXNet treats as hidden (``lr_mult``, ``wd_mult``, ``ctx_group``, ...) are stored in their
``__key__`` form, and looked up under either name, as MXNet's attribute calls do. The scope is a
context variable: each thread (and asyncio task) sees its own, and a ``with`` block restores the
enclosing one on exit."""
from contextvars import ContextVar
from types import MappingProxyType

from ..errors import ConfigError

HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")
_SCOPE = ContextVar("sparkps_attr_scope", default=MappingProxyType({}))  # read-only: scopes set new dicts


def stored_key(key):
    """The key an attribute is stored under: '__lr_mult__' for 'lr_mult', the key itself otherwise."""
    key = str(key)
    return "__%s__" % key if key in HIDDEN_KEYS else key


def attr_strings(attr):
    """The attributes in scope updated by ``attr`` (a dict), keys in stored form, values strings."""
    out = dict(_SCOPE.get())
    for key, value in (attr or {}).items():
        if not isinstance(value, str):
            raise ConfigError("attribute %r must be a string, got %r" % (key, value))
        out[stored_key(key)] = value
    return out


def lookup(attrs, key):
    """``attrs[key]``, or its hidden form, or None."""
    value = attrs.get(key)
    return attrs.get(stored_key(key)) if value is None else value


class AttrScope:
    """Attributes given to every symbol created inside the ``with`` block (inner scopes add to and
    override outer ones). Values must be strings, as MXNet's."""

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ConfigError("AttrScope: attribute %r must be a string, got %r" % (key, value))
        self._attrs = {stored_key(k): v for k, v in kwargs.items()}
        self._tokens = []

    def get(self, attr=None):
        """The attributes in effect inside this scope, updated by ``attr``."""
        out = dict(self._attrs)
        out.update({stored_key(k): v for k, v in (attr or {}).items()})
        return out

    def __enter__(self):
        merged = dict(_SCOPE.get())
        merged.update(self._attrs)
        self._tokens.append(_SCOPE.set(merged))
        return self

    def __exit__(self, *exc):
        _SCOPE.reset(self._tokens.pop())
        return False

"""The one initialiser of new sparse rows: a pure function of (table, id, column), used by the local kvstore, the
servers' tables and prediction alike.

A counter-based generator with no state. With ``seed = table_seed(table)`` (:mod:`sparkps.rows.ids`), ``mix64``
the splitmix64 finaliser, ``GOLDEN = 0x9E3779B97F4A7C15`` and wrapping 64-bit arithmetic, element (id, column
``c`` in 0..dim-1) of stream ``s`` has the bits::

    bits = mix64(mix64(mix64(id ^ seed) + s) + (c + 1) * GOLDEN)
    u    = (bits >> 11) * 2**-53                       # uniform in [0, 1): the top 53 bits

``'uniform'`` rows are ``(2 u - 1) * scale`` (stream 0), ``'normal'`` rows Box-Muller over streams 0 and 1:
``sqrt(-2 log(1 - u0)) * cos(2 pi u1) * sigma``; ``'zeros'`` and ``'constant'`` draw nothing. So a row's first
value is the same whichever process or server creates it, in whatever order, and for any server count
(docs/architecture.md, decision 13). It is vectorised over ids and columns; nothing loops per row.

>>> init = RowInitializer('uniform', scale=0.1)
>>> rows = init.rows('user', np.array([5, 5, 6], np.uint64), 4)
>>> rows.shape, bool((rows[0] == rows[1]).all()), bool((abs(rows) <= 0.1).all())
((3, 4), True, True)
>>> bool((initial_rows('user', [5], 4, scale=0.1) == rows[:1]).all())
True
"""
import numpy as np

from sparkps.errors import ConfigError
from sparkps.rows.ids import mix64, table_seed, value_ids

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_KINDS = {'zeros': (), 'constant': ('value',), 'uniform': ('scale',), 'normal': ('sigma',)}


def _unit_floats(seed, ids, dim, stream):
    """Uniform floats in [0, 1) of shape (len(ids), dim) for (seed, id, column, stream)."""
    base = mix64(mix64(ids ^ np.uint64(seed)) + np.uint64(stream))
    cols = np.arange(1, dim + 1, dtype=np.uint64) * _GOLDEN
    with np.errstate(over='ignore'):
        bits = mix64(base[:, None] + cols[None, :])
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


class RowInitializer:
    """How a table fills a new row: ``'zeros'``, ``'constant'`` (value), ``'uniform'`` (scale: [-scale,
    scale)) or ``'normal'`` (sigma); scale and sigma default to 0.01. ``config()`` is plain JSON;
    ``RowInitializer.from_config`` rebuilds it."""

    def __init__(self, kind='uniform', **params):
        if kind not in _KINDS:
            raise ConfigError(f"unknown row initializer {kind!r}; known: {sorted(_KINDS)}")
        unknown = set(params) - set(_KINDS[kind])
        if unknown:
            raise ConfigError(f"row initializer {kind!r} takes {list(_KINDS[kind])}, not {sorted(unknown)}")
        defaults = {'value': 0.0, 'scale': 0.01, 'sigma': 0.01}
        self.kind = kind
        self.params = {k: float(params.get(k, defaults[k])) for k in _KINDS[kind]}

    @classmethod
    def from_config(cls, config):
        """Build from ``config()`` output, a kind name, or None (uniform, scale 0.01); a RowInitializer is itself."""
        if isinstance(config, RowInitializer):
            return config
        if config is None:
            return cls()
        if isinstance(config, str):
            return cls(config)
        if not isinstance(config, dict) or 'kind' not in config:
            raise ConfigError(f"a row initializer config is {{'kind': ..., params}}, got {config!r}")
        params = dict(config)
        return cls(params.pop('kind'), **params)

    def config(self):
        """``{'kind': ..., **params}`` (JSON)."""
        return {'kind': self.kind, **self.params}

    def rows(self, table, ids, dim, dtype=np.float32):
        """New rows for ``ids`` of the table named ``table``: an array (len(ids), dim) of ``dtype``."""
        return self(table_seed(table), ids, dim, dtype)

    def __call__(self, seed, ids, dim, dtype=np.float32):
        """New rows for checked ``ids`` (uint64, or their int64 view) of the table whose seed is ``seed``: an array
        (len(ids), dim) of ``dtype`` (computed in float64, rounded once)."""
        ids = ids.view(np.uint64) if ids.dtype == np.int64 else ids
        n = ids.size
        if self.kind == 'zeros':
            return np.zeros((n, dim), dtype)
        if self.kind == 'constant':
            return np.full((n, dim), self.params['value'], dtype)
        u = _unit_floats(seed, ids, dim, 0)
        if self.kind == 'uniform':
            return ((2.0 * u - 1.0) * self.params['scale']).astype(dtype)
        v = _unit_floats(seed, ids, dim, 1)
        radius = np.sqrt(-2.0 * np.log1p(-u))          # 1 - u in (0, 1]: log is finite
        return (radius * np.cos(2.0 * np.pi * v) * self.params['sigma']).astype(dtype)


def initial_rows(table, ids, dim, scale=0.01, dtype=np.float32):
    """The initial rows of ``ids`` (any integers, as a ``RowSparse`` takes them) in ``table`` under the default
    initialiser, uniform in [-scale, scale): ``RowInitializer('uniform', scale=scale).rows(table, ids, dim)``."""
    return RowInitializer('uniform', scale=scale).rows(table, value_ids(ids), dim, dtype)

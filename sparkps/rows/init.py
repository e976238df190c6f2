"""Initial values of new sparse rows, a pure function of (table seed, id, column).

A counter-based generator: ``bits = mix64(mix64(seed ^ mix64(id)) + column * GOLDEN)`` gives 64 random bits
per element with no state, so a row's first value is the same whichever server creates it, in whatever
order, and for any server count (DESIGN decision 13). It is vectorised over ids and columns; nothing loops
per row. Uniform values take the top 53 bits; normal values use Box-Muller on two such streams.

>>> init = RowInitializer('uniform', scale=0.1)
>>> rows = init(1234, np.array([5, 5, 6], np.uint64), 4)
>>> rows.shape, bool((rows[0] == rows[1]).all()), bool((abs(rows) <= 0.1).all())
((3, 4), True, True)
"""
import numpy as np

from sparkps.errors import ConfigError
from sparkps.rows.ids import mix64

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
        """Build from ``config()`` output, a kind name, or None (uniform, scale 0.01)."""
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

    def __call__(self, seed, ids, dim):
        """New rows for ``ids`` (uint64) of table ``seed``: a float32 array (len(ids), dim)."""
        n = ids.size
        if self.kind == 'zeros':
            return np.zeros((n, dim), np.float32)
        if self.kind == 'constant':
            return np.full((n, dim), self.params['value'], np.float32)
        u = _unit_floats(seed, ids, dim, 0)
        if self.kind == 'uniform':
            return ((2.0 * u - 1.0) * self.params['scale']).astype(np.float32)
        v = _unit_floats(seed, ids, dim, 1)
        radius = np.sqrt(-2.0 * np.log1p(-u))          # 1 - u in (0, 1]: log is finite
        return (radius * np.cos(2.0 * np.pi * v) * self.params['sigma']).astype(np.float32)

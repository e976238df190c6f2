"""Where each dense parameter lives: one flat float32 buffer cut into contiguous per-server ranges.

The keys given to one ``init`` call form a *group*: their values, flattened and concatenated in sorted key
order, make one flat buffer of ``N`` elements. Server ``s`` of ``S`` owns the elements
``[s * N // S, (s + 1) * N // S)`` of it, so the ranges are balanced by size and a single huge key may span
several servers. A key's share on one server is a :class:`Piece` (an element range of the key's flattened
value). Workers and servers compute the same layout from the same ``{key: shape}`` table, and a message
for server ``s`` carries the pieces of the requested keys that ``s`` owns, concatenated in sorted key order:
pushing or pulling every parameter costs one request per server.

>>> layout = KeyLayout(num_servers=2)
>>> layout.add({0: (3, 2), 1: (2,)})
>>> [tuple(p) for p in layout.pieces_on(0)]
[(0, 0, 0, 4)]
>>> [tuple(p) for p in layout.pieces_on(1)]
[(0, 1, 4, 6), (1, 1, 0, 2)]
"""
from typing import NamedTuple

import numpy as np

from sparkps.errors import ConfigError


class Piece(NamedTuple):
    """Elements ``[lo, hi)`` of the flattened value of ``key``, held by server rank ``server``."""
    key: int
    server: int
    lo: int
    hi: int

    @property
    def size(self):
        return self.hi - self.lo


def check_key(key):
    """Return ``key`` as an int, or raise ConfigError naming it (keys are non-negative ints)."""
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)) or key < 0:
        raise ConfigError("kvstore key %r is not a non-negative int" % (key,))
    return int(key)


def cut_group(sizes, num_servers):
    """Cut the keys of one group (``{key: number of elements}``) into pieces, balanced by size.

    Returns ``{key: [Piece, ...]}``; a key of size 0 gets no piece.
    """
    keys = sorted(sizes)
    total = sum(sizes[k] for k in keys)
    bounds = [s * total // num_servers for s in range(num_servers + 1)]
    pieces, start = {}, 0
    for key in keys:
        end = start + sizes[key]
        pieces[key] = [Piece(key, s, max(start, bounds[s]) - start, min(end, bounds[s + 1]) - start)
                       for s in range(num_servers) if max(start, bounds[s]) < min(end, bounds[s + 1])]
        start = end
    return pieces


class KeyLayout:
    """The key -> (server, element range) table of one kvstore; pure data, no I/O.

    ``add`` registers a group of new keys; ``pieces_on(server, keys)`` lists what one request to ``server``
    carries; ``servers_for(keys)`` lists the server ranks a request for ``keys`` must reach.
    """

    def __init__(self, num_servers):
        if int(num_servers) < 1:
            raise ConfigError("a parameter server cluster needs at least one server, got %r" % (num_servers,))
        self.num_servers = int(num_servers)
        self.shapes = {}
        self._pieces = {}
        self._memo = {}  # (server or None, tuple(keys)) -> pieces / servers; cleared by ``add``

    def add(self, shapes):
        """Register ``{key: shape}`` as one new group; raises ConfigError if a key is already known."""
        shapes = {check_key(k): tuple(int(d) for d in shape) for k, shape in shapes.items()}
        known = sorted(set(shapes) & set(self.shapes))
        if known:
            raise ConfigError("kvstore keys %s are already initialised" % known)
        sizes = {k: int(np.prod(shape, dtype=np.int64)) for k, shape in shapes.items()}
        self._pieces.update(cut_group(sizes, self.num_servers))
        self.shapes.update(shapes)
        self._memo.clear()

    def size(self, key):
        """Number of elements of ``key``."""
        return int(np.prod(self.shapes[key], dtype=np.int64))

    def check_known(self, keys):
        """Return ``keys`` as sorted unique ints; raises ConfigError naming any key never initialised."""
        keys = sorted({check_key(k) for k in keys})
        unknown = [k for k in keys if k not in self.shapes]
        if unknown:
            raise ConfigError("kvstore keys %s were never initialised (call init first)" % unknown)
        return keys

    def pieces_on(self, server, keys=None):
        """Pieces of ``keys`` (default: every key) held by ``server``, in sorted key order."""
        memo = self._memo_key(server, keys)
        found = self._memo.get(memo)
        if found is None:
            keys = sorted(self.shapes) if keys is None else self.check_known(keys)
            found = self._remember(memo, [p for k in keys for p in self._pieces[k] if p.server == server])
        return list(found)

    def pieces_of(self, key):
        """Every piece of ``key``, in server order."""
        return list(self._pieces[key])

    def servers_for(self, keys=None):
        """Sorted server ranks that hold at least one piece of ``keys`` (default: every key)."""
        memo = self._memo_key("servers", keys)
        found = self._memo.get(memo)
        if found is None:
            keys = sorted(self.shapes) if keys is None else self.check_known(keys)
            found = self._remember(memo, sorted({p.server for k in keys for p in self._pieces[k]}))
        return list(found)

    @staticmethod
    def _memo_key(what, keys):
        """A memo key for a lookup, or None when ``keys`` must go through the full checks (not plain ints)."""
        if keys is None:
            return (what, None)
        keys = tuple(keys)
        return (what, keys) if all(type(k) is int for k in keys) else None

    def _remember(self, memo, found):
        if memo is not None:
            if len(self._memo) >= 1024:  # many distinct key subsets: start over rather than grow
                self._memo.clear()
            self._memo[memo] = found
        return found

    def to_meta(self, server, keys=None):
        """The pieces of ``keys`` (default all) ``server`` holds, as msgpack-able lists (sent with INIT)."""
        pieces = self.pieces_on(server, keys)
        keys = sorted({p.key for p in pieces})
        return {"pieces": [[p.key, p.lo, p.hi] for p in pieces],
                "shapes": [[k, list(self.shapes[k])] for k in keys]}

"""Where each dense parameter lives: one flat float32 buffer cut into contiguous per-server ranges.

The keys given to one ``init`` call form a *group*: their values, flattened and concatenated in sorted key
order, make one flat buffer of ``N`` elements. Server ``s`` of ``S`` owns the elements
``[s * N // S, (s + 1) * N // S)`` of it, so the ranges are balanced by size and a single huge key may span
several servers. A key's share on one server is a :class:`Piece` (an element range of the key's flattened
value). Workers and servers compute the same layout from the same ``{key: shape}`` table, and a message
for server ``s`` carries the pieces of the requested keys that ``s`` owns, concatenated in sorted key order:
pushing or pulling every parameter costs one request per server.

A piece is updated by the server's optimizer on its own, which equals updating the whole key only for an optimizer
whose class says ``elementwise`` (:class:`sparkps.optimizer.base.Optimizer`; LAMB's step scales by the norms of the
whole weight). For any other the layout keeps keys whole (``whole_keys``): each key lies on one server, the one that
holds the middle element of its range in the flat buffer, so groups stay balanced key by key. ``lay_whole`` re-lays
the keys already cut (the worker moves their values when such an optimizer arrives after ``init``).

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


def cut_group(sizes, num_servers, whole=False):
    """Cut the keys of one group (``{key: number of elements}``) into pieces, balanced by size; with ``whole``,
    each key is one piece on the server holding its middle element.

    Returns ``{key: [Piece, ...]}``; a key of size 0 gets no piece.
    """
    keys = sorted(sizes)
    total = sum(sizes[k] for k in keys)
    bounds = [s * total // num_servers for s in range(num_servers + 1)]
    pieces, start = {}, 0
    for key in keys:
        end = start + sizes[key]
        if whole:
            middle = (start + end - 1) // 2
            pieces[key] = [Piece(key, _server_of(middle, bounds), 0, sizes[key])] if end > start else []
        else:
            pieces[key] = [Piece(key, s, max(start, bounds[s]) - start, min(end, bounds[s + 1]) - start)
                           for s in range(num_servers) if max(start, bounds[s]) < min(end, bounds[s + 1])]
        start = end
    return pieces


def _server_of(element, bounds):
    """The server whose range ``[bounds[s], bounds[s + 1])`` holds ``element``."""
    return next(s for s in range(len(bounds) - 1) if element < bounds[s + 1])


class KeyLayout:
    """The key -> (server, element range) table of one kvstore; pure data, no I/O.

    ``add`` registers a group of new keys; ``pieces_on(server, keys)`` lists what one request to ``server``
    carries; ``servers_for(keys)`` lists the server ranks a request for ``keys`` must reach. ``whole_keys``: groups
    added from now on keep each key on one server (for an optimizer that is not elementwise).
    """

    def __init__(self, num_servers, whole_keys=False):
        if int(num_servers) < 1:
            raise ConfigError("a parameter server cluster needs at least one server, got %r" % (num_servers,))
        self.num_servers = int(num_servers)
        self.whole_keys = bool(whole_keys)
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
        self._pieces.update(cut_group(sizes, self.num_servers, self.whole_keys))
        self.shapes.update(shapes)
        self._memo.clear()

    def cut_keys(self):
        """Sorted keys whose pieces lie on more than one server."""
        return sorted(k for k, pieces in self._pieces.items() if len(pieces) > 1)

    def lay_whole(self, keys):
        """Keep each of ``keys`` whole from now on, on the server that holds its largest piece (the first of
        equal ones); returns ``{key: the servers that held a piece of it before}``."""
        before = {}
        for key in self.check_known(keys):
            pieces = self._pieces[key]
            before[key] = [p.server for p in pieces]
            if pieces:
                largest = max(pieces, key=lambda p: p.size)
                self._pieces[key] = [Piece(key, largest.server, 0, self.size(key))]
        self._memo.clear()
        return before

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

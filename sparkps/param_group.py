"""ParameterGroup: arrays laid out end to end in one flat buffer, with their keys, names, shapes and offsets.

``simple_bind`` lays every parameter (and every gradient) of a network out this way, so a kvstore can send
or receive all of them as one block: it asks the group where a key's elements are (``offset_of``, ``span``)
instead of rediscovering the layout from memory addresses. A group is also a read-only sequence of its
arrays (views of ``flat``, in key order), so APIs that take a list of arrays take a group as it is.

Neutral ground: only numpy (and the arrays' own module, numpy or CuPy) is used, so the symbol, kvstore and
parameter-server layers may all import it. Nothing here blocks.

>>> group = ParameterGroup.allocate(np, [("w", (2, 3)), ("b", (3,))], np.float32)
>>> group.offsets, group.flat.size, group[1].shape
((0, 6), 9, (3,))
>>> group.span([(0, 4, 6), (1, 0, 3)]).size     # key 0's elements 4..6 and all of key 1: one slice
5
"""
from collections.abc import Sequence

import numpy as np

from sparkps.backend import asnumpy


class ParameterGroup(Sequence):
    """Arrays named ``names`` of ``shapes`` stored end to end in ``flat`` (in that order), under ``keys``.

    ``keys`` default to ``0 .. len(names) - 1`` (the kvstore keys FeedForward uses).
    """

    def __init__(self, names, shapes, flat, keys=None):
        self.names = tuple(names)
        self.shapes = tuple(tuple(int(d) for d in s) for s in shapes)
        self.sizes = tuple(int(np.prod(s, dtype=np.int64)) for s in self.shapes)
        self.keys = tuple(range(len(self.names))) if keys is None else tuple(keys)
        if len(self.keys) != len(self.names):
            raise ValueError("a parameter group of %d arrays needs %d keys, got %d"
                             % (len(self.names), len(self.names), len(self.keys)))
        offsets, total = [], 0
        for size in self.sizes:
            offsets.append(total)
            total += size
        if flat.ndim != 1 or flat.size != total:
            raise ValueError("a parameter group of %d elements needs a flat buffer of that size, got shape %s"
                             % (total, tuple(flat.shape)))
        self.offsets = tuple(offsets)
        self.flat = flat
        self._position = {k: i for i, k in enumerate(self.keys)}
        self._arrays = tuple(flat[o:o + n].reshape(s) for o, n, s in zip(self.offsets, self.sizes, self.shapes))

    @classmethod
    def allocate(cls, xp, specs, dtype, keys=None):
        """A zero-filled group for ``specs`` ``[(name, shape)]`` on the array module ``xp``."""
        sizes = [int(np.prod(s, dtype=np.int64)) for _, s in specs]
        return cls([n for n, _ in specs], [s for _, s in specs], xp.zeros(sum(sizes), dtype=dtype), keys)

    def __len__(self):
        return len(self._arrays)

    def __getitem__(self, index):
        return self._arrays[index]

    def array(self, name):
        """The array named ``name`` (a view of ``flat``)."""
        return self._arrays[self.names.index(name)]

    def array_of(self, key):
        """The array stored under ``key`` (a view of ``flat``)."""
        return self._arrays[self._position[key]]

    def offset_of(self, key):
        """Where the elements of ``key`` start in ``flat``."""
        return self.offsets[self._position[key]]

    def span(self, pieces):
        """One slice of ``flat`` holding the pieces ``[(key, lo, hi)]`` (element ranges of keys) when they lie
        end to end in that order; None otherwise (the caller copies them one by one)."""
        start = end = None
        for key, lo, hi in pieces:
            if key not in self._position:
                return None
            begin = self.offset_of(key) + lo
            if end is not None and begin != end:
                return None
            start = begin if start is None else start
            end = begin + (hi - lo)
        return None if start is None else self.flat[start:end]

    def on_host(self):
        """This group if its buffer is a numpy array; else a copy of it in host memory."""
        if isinstance(self.flat, np.ndarray):
            return self
        return ParameterGroup(self.names, self.shapes, asnumpy(self.flat), self.keys)

    def empty_host_like(self):
        """A group of the same layout over a new, uninitialised float32 host buffer."""
        return ParameterGroup(self.names, self.shapes, np.empty(self.flat.size, np.float32), self.keys)

    def __repr__(self):
        return "ParameterGroup(%s, %d elements of %s)" % (list(self.names), self.flat.size, self.flat.dtype)


def bound_arrays(group, arrays, names):
    """The arrays of ``names``: simple_bind's ParameterGroup when it holds exactly them (a kvstore then moves
    them as one block), else a list."""
    if group is not None and list(group.names) == list(names):
        return group
    return [arrays[n] for n in names]

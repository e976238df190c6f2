"""Reusable buffers for arrays sent without a copy.

A zero-copy send keeps a reference to the array until ZeroMQ has written it out, so a buffer may be
filled again once nothing but the pool refers to it.  Reusing buffers spares the allocator a fresh
multi-hundred-kB block per message, whose first touch costs a page fault per 4 kB page.

>>> pool = BufferPool()
>>> a = pool.take(4)
>>> first, view = id(a), a[1:]      # a view, as a frame in flight holds one
>>> del a
>>> id(pool.take(4)) == first        # still referenced: not handed out again
False
>>> del view
>>> id(pool.take(4)) == first
True
"""
import sys
import threading

import numpy as np

_UNUSED_REFS = 3  # the pool's list, the loop variable and getrefcount's own argument


class BufferPool:
    """Flat arrays by (size, dtype), reused once released; keeps at most ``keep`` per kind. Thread-safe."""

    def __init__(self, keep=3):
        self.keep = keep
        self._buffers = {}
        self._lock = threading.Lock()

    def take(self, size, dtype=np.float32):
        """A flat array of ``size`` elements that nobody else refers to (contents undefined)."""
        kind = (int(size), np.dtype(dtype))
        with self._lock:
            buffers = self._buffers.setdefault(kind, [])
            for buffer in buffers:
                if sys.getrefcount(buffer) == _UNUSED_REFS:
                    return buffer
            buffer = np.empty(kind[0], kind[1])
            if len(buffers) < self.keep:
                buffers.append(buffer)
            return buffer

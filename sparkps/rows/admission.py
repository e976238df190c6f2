"""Admission and eviction rules of a sparse table, as pure functions of its counters (no I/O, no storage).

* Admission by count: a new id becomes a row once it was named ``min_count`` times. Until then it is
  counted in an :class:`OccurrenceSketch` (a count-min sketch: fixed memory, never under-counts, so an id is
  never admitted late; collisions can only admit one early) and reads as zeros.
* Expiry: rows unseen for more than ``ttl`` steps; rows whose decayed count fell under ``min_decayed``.
  Counts decay by ``decay`` per step, lazily: a row keeps ``seen`` as of ``last_seen`` and
  :func:`decayed` brings it to any later step (TensorNet's show decay, without touching every row).
* Capacity: the least recently seen rows make room, in batches (:func:`least_recent`).

>>> sketch = OccurrenceSketch(width=64)
>>> ids = np.array([1, 2], np.uint64)
>>> sketch.add(ids, np.array([2, 1])); sketch.add(ids, np.array([1, 1]))
>>> sketch.estimate(ids).tolist()
[3, 2]
"""
import numpy as np

from sparkps.rows.ids import mix64

_SALTS = np.array([0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89],
                  dtype=np.uint64)


class OccurrenceSketch:
    """Count-min sketch of id occurrences (``depth`` rows of ``width`` uint32 counters)."""

    def __init__(self, width=1 << 18, depth=4):
        if width & (width - 1) or not 1 <= depth <= len(_SALTS):
            raise ValueError(f"sketch width must be a power of two and depth 1..{len(_SALTS)}")
        self.counts = np.zeros((depth, width), np.uint32)
        self.base = None   # counts loaded from a checkpoint: the sum over the servers that saved it

    @property
    def nbytes(self):
        """Bytes of the counters."""
        return self.counts.nbytes + (self.base.nbytes if self.base is not None else 0)

    def _buckets(self, ids):
        width = np.uint64(self.counts.shape[1] - 1)
        return [(mix64(ids ^ salt) & width).astype(np.int64) for salt in _SALTS[:self.counts.shape[0]]]

    def add(self, ids, occurrences):
        """Count ``occurrences[i]`` more sightings of ``ids[i]`` (ids distinct)."""
        occurrences = np.asarray(occurrences, np.uint32)
        for row, buckets in zip(self.counts, self._buckets(ids)):
            np.add.at(row, buckets, occurrences)

    def estimate(self, ids):
        """Upper bound of each id's count (exact unless another id shares all its buckets), ``base`` included."""
        counts = self.counts if self.base is None else self.counts + self.base
        rows = [row[b] for row, b in zip(counts, self._buckets(ids))]
        return np.minimum.reduce(rows)

    def total(self, with_base):
        """The counters to save: this server's own, plus the loaded ``base`` when ``with_base`` (exactly one
        server saves the base, so the sum over the servers' files counts every occurrence once)."""
        return self.counts + self.base if with_base and self.base is not None else self.counts.copy()


def decayed(seen, last_seen, step, decay):
    """Counts ``seen`` (as of ``last_seen``) decayed to ``step`` by ``decay`` per step (float32)."""
    if decay is None or decay == 1.0:
        return seen
    age = np.maximum(step - last_seen.astype(np.int64), 0)
    return (seen * np.power(decay, age)).astype(np.float32)


def expired(seen, last_seen, step, ttl=None, decay=None, min_decayed=None):
    """Boolean mask of rows to evict: unseen for more than ``ttl`` steps, or decayed count under
    ``min_decayed``."""
    mask = np.zeros(seen.shape, bool)
    if ttl is not None:
        mask |= (step - last_seen.astype(np.int64)) > ttl
    if min_decayed is not None:
        mask |= decayed(seen, last_seen, step, decay) < min_decayed
    return mask


def least_recent(last_seen, count, protect_step):
    """Indices (into ``last_seen``) of ``count`` rows seen longest ago, never one seen at ``protect_step``;
    fewer when not enough rows qualify."""
    candidates = np.flatnonzero(last_seen < protect_step)
    if candidates.size <= count:
        return candidates
    part = np.argpartition(last_seen[candidates], count - 1)[:count]
    return candidates[part]

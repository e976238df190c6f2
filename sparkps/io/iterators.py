"""Batch iterators with MXNet's interface: DataDesc, DataBatch, DataIter, NDArrayIter."""
from collections import namedtuple

import numpy as np

from sparkps.errors import ConfigError, DataError

DataDesc = namedtuple('DataDesc', ['name', 'shape'])
DataDesc.__doc__ = "Name and shape (batch first) of one input; unpacks as ``(name, shape)``."

LAST_BATCH_MODES = ('pad', 'discard', 'roll_over')


class DataBatch:
    """One batch: lists of arrays ``data`` and ``label``; ``pad`` rows at the end are filler."""

    def __init__(self, data, label=None, pad=0, index=None, provide_data=None, provide_label=None):
        self.data = list(data)
        self.label = list(label) if label is not None else []
        self.pad = int(pad)
        self.index = index
        self.provide_data, self.provide_label = provide_data, provide_label

    def __repr__(self):
        shapes = [tuple(d.shape) for d in self.data]
        return f'DataBatch(data shapes={shapes}, pad={self.pad})'


class DataIter:
    """Base iterator: ``for batch in it`` runs one epoch; ``reset()`` starts the next.

    Subclasses implement ``next()`` (raise StopIteration at the end of an epoch), ``reset()``,
    ``provide_data`` and ``provide_label``.
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self):
        raise NotImplementedError

    def reset(self):
        raise NotImplementedError

    @property
    def provide_data(self):
        raise NotImplementedError

    @property
    def provide_label(self):
        raise NotImplementedError


def _named_arrays(arrays, default_name, role):
    """Normalise an array, a list of arrays or a dict to [(name, float32 array)] (integer data arrays stay
    integer)."""
    if arrays is None:
        return []
    if isinstance(arrays, dict):
        pairs = sorted(arrays.items())
    elif isinstance(arrays, (list, tuple)) and arrays and all(hasattr(a, 'shape') for a in arrays):
        pairs = [(default_name, arrays[0])] if len(arrays) == 1 else \
            [(f'_{i}_{default_name}', a) for i, a in enumerate(arrays)]
    else:
        pairs = [(default_name, arrays)]
    out = []
    for name, array in pairs:
        try:
            array = np.asarray(array)
            # integer data keeps its type: 64-bit feature ids of sparse embeddings do not fit a float32
            keep = role == 'data' and array.dtype.kind in 'iu'
            array = array if keep else np.asarray(array, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise DataError(f"{role} {name!r} is not a numeric array: {exc}") from None
        if array.ndim == 0:
            raise DataError(f"{role} {name!r} must have a batch axis, got a scalar")
        out.append((name, array))
    return out


class NDArrayIter(DataIter):
    """Iterate over in-memory arrays in batches.

        it = NDArrayIter(X, y, batch_size=32, shuffle=True, last_batch_handle='pad', seed=0)
        for batch in it: ...     # batch.data[0] is (32, ...), batch.pad rows at the end are filler
        it.reset()

    ``last_batch_handle``: 'pad' fills the last batch with rows from the start of the epoch (``pad`` says
    how many); 'discard' drops it; 'roll_over' carries its rows into the first batch of the next epoch.
    With ``shuffle`` the row order is redrawn at every reset from a Generator seeded by ``seed``; without a
    ``seed``, from numpy's global generator, as MXNet's NDArrayIter does (``np.random.seed`` makes it repeat).
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle='pad',
                 data_name='data', label_name='softmax_label', seed=None):
        super().__init__(int(batch_size))
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size!r}")
        if last_batch_handle not in LAST_BATCH_MODES:
            raise ConfigError(f"last_batch_handle must be one of {LAST_BATCH_MODES}, got {last_batch_handle!r}")
        self.data = _named_arrays(data, data_name, 'data')
        self.label = _named_arrays(label, label_name, 'label')
        if not self.data:
            raise DataError("NDArrayIter needs at least one data array")
        self.num_data = self.data[0][1].shape[0]
        for name, array in self.data + self.label:
            if array.shape[0] != self.num_data:
                raise DataError(f"{name!r} has {array.shape[0]} rows but {self.data[0][0]!r} has "
                                f"{self.num_data}")
        self.shuffle, self.last_batch_handle = bool(shuffle), last_batch_handle
        self._rng = np.random.default_rng(seed) if seed is not None else np.random
        self._carry = np.empty(0, dtype=np.int64)
        self.reset()

    @property
    def provide_data(self):
        return [DataDesc(n, (self.batch_size,) + a.shape[1:]) for n, a in self.data]

    @property
    def provide_label(self):
        return [DataDesc(n, (self.batch_size,) + a.shape[1:]) for n, a in self.label]

    def reset(self):
        """Start a new epoch (reshuffling when ``shuffle``); rolled-over rows come first."""
        order = self._rng.permutation(self.num_data) if self.shuffle else np.arange(self.num_data)
        self._contiguous = not self.shuffle and self._carry.size == 0
        self._order = np.concatenate([self._carry, order]) if self._carry.size else order
        self._carry = np.empty(0, dtype=np.int64)
        self._cursor = 0

    def next(self):
        """Return the next DataBatch; raises StopIteration at the end of the epoch."""
        total, start = self._order.size, self._cursor
        end = start + self.batch_size
        if start >= total or total == 0:
            raise StopIteration
        pad = 0
        if end > total:
            if self.last_batch_handle == 'discard':
                self._cursor = total
                raise StopIteration
            if self.last_batch_handle == 'roll_over':
                self._carry = self._order[start:]
                self._cursor = total
                raise StopIteration
            pad = end - total
        self._cursor = end
        if self._contiguous and pad == 0:
            take = slice(start, end)
        else:
            take = np.concatenate([self._order[start:], self._order[np.arange(pad) % total]]) if pad \
                else self._order[start:end]
        return DataBatch([a[take] for _, a in self.data], [a[take] for _, a in self.label], pad=pad,
                         index=take, provide_data=self.provide_data, provide_label=self.provide_label)

    def getpad(self):
        """Number of filler rows in the last batch returned (0 unless ``'pad'``)."""
        return max(0, self._cursor - self._order.size)

"""What a KVWorker request carries and fills: values cut into per-server payloads, output arrays filled from
the replies, and staged pushes (values copied or encoded once, sent later).

Values and outputs are lists of arrays or a :class:`~sparkps.param_group.ParameterGroup`, whose per-server share
is one slice of its flat buffer. Nothing here sends or waits: :class:`sparkps.worker.kvworker.KVWorker` does.
"""
import numpy as np

from sparkps.backend import asnumpy, copy_into
from sparkps.errors import ConfigError
from sparkps.param_group import ParameterGroup


def host_value(value):
    """``value`` (numpy, CuPy or a list of per-device arrays, summed) as a numpy array."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise ConfigError("an empty list of arrays was given as one kvstore value")
        arrays = [host_value(v) for v in value]
        return arrays[0] if len(arrays) == 1 else np.sum(arrays, axis=0)
    return asnumpy(value)


def piece_ranges(pieces):
    return [(p.key, p.lo, p.hi) for p in pieces]


class Staged:
    """A push whose gradients were already copied into one payload per server (``KVWorker.stage``)."""

    def __init__(self, keys, payloads):
        self.keys = keys          # sorted keys
        self.payloads = payloads  # {server rank: flat array in that server's piece order}


class Values:
    """The checked values of one call: ``{key: flat float32 host array}`` and their host group (or None)."""

    def __init__(self, flat, group=None):
        self.flat, self.group = flat, group

    def payload(self, pieces, dtype, zero_copy):
        """The values of ``pieces`` as one flat array: a slice of the group when they lie end to end in it
        (not over inproc://, where the server would hold a view of the caller's memory)."""
        span = self.group.span(piece_ranges(pieces)) if self.group is not None and zero_copy else None
        if span is not None and span.dtype == dtype:
            return span
        parts = [self.flat[p.key][p.lo:p.hi] for p in pieces]
        if len(parts) > 1:
            return np.concatenate(parts, dtype=dtype)
        return parts[0].astype(dtype, copy=False)


class Outputs:
    """Where a pull's answers go: ``{key: out array}``, a host group to fill in one slice per server, and host
    staging arrays for outputs that are not host arrays (copied over when the pull completes)."""

    def __init__(self, outs, group=None):
        self.outs = outs
        self.device_group = None
        self.group = None
        self.staging = {}
        if group is not None:
            if isinstance(group.flat, np.ndarray) and group.flat.dtype == np.float32:
                self.group = group
            else:
                self.group, self.device_group = group.empty_host_like(), group

    def scatter(self, pieces, payload, size_of):
        span = self.group.span(piece_ranges(pieces)) if self.group is not None else None
        if span is not None:  # weights bound as one flat buffer: one copy
            span[...] = payload
            return
        offset = 0
        for p in pieces:
            self._target(p.key, size_of)[p.lo:p.hi] = payload[offset:offset + p.size]
            offset += p.size

    def _target(self, key, size_of):
        if self.group is not None:
            return self.group.array_of(key).reshape(-1)
        out = self.outs[key]
        if isinstance(out, np.ndarray) and out.flags.c_contiguous:
            return out.reshape(-1)
        return self.staging.setdefault(key, np.empty(size_of(key), np.float32))

    def finish(self):
        """Copy staged host values into outputs that live elsewhere (CuPy arrays, non-contiguous views)."""
        if self.device_group is not None:
            copy_into(self.device_group.flat, self.group.flat)
        for key, staged in self.staging.items():
            copy_into(self.outs[key], staged.reshape(self.outs[key].shape))


class PendingRequest:
    """Server requests behind one KVWorker request id, and where a pull's answers go."""

    def __init__(self, parts, outs=None):
        self.parts = parts  # [(server rank, postoffice rid, pieces)]
        self.outs = outs


def group_of(keys, values):
    """``values`` when it is a ParameterGroup laid out under exactly ``keys``; else None."""
    if isinstance(values, ParameterGroup) and list(values.keys) == list(keys):
        return values
    return None

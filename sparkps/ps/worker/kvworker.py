"""KVWorker: non-blocking push / pull / pushpull of dense parameters, one request per server.

Every call sends its requests and returns a request id at once; ``wait(rid, timeout)`` blocks until every
server involved answered (filling the pull's output arrays) or raises an error naming the server. Keys and
their shapes are declared once (``declare``); a request for server ``s`` carries the pieces of the keys that
``s`` holds, concatenated in sorted key order (see :mod:`sparkps.ps.layout`).

In sync mode each push is numbered (its *round*); a pull asks each server for the round this worker last
pushed to it, so it returns the weights after that round was applied by every worker.

>>> # worker = KVWorker(postoffice, sync=True)
>>> # worker.declare({0: (3, 2)}); rid = worker.push([0], [grad]); worker.wait(rid, timeout=60)
"""
import itertools
import threading
import time

import numpy as np

from sparkps.errors import ConfigError, ShapeError
from sparkps.ps.comm.buffers import BufferPool
from sparkps.ps.layout import KeyLayout, check_key

COMPRESSIONS = {None: None, "none": None, "fp16": np.float16}


def compression_dtype(compression):
    """The dtype pushed gradients travel as, from ``{'type': 'fp16'}`` / ``'fp16'`` / None."""
    kind = compression.get("type") if isinstance(compression, dict) else compression
    if isinstance(compression, dict) and set(compression) - {"type"}:
        raise ConfigError("unknown compression option(s) %s" % sorted(set(compression) - {"type"}))
    if kind not in COMPRESSIONS:
        raise ConfigError("unknown gradient compression %r (known: 'fp16', None)" % (kind,))
    return COMPRESSIONS[kind]


def as_host_array(value):
    """``value`` (numpy, CuPy or a list of per-device arrays, summed) as a numpy array."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise ConfigError("an empty list of arrays was given as one kvstore value")
        arrays = [as_host_array(v) for v in value]
        return arrays[0] if len(arrays) == 1 else np.sum(arrays, axis=0)
    if hasattr(value, "get") and not isinstance(value, np.ndarray):
        value = value.get()
    return np.asarray(value)


def contiguous_span(parts):
    """One view covering the flat arrays ``parts`` when they lie end to end, in order, in one buffer
    (parameters and gradients bound by ``simple_bind`` do); None otherwise."""
    if len(parts) == 1:
        return parts[0]
    owner = parts[0].base
    if type(owner) is not np.ndarray or owner.ndim != 1 or not owner.flags.c_contiguous:
        return None
    base, itemsize = owner.__array_interface__["data"][0], owner.itemsize
    start = position = (parts[0].__array_interface__["data"][0] - base) // itemsize
    for part in parts:
        if (part.base is not owner or part.dtype != owner.dtype
                or part.__array_interface__["data"][0] != base + position * itemsize):
            return None
        position += part.size
    return owner[start:position]


class Staged:
    """A push whose gradients were already copied into one payload per server (``KVWorker.stage``)."""

    def __init__(self, keys, payloads):
        self.keys = keys          # sorted keys
        self.payloads = payloads  # {server rank: flat array in that server's piece order}


class _Request:
    """Server requests behind one KVWorker request id, and where a pull's answers go."""

    def __init__(self, parts, outs=None):
        self.parts = parts  # [(server rank, postoffice rid, pieces)]
        self.outs = outs


class KVWorker:
    """The worker side of the parameter server for one node. Thread-safe for concurrent requests.

    ``push``/``pull``/``pushpull``/``init``/``command``/``leave`` never block; ``wait`` blocks at most
    ``timeout`` seconds (default ``postoffice.timeouts.request``).
    """

    def __init__(self, postoffice, sync=False, compression=None, timeout=None):
        self.postoffice = postoffice
        self.sync = bool(sync)
        self.push_dtype = compression_dtype(compression) or np.float32
        self.timeout = timeout
        self.layout = KeyLayout(postoffice.num_servers)
        self.round = 0
        self._last_round = {}
        self._requests = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._buffers = BufferPool()
        self._zero_copy = getattr(postoffice, "transport", "tcp") != "inproc"

    # ---- keys -----------------------------------------------------------------------------------
    def declare(self, shapes):
        """Register ``{key: shape}`` as one group of the layout (every worker declares the same)."""
        self.layout.add(shapes)

    def _flat_values(self, keys, values):
        """Check ``keys``/``values`` and return ``{key: flat float32 view or copy}``."""
        if len(keys) != len(values):
            raise ConfigError("%d kvstore keys but %d values" % (len(keys), len(values)))
        shapes, flat = self.layout.shapes, {}
        for key, value in zip(keys, values):
            if type(key) is not int or key not in shapes:  # the checks below name what is wrong
                key = check_key(key)
                self.layout.check_known([key])
            if key in flat:
                raise ConfigError("kvstore key %d appears twice in one call" % key)
            array = value if type(value) is np.ndarray else as_host_array(value)
            if array.shape != shapes[key]:
                raise ShapeError("kvstore key %d has shape %s, the value given has shape %s"
                                 % (key, shapes[key], tuple(array.shape)))
            if array.dtype != np.float32 or not array.flags.c_contiguous:
                array = np.ascontiguousarray(array, dtype=np.float32)
            flat[key] = array.reshape(-1)
        return flat

    def stage(self, keys, values):
        """Check gradients and copy them now into one payload per server (for ``push_staged``).

        Returns a :class:`Staged` push; ``values`` may change as soon as this returns.
        """
        flat = self._flat_values(keys, values)
        keys = sorted(flat)
        payloads = {}
        for s in self.layout.servers_for(keys):
            pieces = self.layout.pieces_on(s, keys)
            payloads[s] = self._buffers.take(sum(p.size for p in pieces), self.push_dtype)
            offset = 0
            for p in pieces:
                payloads[s][offset:offset + p.size] = flat[p.key][p.lo:p.hi]
                offset += p.size
        return Staged(keys, payloads)

    def _payload(self, pieces, flat, dtype=np.float32):
        """The values of ``pieces`` as one flat array: without a copy when they already lie end to end
        (not over inproc://, where the server would hold a view of the caller's memory)."""
        parts = [flat[p.key][p.lo:p.hi] for p in pieces]
        if len(parts) > 1:
            span = contiguous_span(parts) if self._zero_copy else None
            if span is not None and span.dtype == dtype:
                return span
            return np.concatenate(parts, dtype=dtype)
        return parts[0].astype(dtype, copy=False)

    # ---- requests -------------------------------------------------------------------------------
    def init(self, keys, values=None):
        """Send the initial ``values`` (zeros if None) of declared ``keys`` to their servers; returns a rid.

        One worker (rank 0) does this for every worker.
        """
        flat = self._flat_values(keys, values) if values is not None else None
        keys = sorted(flat) if flat is not None else self.layout.check_known(keys)
        payloads = None
        if flat is not None:
            payloads = {s: self._payload(self.layout.pieces_on(s, keys), flat) for s in self.layout.servers_for(keys)}
        return self._send("INIT", keys, payloads,
                          meta_of=lambda s: dict(self.layout.to_meta(s, keys), sync=self.sync))

    def push(self, keys, values, copy=True):
        """Send gradients of ``keys`` (summed over workers on the servers); returns a request id.

        With ``copy=False`` the values may travel without a copy: leave them unchanged until ``wait``.
        """
        if copy:
            return self.push_staged(self.stage(keys, values))
        flat = self._flat_values(keys, values)
        keys = sorted(flat)
        return self._send("PUSH", keys, self._payloads(keys, flat), new_round=self.sync)

    def push_staged(self, staged):
        """Send a push prepared by ``stage``; returns a request id."""
        return self._send("PUSH", staged.keys, staged.payloads, new_round=self.sync)

    def pull(self, keys, outs):
        """Ask for the weights of ``keys``; ``wait`` fills ``outs`` in place. Returns a request id."""
        keys = [check_key(k) for k in keys]
        return self._send("PULL", self._out_keys(keys, outs), None, outs=dict(zip(keys, outs)))

    def pushpull(self, keys, values, outs):
        """Push ``values`` and pull the resulting weights into ``outs`` in one request per server.

        The values travel without a copy: leave them unchanged until ``wait`` returned.
        """
        flat = self._flat_values(keys, values)
        self._out_keys(list(flat), outs)
        keys = sorted(flat)
        return self._send("PUSHPULL", keys, self._payloads(keys, flat), new_round=self.sync,
                          outs=dict(zip(flat, outs)))

    def pushpull_staged(self, staged, outs):
        """Send a push prepared by ``stage`` and pull the weights of its keys into ``outs`` (``{key: array}``)."""
        self._out_keys(list(outs), list(outs.values()))
        if sorted(outs) != staged.keys:
            raise ConfigError("a pushpull must pull the keys it pushes (%s), got %s" % (staged.keys, sorted(outs)))
        return self._send("PUSHPULL", staged.keys, staged.payloads, new_round=self.sync, outs=dict(outs))

    def _payloads(self, keys, flat):
        return {s: self._payload(self.layout.pieces_on(s, keys), flat, self.push_dtype)
                for s in self.layout.servers_for(keys)}

    def command(self, cmd, meta, servers=None, meta_of=None):
        """Send ``cmd`` with ``meta`` (or ``meta_of(server)``) to ``servers`` (ranks, default all); returns a
        request id."""
        servers = range(self.postoffice.num_servers) if servers is None else servers
        return self._send(cmd, None, None, servers=list(servers), meta_of=meta_of or (lambda s: dict(meta)))

    def rows(self, cmd, table, arrays, new_round=False):
        """Send ``cmd`` (PULL or PUSH) for rows of sparse ``table`` to each server in ``arrays`` ({server rank:
        [uint64 ids] or [ids, float32 grads]}); ``wait`` returns the replies in server order. Returns a rid."""
        return self._send(cmd, None, arrays, new_round=new_round, servers=sorted(arrays),
                          meta_of=lambda s: {"keys": [], "rows": True, "table": table})

    def _out_keys(self, keys, outs):
        if len(keys) != len(outs):
            raise ConfigError("%d kvstore keys but %d output arrays" % (len(keys), len(outs)))
        for key, out in zip(keys, outs):
            self.layout.check_known([key])
            if tuple(out.shape) != self.layout.shapes[key]:
                raise ShapeError("kvstore key %d has shape %s, the output array has shape %s"
                                 % (key, self.layout.shapes[key], tuple(out.shape)))
        if len(set(keys)) != len(keys):
            raise ConfigError("a kvstore key appears twice in one pull")
        return sorted(keys)

    def _send(self, cmd, keys, payloads, new_round=False, outs=None, servers=None, meta_of=None):
        """One request per server; ``payloads`` ({server: array} or None) are sent without a copy."""
        with self._lock:
            if servers is None:
                servers = self.layout.servers_for(keys)
            if new_round:
                self.round += 1
            parts = []
            for s in servers:
                pieces = self.layout.pieces_on(s, keys) if keys is not None and outs is not None else None
                meta = meta_of(s) if meta_of else {"keys": keys}
                if new_round:
                    self._last_round[s] = self.round
                if self.sync and cmd in ("PUSH", "PULL", "PUSHPULL"):
                    meta["round"] = self._last_round.get(s, 0)
                payload = payloads[s] if payloads is not None else []
                arrays = list(payload) if isinstance(payload, list) else [payload]
                rid = self.postoffice.request(self.postoffice.server_ids[s], cmd, meta, arrays)
                parts.append((s, rid, pieces))
            rid = next(self._ids)
            self._requests[rid] = _Request(parts, outs)
            return rid

    # ---- completion -----------------------------------------------------------------------------
    def wait(self, rid, timeout=None):
        """Block until every server answered request ``rid``; returns the replies (Messages).

        Fills a pull's output arrays. Raises PeerTimeout / RemoteError / NodeDied naming the server;
        waits at most ``timeout`` s in all (default: the postoffice's request timeout).
        """
        with self._lock:
            request = self._requests.pop(rid)
        timeout = timeout or self.timeout or self.postoffice.timeouts.request
        deadline = time.monotonic() + timeout
        replies = []
        try:
            for index, (_, server_rid, pieces) in enumerate(request.parts):
                reply = self.postoffice.wait(server_rid, max(deadline - time.monotonic(), 1e-3))
                if request.outs is not None:
                    self._scatter(pieces, reply, request.outs)
                replies.append(reply)
        except BaseException:
            for _, server_rid, _ in request.parts[index + 1:]:
                self.postoffice.discard(server_rid)
            raise
        if request.outs is not None:
            self._finish_outs(request.outs)
        return replies

    def _scatter(self, pieces, reply, outs):
        payload = reply.arrays[0].reshape(-1) if reply.arrays else np.zeros(0, np.float32)
        expected = sum(p.size for p in pieces)
        if payload.size != expected:
            raise ConfigError("server answered %d values for pieces of %d elements" % (payload.size, expected))
        targets = [self._host_view(outs, p.key)[p.lo:p.hi] for p in pieces]
        span = contiguous_span(targets) if len(targets) > 1 else None
        if span is not None:  # weights bound as one flat buffer: one copy
            span[...] = payload
            return
        offset = 0
        for target in targets:
            target[...] = payload[offset:offset + target.size]
            offset += target.size

    def _host_view(self, outs, key):
        out = outs[key]
        if isinstance(out, np.ndarray) and out.flags.c_contiguous:
            return out.reshape(-1)
        staged = outs.setdefault(("staged", key), np.empty(self.layout.size(key), np.float32))
        return staged

    def _finish_outs(self, outs):
        for name in [k for k in outs if isinstance(k, tuple)]:
            staged, out = outs.pop(name), outs[name[1]]
            staged = staged.reshape(out.shape)
            if isinstance(out, np.ndarray):
                out[...] = staged
            elif hasattr(out, "set"):
                out.set(staged.astype(out.dtype, copy=False))
            else:
                out[...] = staged

    def leave_meta(self):
        """Meta of a LEAVE: the last round this worker pushed."""
        return {"round": self.round}

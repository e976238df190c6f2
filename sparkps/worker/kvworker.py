"""KVWorker: non-blocking push / pull / pushpull of dense parameters, one request per server.

Every call sends its requests and returns a request id at once; ``wait(rid, timeout)`` blocks until every
server involved answered (filling the pull's output arrays) or raises an error naming the server. Keys and
their shapes are declared once (``declare``); a request for server ``s`` carries the pieces of the keys that
``s`` holds, concatenated in sorted key order (see :mod:`sparkps.comm.layout`); requests are the classes of
:mod:`sparkps.comm.protocol`.

Values and outputs are lists of arrays, or a :class:`~sparkps.param_group.ParameterGroup` (as ``simple_bind``
lays parameters and gradients out): then a server's share is one slice of the group's flat buffer, sent or
filled without assembling it piece by piece.

In sync mode each push is numbered (its *round*); a pull asks each server for the round this worker last
pushed to it, so it returns the weights after that round was applied by every worker. ``rounds="server"``
(``dist_sync_replicas``) tags a push with the round after the one its weights came from (a pull's reply names
it), so a worker whose push was stale continues from the server's current round. Every request goes through
``_send``, which numbers the rounds and passes the dense gradient of a push, a pushpull or a step through the codec
(:mod:`sparkps.comm.codec`); ``bytes_pushed`` and ``stale_pushes`` count what was sent and dropped;
``counters()`` the steps (``step`` / ``pushpull`` calls), the requests they sent and every request by command.

>>> # worker = KVWorker(postoffice, sync=True)
>>> # worker.declare({0: (3, 2)}); rid = worker.push([0], [grad]); worker.wait(rid, timeout=60)
"""
import collections
import itertools
import threading
import time

import numpy as np

from sparkps.comm import protocol
from sparkps.comm.codec import create_codec
from sparkps.comm.layout import KeyLayout, check_key
from sparkps.comm.message import BufferPool
from sparkps.errors import ConfigError, ShapeError
from sparkps.worker.payloads import Outputs, PendingRequest, Staged, Values, group_of, host_value, piece_ranges

ROUND_MODES = (None, "own", "server")


class KVWorker:
    """The worker side of the parameter server for one node. Thread-safe for concurrent requests.

    ``push``/``pull``/``pushpull``/``init``/``command`` never block; ``wait`` blocks at most ``timeout``
    seconds (default ``postoffice.timeouts.request``).
    """

    def __init__(self, postoffice, sync=False, compression=None, timeout=None, rounds=None, policy=None):
        self.postoffice = postoffice
        self.sync = bool(sync)
        self.rounds = ("own" if self.sync else None) if rounds is None and policy is None else rounds
        if self.rounds not in ROUND_MODES:
            raise ConfigError("KVWorker rounds must be one of %s, got %r" % (ROUND_MODES, rounds))
        self.policy = policy  # sent with INIT: the servers' round policy and its options
        self.codec = create_codec(compression)
        self.push_dtype = self.codec.dtype
        self.bytes_pushed = self.pushes = self.stale_pushes = 0
        self.steps = self.step_requests = 0   # step / pushpull calls, and the requests (one per server) they sent
        self.sent = collections.Counter()     # requests sent, by command
        self.timeout = timeout
        self.layout = KeyLayout(postoffice.num_servers)
        self.round = 0
        self._last_round = {}
        self._server_round = {}  # rounds="server": the round the last pulled weights of each server are of
        self._requests = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._buffers = BufferPool()
        self._zero_copy = postoffice.transport != "inproc"

    # ---- keys -----------------------------------------------------------------------------------
    def declare(self, shapes):
        """Register ``{key: shape}`` as one group of the layout (every worker declares the same)."""
        self.layout.add(shapes)

    def _values(self, keys, values):
        """Check ``keys``/``values``; returns their :class:`Values` (flat float32 host views or copies)."""
        if len(keys) != len(values):
            raise ConfigError("%d kvstore keys but %d values" % (len(keys), len(values)))
        group = group_of(keys, values)
        if group is not None:
            group = group.on_host()
            if group.flat.dtype != np.float32:
                group = None
            else:
                values = group
        shapes, flat = self.layout.shapes, {}
        for key, value in zip(keys, values):
            if type(key) is not int or key not in shapes:  # the checks below name what is wrong
                key = check_key(key)
                self.layout.check_known([key])
            if key in flat:
                raise ConfigError("kvstore key %d appears twice in one call" % key)
            array = value if type(value) is np.ndarray else host_value(value)
            if array.shape != shapes[key]:
                raise ShapeError("kvstore key %d has shape %s, the value given has shape %s"
                                 % (key, shapes[key], tuple(array.shape)))
            if array.dtype != np.float32 or not array.flags.c_contiguous:
                array = np.ascontiguousarray(array, dtype=np.float32)
            flat[key] = array.reshape(-1)
        return Values(flat, group)

    def stage(self, keys, values):
        """Check gradients and copy them now into one payload per server (for ``push_staged``).

        Returns a :class:`Staged` push; ``values`` may change as soon as this returns.
        """
        checked = self._values(keys, values)
        keys = sorted(checked.flat)
        payloads = {}
        for s in self.layout.servers_for(keys):
            pieces = self.layout.pieces_on(s, keys)
            payloads[s] = self._buffers.take(sum(p.size for p in pieces), self.push_dtype)
            span = checked.group.span(piece_ranges(pieces)) if checked.group is not None else None
            if span is not None:
                payloads[s][:] = span
                continue
            offset = 0
            for p in pieces:
                payloads[s][offset:offset + p.size] = checked.flat[p.key][p.lo:p.hi]
                offset += p.size
        return Staged(keys, payloads)

    def _payloads(self, keys, checked, dtype):
        return {s: checked.payload(self.layout.pieces_on(s, keys), dtype, self._zero_copy)
                for s in self.layout.servers_for(keys)}

    # ---- requests -------------------------------------------------------------------------------
    def init(self, keys, values=None):
        """Send the initial ``values`` (zeros if None) of declared ``keys`` to their servers; returns a rid.

        One worker (rank 0) does this for every worker.
        """
        checked = self._values(keys, values) if values is not None else None
        keys = sorted(checked.flat) if checked is not None else self.layout.check_known(keys)
        payloads = self._payloads(keys, checked, np.float32) if checked is not None else None

        def meta_of(server):
            meta = self.layout.to_meta(server, keys)
            return protocol.Init(meta["pieces"], meta["shapes"], sync=self.sync, policy=self.policy).meta()
        return self._send("INIT", keys, payloads, meta_of=meta_of)

    def relay(self, keys, values):
        """Send the ``values`` of ``keys``, just re-laid by ``layout.lay_whole``, to every server: each holds its
        new pieces of them and drops its old ones (a relay INIT). Returns a rid; one worker (rank 0) sends it."""
        checked = self._values(keys, values)
        keys = sorted(checked.flat)
        shapes = [[k, list(self.layout.shapes[k])] for k in keys]
        payloads = {s: checked.payload(self.layout.pieces_on(s, keys), np.float32, self._zero_copy)
                    if self.layout.pieces_on(s, keys) else np.zeros(0, np.float32)
                    for s in range(self.layout.num_servers)}

        def meta_of(server):
            pieces = [[p.key, p.lo, p.hi] for p in self.layout.pieces_on(server, keys)]
            return protocol.Init(pieces, shapes, relay=True).meta()
        return self._send("INIT", keys, payloads, servers=list(range(self.layout.num_servers)), meta_of=meta_of)

    def push(self, keys, values, copy=True):
        """Send gradients of ``keys`` (summed over workers on the servers); returns a request id.

        With ``copy=False`` the values may travel without a copy: leave them unchanged until ``wait``.
        """
        if copy:
            return self.push_staged(self.stage(keys, values))
        checked = self._values(keys, values)
        keys = sorted(checked.flat)
        return self._send("PUSH", keys, self._payloads(keys, checked, self.push_dtype), new_round=bool(self.rounds))

    def push_staged(self, staged):
        """Send a push prepared by ``stage``; returns a request id."""
        return self._send("PUSH", staged.keys, staged.payloads, new_round=bool(self.rounds))

    def pull(self, keys, outs):
        """Ask for the weights of ``keys``; ``wait`` fills ``outs`` (arrays or a ParameterGroup) in place.

        Returns a request id.
        """
        keys = [check_key(k) for k in keys]
        return self._send("PULL", self._out_keys(keys, outs), None,
                          outs=Outputs(dict(zip(keys, outs)), group_of(keys, outs)))

    def pushpull(self, keys, values, outs):
        """Push ``values`` and pull the resulting weights into ``outs`` in one request per server.

        The values travel without a copy: leave them unchanged until ``wait`` returned.
        """
        checked = self._values(keys, values)
        self._out_keys(list(checked.flat), outs)
        keys = sorted(checked.flat)
        return self._send("PUSHPULL", keys, self._payloads(keys, checked, self.push_dtype), new_round=bool(self.rounds),
                          outs=Outputs(dict(zip(checked.flat, outs)), group_of(list(checked.flat), outs)))

    def pushpull_staged(self, staged, keys, outs):
        """Send a push prepared by ``stage`` and pull the weights of its ``keys`` into ``outs`` (arrays or a
        ParameterGroup, in the order of ``keys``)."""
        self._out_keys(list(keys), outs)
        if sorted(keys) != staged.keys:
            raise ConfigError("a pushpull must pull the keys it pushes (%s), got %s" % (staged.keys, sorted(keys)))
        return self._send("PUSHPULL", staged.keys, staged.payloads, new_round=bool(self.rounds),
                          outs=Outputs(dict(zip(keys, outs)), group_of(keys, outs)))

    def command(self, request, servers=None):
        """Send the protocol ``request`` (SetOptimizer, Command, Leave) to ``servers`` (ranks, default all);
        returns a request id."""
        servers = range(self.postoffice.num_servers) if servers is None else servers
        return self._send(protocol.command_of(request), None, None, servers=list(servers),
                          meta_of=lambda s: request.meta())

    def init_table(self, table, kind, options_of):
        """INIT table ``table`` of ``kind`` on every server, server ``s`` with ``options_of(s)``; returns a rid."""
        return self._send("INIT", None, None, servers=list(range(self.postoffice.num_servers)),
                          meta_of=lambda s: protocol.Init([], [], sync=self.sync, table=table, kind=kind,
                                                          options=options_of(s)).meta())

    def rows(self, cmd, table, arrays, new_round=False, peek=False):
        """Send ``cmd`` (PULL or PUSH) for rows of sparse ``table`` to each server in ``arrays`` ({server rank:
        [uint64 ids], [ids, uint32 counts] (a counted pull) or [ids, float32 grads]}); ``peek``: a PULL that
        neither counts nor stores rows. ``wait`` returns the replies in server order. Returns a rid."""
        def meta_of(s):
            round_ = self._last_round.get(s, 0) if self.rounds else None
            if cmd == "PULL":
                counts = arrays[s][1] if len(arrays[s]) > 1 else None
                return protocol.Pull([], round_, table, ids=arrays[s][0], counts=counts, peek=peek).meta()
            return protocol.Push([], round_, table, ids=arrays[s][0]).meta()
        return self._send(cmd, None, arrays, new_round=new_round, servers=sorted(arrays), meta_of=meta_of)

    def step(self, staged, keys, outs, tables):
        """One PUSHPULL per server carrying a whole step: the dense push ``staged`` (from ``stage``, or None),
        the pull of the dense ``keys`` into ``outs`` and ``tables`` ({server rank: [TableStep]}) of row pushes
        and pulls; in sync mode one new round on every server. The dense gradient goes through the codec as a
        push's does. ``wait`` returns the replies in server order (arrays after the first: the rows of each table
        that pulls). Returns a rid."""
        given = [check_key(k) for k in keys]
        keys = self._out_keys(given, outs)
        if staged is not None and staged.keys != keys:
            raise ConfigError("a step must pull the keys it pushes (%s), got %s" % (staged.keys, keys))
        holders = set(self.layout.servers_for(keys)) if keys else set()
        servers = [s for s in range(self.postoffice.num_servers) if self.sync or s in holders or s in tables]
        empty = np.zeros(0, self.push_dtype)
        payloads = {s: [staged.payloads[s] if staged is not None and s in holders else empty]
                    + [a for part in tables.get(s, ()) for a in part.arrays()] for s in servers}

        def meta_of(s):
            return protocol.PushPull(keys if s in holders else [], self._last_round.get(s, 0) if self.rounds else None,
                                     tables=tuple(tables.get(s, ()))).meta()
        return self._send("PUSHPULL", keys, payloads, new_round=bool(self.rounds), servers=servers, meta_of=meta_of,
                          outs=Outputs(dict(zip(given, outs)), group_of(given, outs)))

    def counters(self):
        """``{'steps', 'step_requests', 'sent': {command: n}}`` of this worker so far (plain JSON values): a step is
        one ``step``/``pushpull`` call, its requests one per server it reached. Never blocks."""
        with self._lock:
            return {"steps": self.steps, "step_requests": self.step_requests, "sent": dict(self.sent)}

    def leave(self):
        """LEAVE every server's sync rounds (this worker pushes no more); returns a request id."""
        return self.command(protocol.Leave(self.round))

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
        """Send one request per server: the one place requests are numbered and gradients encoded.

        ``keys``: the dense keys of the request (None for rows and commands); ``payloads``: {server: array or
        [arrays]} (sent without a copy) or None; ``new_round``: number a new round (sync) on each server;
        ``meta_of(server)``: the request's header (default a Push of ``keys``), built after the round is numbered.
        The first array of a PUSH or PUSHPULL of dense keys is their gradient: it goes through the codec
        (``bytes_pushed`` counts what it sent). Never blocks.
        """
        with self._lock:
            if servers is None:
                servers = self.layout.servers_for(keys)
            if new_round:
                self.round += 1
            parts = []
            for s in servers:
                pieces = self.layout.pieces_on(s, keys) if keys is not None and outs is not None else None
                if new_round:
                    self._last_round[s] = self._next_round(s)
                if meta_of is not None:
                    meta = meta_of(s)
                else:
                    meta = protocol.Push(keys, self._last_round.get(s, 0) if self.rounds else None).meta()
                payload = payloads[s] if payloads is not None else []
                arrays = list(payload) if isinstance(payload, list) else [payload]
                if keys is not None and cmd in ("PUSH", "PUSHPULL") and arrays and arrays[0].size:
                    arrays = self._encode(s, keys, arrays, meta)
                rid = self.postoffice.request(self.postoffice.server_ids[s], cmd, meta, arrays)
                parts.append((s, rid, pieces))
            if cmd in ("PUSH", "PUSHPULL"):
                self.pushes += 1
            if cmd == "PUSHPULL":
                self.steps += 1
                self.step_requests += len(parts)
            self.sent[cmd] += len(parts)
            rid = next(self._ids)
            self._requests[rid] = PendingRequest(parts, outs)
            return rid

    def _encode(self, server, keys, arrays, meta):
        """``arrays`` with their first (the dense gradient of ``keys`` for ``server``) encoded by the codec; the
        codec's header goes into ``meta``. Error feedback keeps one residual per (server, keys)."""
        encoded, header = self.codec.encode(arrays[0], slot=(server, tuple(keys)))
        if header is not None:
            meta["codec"] = header
        self.bytes_pushed += sum(a.nbytes for a in encoded)
        return encoded + arrays[1:]

    def _next_round(self, server):
        """The round a new push to ``server`` is tagged with."""
        if self.rounds == "server":
            return max(self._last_round.get(server, 0), self._server_round.get(server, 0)) + 1
        return self.round

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
            for server, server_rid, pieces in request.parts:
                reply = self.postoffice.wait(server_rid, max(deadline - time.monotonic(), 1e-3))
                if request.outs is not None:
                    self._scatter(pieces, reply, request.outs)
                if isinstance(reply.meta.get("round"), int):
                    self._server_round[server] = max(self._server_round.get(server, 0), reply.meta["round"])
                replies.append(reply)
        except BaseException:  # the part that failed is parts[len(replies)]: discard the ones after it
            for _, server_rid, _ in request.parts[len(replies) + 1:]:
                self.postoffice.discard(server_rid)
            raise
        if request.outs is not None:
            request.outs.finish()
        if any(r.meta.get("stale") for r in replies):
            self.stale_pushes += 1
        return replies

    def _scatter(self, pieces, reply, outs):
        if not pieces and not (reply.arrays and reply.arrays[0].size):
            return  # a step to a server holding no dense piece
        payload = reply.arrays[0].reshape(-1) if reply.arrays else np.zeros(0, np.float32)
        expected = sum(p.size for p in pieces)
        if payload.size != expected:
            raise ConfigError("server answered %d values for pieces of %d elements" % (payload.size, expected))
        outs.scatter(pieces, payload, self.layout.size)

"""A node's messaging above the Van: the Postoffice, its Endpoint and the Customer that tracks its requests.

The Postoffice of a server or worker node: registration, node table, requests, barriers, heartbeats. One per node,
passed around explicitly (no singleton): a whole cluster can live in one process.

>>> po = Postoffice('worker', sched.uri, sched.secret)          # doctest: +SKIP
>>> po.start()                                                   # blocks until every node registered
>>> rid = po.request(po.server_ids[0], 'PULL', meta={'keys': [0]})
>>> po.wait(rid).arrays

The Endpoint: one node's Van, Customer and the thread that runs the request handler. Shared by the Postoffice
(servers, workers) and the Scheduler. Requests received on the ROUTER are queued to a dispatcher thread that calls
``handler(msg, responder)``; replies complete the waiting request in the Customer directly on the I/O thread.

The Customer, request tracking: every request gets an id; its reply (or the node's failure) completes it.
Thread-safe. An entry lives from ``new_request`` until ``wait`` returns or raises, or until ``discard``; a reply to
an id nobody tracks (a late reply after a timeout) is dropped, so the tables stay bounded however long the node
runs.
"""
import functools
import itertools
import logging
import os
import queue
import threading
import time

from sparkps.comm import message as wire
from sparkps.comm.freshness import Freshness
from sparkps.comm.message import CurveKeys, MacKey, Sequencer
from sparkps.comm.timeouts import Timeouts
from sparkps.comm.van import Van
from sparkps.errors import ClusterError, ConfigError, NodeDied, PeerTimeout, RemoteError

log = logging.getLogger(__name__)
ROLES = ("server", "worker")
GROUPS = ("workers", "servers", "all")
SCHEDULER_NAME = "scheduler (node 0)"


def node_name(role, rank, node_id):
    """How errors name a node: 'server 0 (node 1)'."""
    return SCHEDULER_NAME if role == "scheduler" else "%s %s (node %s)" % (role, rank, node_id)


def _copy(error):
    """A fresh copy of the ClusterError ``error`` (many threads may raise the same failure at once)."""
    return type(error)(str(error), node=error.node)


class Postoffice:
    """A server or worker node of one job.

    ``handler(msg, responder)`` (given to ``start``) serves requests from other nodes on the node's
    handler thread; TERMINATE is handled here.  Thread-safe: any thread may request and wait.
    """

    def __init__(self, role, scheduler_uri, secret, rank=None, host="127.0.0.1", transport="tcp",
                 zmq_context=None, timeouts=None, curve=False, max_message_bytes=None):
        if role not in ROLES:
            raise ConfigError("role must be one of %s, got %r" % (", ".join(ROLES), role))
        if not scheduler_uri:
            raise ConfigError("a scheduler URI is required (give --scheduler or set SPARKPS_SCHEDULER_URI)")
        if rank is not None and (not isinstance(rank, int) or rank < 0):
            raise ConfigError("rank must be a non-negative integer, got %r" % (rank,))
        self.role, self.scheduler_uri, self.requested_rank = role, scheduler_uri, rank
        self.transport = transport
        self.timeouts = timeouts or Timeouts()
        self.node_id, self.rank, self.num_servers, self.num_workers = -1, None, 0, 0
        self.nodes = []
        self._peers = {}
        self._endpoint = Endpoint("%s (unregistered)" % role, secret, self._handle, transport, host, 0,
                                  zmq_context, CurveKeys(secret) if curve else None,
                                  max_message_bytes=max_message_bytes, hold_requests=True)
        self._handler = None
        self._done = threading.Event()
        self._failure = None
        self._terminated = self._finished = self._reported = self._stopped = False
        self._heartbeat = None
        self._lock = threading.Lock()

    @property
    def name(self):
        return node_name(self.role, self.rank, self.node_id) if self.node_id >= 0 else self._endpoint.name

    @property
    def address(self):
        """This node's bound ROUTER address."""
        return self._endpoint.address

    @property
    def server_ids(self):
        return [n["id"] for n in self.nodes if n["role"] == "server"]

    @property
    def worker_ids(self):
        return [n["id"] for n in self.nodes if n["role"] == "worker"]

    @property
    def max_message_bytes(self):
        """The per-frame size limit of this node's sockets (exclusive: a frame of this size is refused)."""
        return self._endpoint.van.max_message_bytes

    @property
    def dropped_messages(self):
        """How many received messages were dropped (bad secret or MAC, malformed frames, replays)."""
        return self._endpoint.van.dropped

    @property
    def refused_messages(self):
        """How many authenticated messages were refused as replayed, reordered or not from a registered session
        (counted in ``dropped_messages`` too); by reason in ``refused_reasons``."""
        return self._endpoint.van.freshness.replays

    @property
    def refused_reasons(self):
        return dict(self._endpoint.van.freshness.refused)

    @property
    def failure(self):
        """The ClusterError that ended this node, or None."""
        return self._failure

    def start(self, handler=None, threaded=False):
        """Bind, REGISTER with the scheduler, wait for the node table, start heartbeats.

        ``handler(msg, responder)`` runs inline on the I/O thread (it must not block or wait for
        replies); with ``threaded=True`` it runs on a thread of its own and may request and wait.

        Blocks until every node of the job registered, at most ``timeouts.register`` (+10 %) seconds;
        raises PeerTimeout (no answer: scheduler down or wrong secret) or ClusterError (refused).
        """
        self._handler = handler
        self._endpoint.threaded = threaded
        address = self._endpoint.start()
        meta = {"role": self.role, "rank": self.requested_rank, "address": address,
                "pid": os.getpid(), "host": os.uname().nodename}
        wait_s = self.timeouts.register * 1.1 + 1.0
        try:
            # first the job's id (a REGISTER without it registers nothing), then REGISTER bound to that job
            rid = self._endpoint.request(self.scheduler_uri, SCHEDULER_NAME, "REGISTER", meta)
            job = self._endpoint.wait(rid, wait_s).meta.get("job")
            if not isinstance(job, bytes) or not job:
                raise RemoteError("the scheduler at %s sent no job id" % self.scheduler_uri, node=SCHEDULER_NAME)
            self._endpoint.join(job)
            rid = self._endpoint.request(self.scheduler_uri, SCHEDULER_NAME, "REGISTER", meta)
            reply = self._endpoint.wait(rid, wait_s)
        except PeerTimeout:
            self._endpoint.stop()
            raise PeerTimeout("%s got no node table from the scheduler at %s within %g s (is the scheduler "
                              "running, and is the job secret the same?)" % (self.role, self.scheduler_uri, wait_s),
                              node=SCHEDULER_NAME) from None
        except RemoteError as exc:
            self._endpoint.stop()
            raise ClusterError("the scheduler refused %s: %s" % (self.role, exc), node=SCHEDULER_NAME) from None
        self._apply_table(reply.meta)
        self._endpoint.reply_hooks["HEARTBEAT"] = self._heartbeat_answered
        self._heartbeat = threading.Thread(target=self._heartbeat_loop, daemon=True,
                                           name="sparkps-heartbeat-%s" % self.name)
        self._heartbeat.start()
        return self

    def _apply_table(self, meta):
        self.node_id, self.rank = meta["node_id"], meta["rank"]
        self.num_servers, self.num_workers = meta["num_servers"], meta["num_workers"]
        self.nodes = sorted(meta["nodes"], key=lambda n: n["id"])
        self._peers = {n["id"]: (n["address"], node_name(n["role"], n["rank"], n["id"])) for n in self.nodes}
        self._peers[0] = (self.scheduler_uri, SCHEDULER_NAME)
        self._endpoint.van.name = self.name
        self._endpoint.van.freshness.install({n["id"]: n["session"] for n in self.nodes if "session" in n},
                                             anonymous=False)
        self._endpoint.registered(self.node_id, self.name)

    def peer_name(self, node_id):
        """The readable name of node ``node_id`` ('worker 1 (node 4)')."""
        return self._peers[node_id][1] if node_id in self._peers else "node %s" % node_id

    def request(self, peer_id, cmd, meta=None, arrays=(), track=True):
        """Send ``cmd`` to node ``peer_id``; returns the request id to ``wait`` on.  Never blocks.

        ``arrays`` (numpy) travel without a copy: do not modify them until the reply arrived.
        With ``track=False`` the reply is dropped (fire and forget).  Raises the node's failure.
        """
        if self._failure is not None:
            raise _copy(self._failure)
        if peer_id not in self._peers:
            raise ClusterError("%s: no node %r in the node table" % (self.name, peer_id))
        address, peer = self._peers[peer_id]
        return self._endpoint.request(address, peer, cmd, meta, arrays, track)

    def wait(self, rid, timeout=None):
        """Block until the reply to ``rid`` arrives, at most ``timeout`` (default timeouts.request) s.

        Raises PeerTimeout naming the peer and request, RemoteError for an ERROR reply, NodeDied /
        ClusterError when the job failed meanwhile.  Received arrays are read-only views.
        """
        return self._endpoint.wait(rid, self.timeouts.request if timeout is None else timeout)

    def discard(self, rid):
        """Forget request ``rid`` without waiting for it."""
        self._endpoint.customer.discard(rid)

    def in_flight(self):
        """Number of requests tracked now (bounded: completed ones are forgotten)."""
        return self._endpoint.customer.in_flight()

    def barrier(self, group="workers", timeout=None):
        """Block until every (unfinished) node of ``group`` entered this barrier.

        Waits at most ``timeout`` (default timeouts.barrier) seconds, then raises PeerTimeout.
        """
        if group not in GROUPS:
            raise ConfigError("barrier group must be one of %s, got %r" % (", ".join(GROUPS), group))
        rid = self.request(0, "BARRIER", {"group": group})
        self.wait(rid, self.timeouts.barrier if timeout is None else timeout)

    def report_progress(self, progress):
        """Send this worker's progress (epoch, nbatch, samples, metrics) to the scheduler; never blocks."""
        if self._failure is None and self.node_id >= 0:
            self.request(0, "PROGRESS", {"progress": dict(progress)}, track=False)

    def report_error(self, text, timeout=5.0):
        """Tell the scheduler this node failed with ``text``: the job fails and every node stops.

        Waits at most ``timeout`` s for the acknowledgement; never raises.  Afterwards this node is
        failed too: its requests and waits raise NodeDied with ``text``.
        """
        self._reported = True
        try:
            self.wait(self.request(0, "REPORT_ERROR", {"error": str(text)}), timeout)
        except ClusterError as exc:
            log.warning("%s: could not report the error to the scheduler: %s", self.name, exc)
        self._fail(NodeDied("%s failed: %s" % (self.name, text), node=self.name))

    def finish(self, timeout=None):
        """Tell the scheduler this worker is done; when all are, servers are told to stop.

        Blocks until acknowledged, at most ``timeout`` (default timeouts.request) s.
        """
        self.wait(self.request(0, "FINISH"), timeout)
        self._finished = True

    def wait_for_termination(self, timeout=None):
        """Block until the scheduler ends the job (TERMINATE) or the job fails.

        Returns normally after an orderly TERMINATE; raises the failure (NodeDied, ...) otherwise, or
        PeerTimeout after ``timeout`` s (None: no limit; a dead scheduler is noticed by heartbeats).
        """
        if not self._done.wait(timeout):
            raise PeerTimeout("%s: the job did not end within %g s" % (self.name, timeout), node=SCHEDULER_NAME)
        if self._failure is not None:
            raise _copy(self._failure)

    def _handle(self, msg, responder):
        if msg.cmd == "TERMINATE":
            responder.reply()
            error = msg.meta.get("error")
            if error:
                self._fail(NodeDied(str(error), node=msg.meta.get("node")))
            else:
                self._terminated = True
                self._done.set()
        elif self._handler is None:
            responder.error("%s does not serve %s requests" % (self.name, msg.cmd))
        else:
            self._handler(msg, responder)

    def _fail(self, error):
        with self._lock:
            if self._failure is not None or self._terminated:
                return
            self._failure = error
        log.error("%s: %s", self.name, error)
        self._endpoint.fail(error)
        self._done.set()

    def _heartbeat_loop(self):
        """Send a heartbeat every interval (never waiting for it) on this thread's own channel, and read the answers
        there (``_heartbeat_answered``): a handler holding the I/O thread (a sparse table's first use loading its
        compiled index, a long checkpoint) does not silence the node.  No answer for heartbeat_timeout: the
        scheduler is dead."""
        interval, limit = self.timeouts.heartbeat_interval, self.timeouts.heartbeat_timeout
        self._last_answer = time.monotonic()
        while not self._read_answers(interval):
            silence = time.monotonic() - self._last_answer
            if silence > limit:
                if not (self._finished or self._stopped):
                    self._fail(NodeDied("the scheduler at %s did not answer heartbeats for %.1f s (heartbeat "
                                        "timeout %g s)" % (self.scheduler_uri, silence, limit), node=SCHEDULER_NAME))
                return
            if self._failure is not None:
                return
            try:
                self._endpoint.request(self.scheduler_uri, SCHEDULER_NAME, "HEARTBEAT", track=False)
            except ClusterError:
                return

    def _read_answers(self, seconds):
        """Read heartbeat answers on this thread's channel for ``seconds`` (in slices, so ``stop`` is prompt);
        True once the node is done."""
        deadline = time.monotonic() + seconds
        while not self._done.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            step = min(remaining, 0.1)
            if not self._endpoint.van.poll_own(step) and self._done.wait(step):
                return True
        return True

    def _heartbeat_answered(self, msg):
        self._last_answer = time.monotonic()
        if msg.cmd == "HEARTBEAT" and msg.meta.get("state") == "failed":
            self._fail(NodeDied(msg.meta.get("error") or "the job failed", node=msg.meta.get("node")))

    def stop(self, timeout=5.0):
        """Stop heartbeats, join threads, close sockets; idempotent.

        A node stopping before the job ended (no finish(), no TERMINATE, no failure) first reports
        that to the scheduler, so the rest of the job fails fast instead of waiting for heartbeats.
        """
        if self._stopped:
            return
        if (self.node_id >= 0 and not (self._finished or self._terminated or self._reported)
                and self._failure is None):
            self.report_error("%s stopped before the job finished" % self.name, timeout=min(timeout, 2.0))
        self._stopped = True
        self._done.set()
        self._endpoint.fail(ClusterError("%s is stopped" % self.name))
        if self._heartbeat is not None and self._heartbeat is not threading.current_thread():
            self._heartbeat.join(timeout)
        self._endpoint.stop(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


log = logging.getLogger(__name__)


class Responder:
    """Answers one received request, now or later, from any thread (exactly once)."""

    def __init__(self, endpoint, route, request):
        self._endpoint, self._route, self.request = endpoint, route, request
        self._lock = threading.Lock()
        self.answered = False

    @property
    def sender(self):
        """Node id of the requester (-1 when it has not registered)."""
        return self.request.sender

    def reply(self, meta=None, arrays=(), cmd=None):
        """Send the reply (non-blocking).  A second answer is ignored and logged."""
        self._answer(wire.Message(cmd or self.request.cmd, rid=self.request.rid, reply=True,
                                  meta=meta or {}, arrays=list(arrays)))

    def error(self, text):
        """Answer with an ERROR carrying ``text``; the requester's wait raises RemoteError."""
        self._answer(wire.Message("ERROR", rid=self.request.rid, reply=True, err=str(text)))

    def _answer(self, msg):
        with self._lock:
            if self.answered:
                log.warning("%s: request %d (%s) answered twice; second answer dropped",
                            self._endpoint.name, self.request.rid, self.request.cmd)
                return
            self.answered = True
        self._endpoint.send_reply(self._route, msg)


class Endpoint:
    """Van + Customer (+ optional handler thread) for one node.

    ``handler(msg, responder)`` runs inline on the I/O thread (lowest latency; it must not block or
    wait for replies) or, with ``threaded=True``, on a ``sparkps-handler`` thread of its own (it may
    then request and wait).  An exception it raises becomes an ERROR reply.  ``request`` never blocks;
    ``wait`` blocks at most ``timeout`` s.

    With ``hold_requests=True`` (servers and workers, whose node id comes with the node table) requests
    that arrive before ``registered`` are held, at most ``MAX_HELD``, and served in arrival order once
    the node knows its id: a peer that got the table first must not get a reply signed as node -1.
    """

    MAX_HELD = 4096

    def __init__(self, name, secret, handler=None, transport="tcp", host="127.0.0.1", port=0,
                 zmq_context=None, curve=None, threaded=False, max_message_bytes=None, strict=False,
                 hold_requests=False):
        self.name, self.handler, self.node_id, self.threaded = name, handler, -1, threaded
        self.job = b""   # the job's id, stamped on every message once known (``join``)
        self._holding, self._held, self._hold_lock = hold_requests, [], threading.Lock()
        self._key = MacKey(secret)
        self.sequencer = Sequencer()
        self.customer = Customer()
        self.van = Van(self._key, self._received_request, self._received_reply, transport, host, port,
                       zmq_context, curve, name, max_message_bytes, Freshness(strict=strict))
        self.reply_hooks = {}  # cmd -> callback(msg) for untracked replies (heartbeats)
        self._inbox = queue.SimpleQueue()
        self._thread = None
        self._stopped = False

    @property
    def address(self):
        """The bound address of this node's ROUTER."""
        return self.van.address

    def start(self):
        """Bind and start the I/O and handler threads; returns the bound address."""
        address = self.van.start()
        if self.threaded:
            self._thread = threading.Thread(target=self._dispatch, name="sparkps-handler-%s" % self.name,
                                            daemon=True)
            self._thread.start()
        return address

    def request(self, address, peer, cmd, meta=None, arrays=(), track=True):
        """Send a request to the node at ``address`` (named ``peer`` in errors); returns its id.

        With ``track=False`` nobody waits and the reply is dropped on arrival.  Requests go out on the
        calling thread's own channel (its waiter then polls for the reply itself), or, when called on the I/O
        thread, on the Van's own DEALER (replies handled there): ``Van.send`` decides.
        """
        rid = self.customer.new_request(peer, cmd) if track else self.customer.next_id()
        msg = wire.Message(cmd, self.node_id, rid, False, meta or {}, list(arrays), None,
                           self.sequencer.session, self.sequencer.next(), self.job)
        try:
            frames = wire.encode(msg, self._key)
        except BaseException:
            self.customer.discard(rid)
            raise
        channel = self.van.send(address, frames)
        if track and channel is not None:
            self.customer.attach(rid, channel)
        return rid

    def wait(self, rid, timeout):
        """Block until the reply to ``rid`` (at most ``timeout`` s); see Customer.wait."""
        if self.van.on_io_thread:
            self.customer.discard(rid)
            raise ClusterError("%s: a handler running on the I/O thread cannot wait for a reply (it would "
                               "never arrive); start the node with threaded=True" % self.name)
        channel = self.customer.channel_of(rid)
        pump = None if channel is None else functools.partial(self.van.pump, channel)
        return self.customer.wait(rid, timeout, pump)

    def send_reply(self, route, msg):
        msg.sender, msg.session, msg.seq, msg.job = (self.node_id, self.sequencer.session, self.sequencer.next(),
                                                     self.job)
        try:
            frames = wire.encode(msg, self._key)
        except Exception as exc:
            log.warning("%s: reply to %s cannot be encoded: %s", self.name, msg.cmd, exc)
            frames = wire.encode(wire.Message("ERROR", self.node_id, msg.rid, True,
                                              err="reply cannot be encoded: %s" % exc, session=msg.session,
                                              seq=self.sequencer.next(), job=self.job), self._key)
        self.van.send_reply(route, frames)

    def fail(self, error):
        """Wake every present and future wait with ``error``."""
        self.customer.fail_all(error)

    def join(self, job):
        """Stamp ``job`` (the job's id) on every message from now on and refuse messages of any other job."""
        self.job = self.van.freshness.job = bytes(job)

    def registered(self, node_id, name):
        """This node's id and name are known: serve the requests held until now (never blocks)."""
        with self._hold_lock:
            self.node_id, self.name = node_id, name
            self._holding = False
        self.van.call_soon(self._release_held)

    def _release_held(self):
        with self._hold_lock:
            held, self._held = self._held, []
        for msg, route in held:
            if self.van.freshness.admit_job(msg.job, msg.cmd, msg.reply) is not None:
                self.van.dropped += 1    # held before the node knew its job: of another one
                continue
            self._accept(msg, route)

    def _received_request(self, msg, route):
        if msg.reply:
            log.warning("%s: dropped a reply (%s) that arrived as a request", self.name, msg.cmd)
            return
        with self._hold_lock:
            if self._holding:
                if len(self._held) < self.MAX_HELD:
                    self._held.append((msg, route))
                else:
                    log.warning("%s: dropped %s from node %d: too many requests before registration",
                                self.name, msg.cmd, msg.sender)
                return
        if self._held:  # released but not served yet: keep the arrival order
            self._release_held()
        self._accept(msg, route)

    def _accept(self, msg, route):
        if self.threaded:
            self._inbox.put((msg, route))
        else:
            self._serve(msg, route)

    def _received_reply(self, msg):
        if not msg.reply:
            log.warning("%s: dropped a request (%s) that arrived as a reply", self.name, msg.cmd)
            return
        if not self.customer.complete(msg.rid, msg) and msg.cmd in self.reply_hooks:
            self.reply_hooks[msg.cmd](msg)

    def _dispatch(self):
        while True:
            item = self._inbox.get()
            if item is None:
                return
            self._serve(*item)

    def _serve(self, msg, route):
        responder = Responder(self, route, msg)
        try:
            if self.handler is None:
                raise RuntimeError("%s does not serve %s requests" % (self.name, msg.cmd))
            self.handler(msg, responder)
        except Exception as exc:
            log.debug("%s: handler failed on %s", self.name, msg.cmd, exc_info=True)
            if not responder.answered:
                responder.error("%s failed on %s: %s: %s" % (self.name, msg.cmd, type(exc).__name__, exc))

    def stop(self, timeout=5.0):
        """End the handler thread, close the sockets; idempotent.  Waits at most ~2 × ``timeout``."""
        if self._stopped:
            return
        self._stopped = True
        if self._thread is not None:
            self._inbox.put(None)
            if self._thread is not threading.current_thread():
                self._thread.join(timeout)
        self.van.stop(timeout)


class _InFlight:
    """One request waiting for its reply: who it went to, and the reply or error once it came."""
    __slots__ = ("peer", "cmd", "event", "reply", "error", "channel")

    def __init__(self, peer, cmd):
        self.peer, self.cmd, self.channel = peer, cmd, None
        self.event = threading.Event()
        self.reply = self.error = None


class Customer:
    """Tracks the requests one node has in flight.

    >>> c = Customer()
    >>> rid = c.new_request("server 0 (node 1)", "PULL")
    >>> c.complete(rid, "reply")
    True
    >>> c.wait(rid, timeout=1.0)
    'reply'
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._pending = {}
        self._ids = itertools.count(1)
        self._failure = None

    def new_request(self, peer, cmd):
        """A fresh request id for a request ``cmd`` sent to ``peer`` (a readable name)."""
        with self._lock:
            rid = next(self._ids)
            entry = self._pending[rid] = _InFlight(peer, cmd)
            if self._failure is not None:
                entry.error = self._failure
                entry.event.set()
            return rid

    def next_id(self):
        """An id for a request whose reply nobody will wait for (its reply is dropped)."""
        with self._lock:
            return next(self._ids)

    def complete(self, rid, reply):
        """Hand ``reply`` to the waiter of ``rid``; False when nobody tracks that id (reply dropped)."""
        with self._lock:
            entry = self._pending.get(rid)
        if entry is None or entry.event.is_set():
            return False
        entry.reply = reply
        entry.event.set()
        return True

    def fail_all(self, error):
        """Wake every waiter (now and later) with ``error`` (a ClusterError): the node is going down."""
        with self._lock:
            if self._failure is None:
                self._failure = error
            entries = list(self._pending.values())
        for entry in entries:
            if not entry.event.is_set():
                entry.error = error
                entry.event.set()

    def attach(self, rid, channel):
        """Remember the channel ``rid`` went out on (its waiter polls it); see Endpoint.request."""
        with self._lock:
            entry = self._pending.get(rid)
        if entry is not None:
            entry.channel = channel

    def channel_of(self, rid):
        with self._lock:
            entry = self._pending.get(rid)
        return None if entry is None else entry.channel

    def wait(self, rid, timeout, pump=None):
        """Block until the reply to ``rid`` arrives, at most ``timeout`` seconds; returns the reply.

        ``pump(event, remaining)``, when given, is called until the reply's event is set or time ran
        out: it receives replies itself (a direct channel) instead of leaving that to the I/O thread.

        Raises PeerTimeout naming the peer and the request when time runs out, RemoteError when the
        peer answered with an ERROR, and the node's failure (NodeDied...) when the node went down.
        The entry is removed in every case.
        """
        with self._lock:
            entry = self._pending.get(rid)
        if entry is None:
            raise KeyError("request %r is not in flight (already waited for, discarded or never sent)" % rid)
        try:
            if not self._await(entry.event, timeout, pump):
                raise PeerTimeout("no reply from %s to %s (request %d) within %g s"
                                  % (entry.peer, entry.cmd, rid, timeout), node=entry.peer)
        finally:
            with self._lock:
                self._pending.pop(rid, None)
        if entry.error is not None:
            error = entry.error  # a fresh copy: many threads may raise the same failure at once
            raise type(error)(str(error), node=error.node) from None
        reply = entry.reply          # a Message: the event is set by ``complete`` when no error was set
        if reply.cmd == "ERROR":
            raise RemoteError("%s answered %s (request %d) with an error: %s"
                              % (entry.peer, entry.cmd, rid, reply.err), node=entry.peer)
        return reply

    @staticmethod
    def _await(event, timeout, pump):
        if pump is None:
            return event.wait(timeout)
        deadline = time.monotonic() + timeout
        while not event.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            pump(event, remaining)
        return True

    def discard(self, rid):
        """Stop tracking ``rid``; its reply, if it ever comes, is dropped."""
        with self._lock:
            self._pending.pop(rid, None)

    def in_flight(self):
        """How many requests are tracked now."""
        with self._lock:
            return len(self._pending)

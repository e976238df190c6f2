"""One node's messaging: a Van, a Customer and the thread that runs the request handler.

Shared by the Postoffice (servers, workers) and the Scheduler.  Requests received on the ROUTER are
queued to a dispatcher thread that calls ``handler(msg, responder)``; replies complete the waiting
request in the Customer directly on the I/O thread.
"""
import functools
import logging
import queue
import threading

from sparkps.comm import message as wire
from sparkps.comm.customer import Customer
from sparkps.comm.freshness import Freshness
from sparkps.comm.security import MacKey, Sequencer
from sparkps.comm.van import Van
from sparkps.errors import ClusterError

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

    def request(self, address, peer, cmd, meta=None, arrays=(), track=True, via_io=False):
        """Send a request to the node at ``address`` (named ``peer`` in errors); returns its id.

        With ``track=False`` nobody waits and the reply is dropped on arrival.  Requests go out on the
        calling thread's own channel (its waiter then polls for the reply itself), or through the I/O
        thread with ``via_io=True`` / when called on the I/O thread (replies handled there).
        """
        rid = self.customer.new_request(peer, cmd) if track else self.customer.next_id()
        msg = wire.Message(cmd, self.node_id, rid, False, meta or {}, list(arrays), None,
                           self.sequencer.session, self.sequencer.next(), self.job)
        try:
            frames = wire.encode(msg, self._key)
        except BaseException:
            self.customer.discard(rid)
            raise
        if via_io or self.van.on_io_thread:
            self.van.send_request(address, frames)
        else:
            channel = self.van.send_direct(address, frames)
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

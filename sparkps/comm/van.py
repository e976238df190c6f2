"""The ZeroMQ transport of one node: its Van (the sockets, the I/O thread) and the Channels of its sending threads.

One ROUTER is bound per node (``tcp://HOST:0``, ``ipc://`` or ``inproc://``); requests to a peer go out through a
DEALER connected to the peer's ROUTER and the reply comes back on that DEALER. ZeroMQ sockets are not thread-safe,
so a single I/O thread owns the ROUTER and its own DEALERs: other threads either put frames in its outbox and wake
it through a pipe, or send on a Channel of their own and poll it for the reply themselves (``send`` /
``pump``: no hand-over between threads). Every socket sets ``zmq.MAXMSGSIZE`` to one byte below the limit
(``settings.resolve_max_message_bytes``, exclusive): libzmq disconnects a peer announcing a frame of the limit or
larger before allocating it. Frames that do not decode, fail authentication, are not fresh or belong to another job
(``freshness``) are dropped and counted, with one warning per claimed sender and reason.

Channels: the DEALER sockets of one sending thread. A thread that sends a request on its own channel and then waits
for the reply polls the channel itself, so a request/reply costs no hand-over to the I/O thread. ZeroMQ sockets may
move between threads behind a full memory barrier, so every use of a channel's sockets happens under its lock:
whichever thread holds it (normally the owner) sends, polls and dispatches the replies it finds.
"""
import collections
import logging
import os
import tempfile
import threading
import uuid
import weakref

import zmq

from sparkps.comm import message as wire
from sparkps.comm.freshness import Freshness
from sparkps.comm.settings import resolve_max_message_bytes
from sparkps.errors import AuthError, ClusterError, ConfigError, MalformedMessage

log = logging.getLogger(__name__)
TRANSPORTS = ("tcp", "ipc", "inproc")
_POLL_MS = 500
_BURST = 256


def bind_address(transport, host="127.0.0.1", port=0):
    """The address a ROUTER binds: port 0 lets the OS choose; ipc/inproc get a unique name."""
    if transport == "tcp":
        return "tcp://%s:%s" % (host, port or "*")
    if transport == "ipc":
        return "ipc://%s" % os.path.join(tempfile.gettempdir(), "sparkps-%s.ipc" % uuid.uuid4().hex)
    if transport == "inproc":
        return "inproc://sparkps-%s" % uuid.uuid4().hex
    raise ConfigError("unknown transport %r; use one of %s" % (transport, ", ".join(TRANSPORTS)))


class Van:
    """Sockets and the I/O thread of one node.

    ``on_request(msg, route)`` and ``on_reply(msg)`` run on the I/O thread and must not block;
    ``route`` is what ``send_reply`` needs to answer.  ``send``/``send_reply`` are thread-safe
    and never block.  ``zmq_context`` must be shared by every node of an ``inproc://`` cluster.
    """

    def __init__(self, key, on_request, on_reply, transport="tcp", host="127.0.0.1", port=0,
                 zmq_context=None, curve=None, name="node", max_message_bytes=None, freshness=None):
        self._key, self._on_request, self._on_reply = key, on_request, on_reply
        self.max_message_bytes = resolve_max_message_bytes(max_message_bytes)
        self.freshness = freshness or Freshness()
        self._warned = set()
        self._bind = bind_address(transport, host, port)
        if zmq_context is None and transport == "inproc":
            zmq_context = zmq.Context.instance()  # inproc peers must share one context
        self._owns_context = zmq_context is None
        self._context = zmq_context or zmq.Context()
        self._curve, self.name = curve, name
        self._outbox = collections.deque()
        self._lock = threading.Lock()
        self._wake_pending = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._stopping = False
        self._channels = ChannelBook(self._new_dealer)
        self._thread = None
        self._router = None
        self.address = None
        self.dropped = 0

    def start(self):
        """Bind the ROUTER and start the I/O thread; returns the real address (port 0 resolved)."""
        router = self._socket(zmq.ROUTER)
        if self._curve is not None:
            self._curve.configure_server(router)
        try:
            router.bind(self._bind)
        except zmq.ZMQError as exc:
            router.close(0)
            raise ClusterError("%s cannot bind %s: %s" % (self.name, self._bind, exc)) from None
        self._router = router
        self.address = router.getsockopt_string(zmq.LAST_ENDPOINT)
        self._thread = threading.Thread(target=self._run, name="sparkps-van-%s" % self.name, daemon=True)
        self._thread.start()
        return self.address

    def _socket(self, kind):
        sock = self._context.socket(kind)
        sock.linger = 0
        sock.sndhwm = sock.rcvhwm = 0
        # libzmq refuses only frames *above* MAXMSGSIZE; the limit is exclusive: a frame of the limit is refused too
        sock.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes - 1)
        return sock

    def send(self, address, frames):
        """Send the request ``frames`` to the peer whose ROUTER is at ``address``: the one send path of a node.

        From any thread but the I/O thread, on the calling thread's own Channel, returned (its waiter polls it for
        the reply with ``pump``); on the I/O thread (a handler running inline), on the Van's own DEALER, and None
        is returned (the reply is handled there). None too once the Van stops. Never blocks on a peer."""
        if self.on_io_thread:
            self._post(("dealer", address, frames))
            return None
        channel = self._channels.mine()
        if channel is None:
            return None
        with channel.lock:
            if channel.closed or self._stopping:
                return None
            channel.send(address, frames)
            if channel.sends % 64 == 0:  # replies nobody waits for must not pile up
                channel.poll(0, self._reply_frames)
        return channel

    def pump(self, channel, event, remaining):
        """Wait up to ``remaining`` s (in slices) for replies on ``channel`` until ``event`` is set."""
        if channel.lock.acquire(blocking=False):
            try:
                closed = channel.closed
                if not closed and not event.is_set():
                    channel.poll(min(remaining, 0.1), self._reply_frames)
                    return
            finally:
                channel.lock.release()
            event.wait(min(remaining, 0.05))
        else:  # another thread is polling this channel and will dispatch our reply too
            event.wait(min(remaining, 0.002))

    def poll_own(self, timeout_s):
        """Wait at most ``timeout_s`` for replies on the calling thread's Channel and dispatch them (the answers to
        its ``send`` requests nobody waits for: heartbeats).  Returns False at once, having waited for
        nothing, when the thread has sent nothing on its Channel yet or the Van is stopping."""
        channel = self._channels.mine()
        if channel is None:
            return False
        with channel.lock:
            if channel.closed or self._stopping or not channel.sends:
                return False
            channel.poll(timeout_s, self._reply_frames)
        return True

    def _reply_frames(self, frames):
        self._handle_frames(frames, routed=False)

    def send_reply(self, route, frames):
        """Queue ``frames`` as the answer to the request that arrived with ``route``."""
        self._post(("router", route, frames))

    @property
    def on_io_thread(self):
        """True when called from this Van's I/O thread (a handler running inline)."""
        return threading.current_thread() is self._thread

    def _post(self, item):
        if self.on_io_thread and not self._stopping:  # already on the socket-owning thread: send now
            self._deliver(*item)
            return
        with self._lock:
            if self._stopping:
                return
            self._outbox.append(item)
            if not self._wake_pending:
                self._wake_pending = True
                os.write(self._wake_w, b"x")

    def stop(self, timeout=5.0):
        """Close every socket and end the I/O thread (waits at most ``timeout`` s); idempotent."""
        with self._lock:
            already, self._stopping = self._stopping, True
            if not already:
                os.write(self._wake_w, b"x")
        if already:
            return
        if self.on_io_thread:  # stopped from a handler: the I/O loop closes its sockets when it returns
            return
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.error("%s: I/O thread did not stop within %g s", self.name, timeout)
        elif self._router is not None:
            self._router.close(0)
        self._channels.close_all()
        os.close(self._wake_r)
        os.close(self._wake_w)
        if self._bind.startswith("ipc://"):
            try:
                os.unlink(self._bind[len("ipc://"):])
            except OSError:
                pass
        if self._owns_context:
            self._context.term()

    def _run(self):
        self._dealers, self._poller = {}, zmq.Poller()
        dealers, poller = self._dealers, self._poller
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        try:
            while not self._stopping:
                for sock, _ in poller.poll(_POLL_MS):
                    if sock is self._router:
                        self._drain(sock, routed=True)
                    elif sock == self._wake_r:
                        self._clear_wake()
                    else:
                        self._drain(sock, routed=False)
                self._flush()
        except Exception:  # never expected; logged so a broken node says why
            log.exception("%s: I/O thread failed", self.name)
        finally:
            try:  # answers queued before stop (a TERMINATE acknowledgement) still go out
                self._flush()
            except Exception:
                log.debug("%s: final flush failed", self.name, exc_info=True)
            for sock in [self._router, *dealers.values()]:
                sock.close(0)

    def _clear_wake(self):
        try:
            os.read(self._wake_r, 4096)
        except BlockingIOError:
            pass

    def _flush(self):
        with self._lock:
            items = list(self._outbox)
            self._outbox.clear()
            self._wake_pending = False
        for item in items:
            self._deliver(*item)

    def call_soon(self, fn):
        """Run ``fn()`` on the I/O thread (now when called there); never blocks."""
        self._post(("call", fn, None))

    def _deliver(self, kind, target, frames):
        """On the I/O thread: send a reply through the ROUTER, a request through the peer's DEALER, or
        run a call."""
        if kind == "call":
            target()
        elif kind == "router":
            self._send(self._router, [target] + frames, target)
        else:
            self._send(self._dealers.get(target) or self._connect(target), frames, target)

    def _new_dealer(self, address):
        sock = self._socket(zmq.DEALER)
        if self._curve is not None:
            self._curve.configure_client(sock)
        sock.connect(address)
        return sock

    def _connect(self, address):
        sock = self._dealers[address] = self._new_dealer(address)
        self._poller.register(sock, zmq.POLLIN)
        return sock

    def _send(self, sock, frames, target):
        try:
            send_frames(sock, frames)
        except zmq.ZMQError as exc:
            self.dropped += 1
            log.warning("%s: could not send to %r: %s", self.name, target, exc)

    def _drain(self, sock, routed):
        for _ in range(_BURST):  # EVENTS instead of catching zmq.Again: an exception per drain is slow
            if not readable(sock):
                return
            self._handle_frames(recv_frames(sock), routed)

    def _handle_frames(self, frames, routed):
        route = frames.pop(0).bytes if routed and frames else None
        try:
            msg = wire.decode(frames, self._key)
        except (MalformedMessage, AuthError) as exc:
            self._drop("an unauthenticated peer", type(exc).__name__, exc)
            return
        reason = self.freshness.admit_job(msg.job, msg.cmd, msg.reply)
        if reason is None:
            reason = self.freshness.admit(msg.sender, msg.session, msg.seq)
        if reason is not None:
            self._drop("node %d" % msg.sender if msg.sender >= 0 else "an unregistered node", reason,
                       "%s %s (sequence %d) %s" % (msg.cmd, "reply" if msg.reply else "request", msg.seq, reason))
            return
        try:
            if routed:
                self._on_request(msg, route)
            else:
                self._on_reply(msg)
        except Exception:
            log.exception("%s: failed to dispatch %s", self.name, msg.cmd)

    def _drop(self, sender, reason, detail):
        """Count a dropped message; warn once per claimed sender and reason (floods must not flood the log)."""
        self.dropped += 1
        if (sender, reason) in self._warned or len(self._warned) > 1000:
            return
        self._warned.add((sender, reason))
        log.warning("%s: dropped a message claiming to come from %s: %s (further drops from it for this reason "
                    "are only counted)", self.name, sender, detail)


log = logging.getLogger(__name__)
_NOBLOCK, _SNDMORE, _EVENTS, _POLLIN = int(zmq.NOBLOCK), int(zmq.SNDMORE), int(zmq.EVENTS), int(zmq.POLLIN)


def send_frames(sock, frames):
    """``sock.send_multipart(frames, NOBLOCK, copy=False)`` with plain-int flags (pyzmq's wrapper and its
    enum arithmetic cost more than the send itself).  Raises zmq.ZMQError as send_multipart does."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        sock.send(frame, _NOBLOCK | _SNDMORE if i < last else _NOBLOCK, copy=False)


def readable(sock):
    """True when a whole message is waiting on ``sock`` (ZeroMQ delivers multipart messages at once)."""
    return sock.getsockopt(_EVENTS) & _POLLIN


def recv_frames(sock):
    """The frames of the next message on ``sock`` (zmq Frames, no copy); call only when ``readable``."""
    frame = sock.recv(_NOBLOCK, copy=False)
    frames = [frame]
    while frame.more:
        frame = sock.recv(_NOBLOCK, copy=False)
        frames.append(frame)
    return frames


class Channel:
    """DEALERs (one per peer address) created for one thread; use only while holding ``lock``."""

    def __init__(self, thread, new_dealer):
        self.thread = weakref.ref(thread)
        self.lock = threading.Lock()
        self.closed = False
        self.sends = 0
        self._dealers = {}
        self._poller = zmq.Poller()
        self._new_dealer = new_dealer

    def send(self, address, frames):
        """Send ``frames`` to the ROUTER at ``address`` (never blocks); False when zmq refused."""
        sock = self._dealers.get(address)
        if sock is None:
            sock = self._dealers[address] = self._new_dealer(address)
            self._poller.register(sock, zmq.POLLIN)
        self.sends += 1
        try:
            send_frames(sock, frames)
            return True
        except zmq.ZMQError as exc:
            log.warning("could not send to %s: %s", address, exc)
            return False

    def poll(self, timeout_s, on_frames, burst=256):
        """Wait at most ``timeout_s`` for replies; hand every received message to ``on_frames``."""
        for sock, _ in self._poller.poll(int(timeout_s * 1000)):
            for _ in range(burst):
                if not readable(sock):
                    break
                on_frames(recv_frames(sock))

    def close(self):
        self.closed = True
        for sock in self._dealers.values():
            sock.close(0)
        self._dealers.clear()


class ChannelBook:
    """One Channel per sending thread; channels of threads that ended are closed when new ones open."""

    def __init__(self, new_dealer):
        self._new_dealer = new_dealer
        self._local = threading.local()
        self._lock = threading.Lock()
        self._channels = []
        self.closed = False

    def mine(self):
        """The calling thread's channel (created on first use); None once the book is closed."""
        channel = getattr(self._local, "channel", None)
        if channel is not None and not channel.closed:
            return channel
        with self._lock:
            if self.closed:
                return None
            self._prune()
            channel = Channel(threading.current_thread(), self._new_dealer)
            self._channels.append(channel)
        self._local.channel = channel
        return channel

    def _prune(self):
        alive = []
        for channel in self._channels:
            thread = channel.thread()
            if (thread is None or not thread.is_alive()) and channel.lock.acquire(blocking=False):
                try:
                    channel.close()
                finally:
                    channel.lock.release()
            else:
                alive.append(channel)
        self._channels = alive

    def close_all(self, timeout=1.0):
        """Close every channel (waits at most ``timeout`` s for each one's lock)."""
        with self._lock:
            self.closed = True
            channels, self._channels = self._channels, []
        for channel in channels:
            got = channel.lock.acquire(timeout=timeout)
            try:
                channel.close()
            finally:
                if got:
                    channel.lock.release()

"""Request tracking: every request gets an id; its reply (or the node's failure) completes it.

Thread-safe.  An entry lives from ``new_request`` until ``wait`` returns or raises, or until
``discard``; a reply to an id nobody tracks (a late reply after a timeout) is dropped, so the
tables stay bounded however long the node runs.
"""
import itertools
import threading
import time

from sparkps.errors import PeerTimeout, RemoteError


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

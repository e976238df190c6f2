"""Direct request channels: the DEALER sockets of one sending thread.

A thread that sends a request on its own channel and then waits for the reply polls the channel
itself, so a request/reply costs no hand-over to the I/O thread.  ZeroMQ sockets may move between
threads behind a full memory barrier, so every use of a channel's sockets happens under its lock:
whichever thread holds it (normally the owner) sends, polls and dispatches the replies it finds.
"""
import logging
import threading
import weakref

import zmq

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

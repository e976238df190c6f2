"""What an attacker on the wire sees and sends: ZMTP 3 (NULL mechanism) bytes, a recording TCP relay, raw replays.

``Relay`` listens on 127.0.0.1, forwards every connection to a target address byte for byte and records what
the connecting side sent.  ``parse`` cuts such a recording into its greeting, its commands and its messages;
``serialize`` writes messages back as ZMTP frames; ``send_raw`` opens a fresh TCP connection, sends bytes and
leaves it open until the caller saw the peer handle them.
No zmq and no sparkps code is used to forge anything: the bytes are the ones captured.
"""
import select
import socket
import struct
import threading
import time

GREETING_BYTES = 64
_MORE, _LONG, _COMMAND = 1, 2, 4


def greeting(socket_type=b"DEALER"):
    """A ZMTP 3.0 NULL-mechanism client greeting followed by its READY command."""
    head = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31
    body = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", len(socket_type)) + socket_type
    return head + bytes([_COMMAND, len(body)]) + body


def frame_header(size, more=False):
    """The flags and length of one message frame of ``size`` bytes (long form above 255)."""
    flags = _MORE if more else 0
    if size > 255:
        return bytes([flags | _LONG]) + struct.pack(">Q", size)
    return bytes([flags, size])


def parse(stream):
    """(greeting + commands bytes, [messages as lists of frame bytes]) of a recorded client stream."""
    pos, prefix, messages, current = GREETING_BYTES, stream[:GREETING_BYTES], [], []
    while pos < len(stream):
        flags = stream[pos]
        if flags & _LONG:
            size, start = struct.unpack(">Q", stream[pos + 1:pos + 9])[0], pos + 9
        else:
            size, start = stream[pos + 1], pos + 2
        if start + size > len(stream):
            break  # a message cut by the end of the recording
        if flags & _COMMAND:
            prefix += stream[pos:start + size]
        else:
            current.append(stream[start:start + size])
            if not flags & _MORE:
                messages.append(current)
                current = []
        pos = start + size
    return prefix, messages


def serialize(messages):
    """ZMTP frames for ``messages`` (lists of frame bytes)."""
    out = bytearray()
    for frames in messages:
        for i, frame in enumerate(frames):
            out += frame_header(len(frame), more=i < len(frames) - 1) + frame
    return bytes(out)


def _connect(address, data):
    """A fresh TCP connection that sent ``data``: its greeting first, the rest once the peer's greeting
    arrived (libzmq reads the greeting in steps and fails a handshake whose READY came with it)."""
    host, port = address[len("tcp://"):].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(data[:GREETING_BYTES])
    received = 0
    while received < GREETING_BYTES:
        got = sock.recv(4096)
        if not got:
            raise ConnectionResetError("the peer closed the connection during the greeting")
        received += len(got)
    sock.sendall(data[GREETING_BYTES:])
    return sock


def send_raw(address, data):
    """Connect to ``tcp://host:port`` from a fresh socket and send ``data``; returns the socket, still open: close
    it (``with``) once the peer shows it handled what was sent (closing earlier, with the peer's greeting unread,
    resets the connection and the peer may drop what it has not read yet)."""
    return _connect(address, data)


def stream_raw(address, head, chunk, count):
    """Connect from a fresh socket, send ``head`` then ``chunk`` ``count`` times; returns the socket, still
    open (a peer frees a partial message when the connection closes).  OSError when disconnected."""
    sock = _connect(address, head)
    try:
        for _ in range(count):
            sock.sendall(chunk)
    except OSError:
        sock.close()
        raise
    return sock


def closed_by_peer(sock, timeout):
    """True once the peer closed ``sock`` (what it sends before is read and dropped), False after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        sock.settimeout(remaining)
        try:
            if not sock.recv(4096):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


class Relay:
    """A recording TCP relay in front of ``target`` (``tcp://host:port``); ``address`` is where to connect."""

    def __init__(self, target):
        host, port = target[len("tcp://"):].rsplit(":", 1)
        self.target = (host, int(port))
        self.recordings = []  # one bytearray per connection: what the connecting side sent
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = "tcp://127.0.0.1:%d" % self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True, name="test-relay")]
        self._threads[0].start()

    def _accept(self):
        self._listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                continue
            upstream = socket.create_connection(self.target)
            record = bytearray()
            self.recordings.append(record)
            thread = threading.Thread(target=self._pump, args=(client, upstream, record), daemon=True,
                                      name="test-relay-pump")
            thread.start()
            self._threads.append(thread)

    def _pump(self, client, upstream, record):
        peers = {client: upstream, upstream: client}
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select(list(peers), [], [], 0.1)
                for sock in ready:
                    data = sock.recv(1 << 20)
                    if not data:
                        return
                    if sock is client:
                        record += data
                    peers[sock].sendall(data)
        except OSError:
            return
        finally:
            client.close()
            upstream.close()

    @property
    def target_uri(self):
        """The address the relay forwards to (the real ROUTER)."""
        return "tcp://%s:%d" % self.target

    def messages(self):
        """Every message the connecting sides sent, parsed, with the greeting of its connection."""
        return [(prefix, msg) for rec in self.recordings for prefix, msgs in [parse(bytes(rec))] for msg in msgs]

    def close(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
        self._listener.close()

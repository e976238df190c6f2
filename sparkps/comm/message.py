"""A message on the wire: its format, its authentication and the buffers its arrays are sent from.

The format: one msgpack header frame, then one raw frame per array, all authenticated. Header frame = ``MAC(32
bytes) || msgpack(header)`` where the MAC covers the header and every array frame (``MacKey.sign_frames``) and
header is a map with keys ``cmd`` (str), ``sender`` (node id, -1 before registration), ``sid`` (the sender's 16-byte
session), ``seq`` (its sequence number), ``rid`` (request id), ``reply`` (bool), ``meta`` (map), ``arrays`` (list of
``[dtype, shape]``, one per array frame), ``err`` (text of an ERROR reply or nil) and ``job`` (the job's id, 16
random bytes drawn by its scheduler; empty only on a node's first REGISTER and on STATUS, see ``freshness``). Arrays
travel without a copy on send (contiguous buffers handed to zmq) and are read-only ``np.frombuffer`` views of the
received frames. Nothing is ever unpickled.

An array of more than :data:`FRAME_BYTES` bytes travels as several frames of at most that size (its description then
has a third element, the number of its frames), joined on receipt: no frame of any message is larger than the
header's limit, so every socket's frame limit (``settings.DEFAULT_MAX_MESSAGE_BYTES``) can be the header's, whatever
the model, and a stranger's frame costs a node at most that much before its MAC is checked.

>>> frames = encode(Message("PUSH", sender=5, rid=7, arrays=[np.arange(3.0)]), b"k")
>>> decode(frames, b"k").arrays[0].tolist()
[0.0, 1.0, 2.0]

Authentication: job secrets, an HMAC-SHA256 over every frame, optional CURVE keys. Every header frame starts with
``HMAC-SHA256(secret, n || len(body) || body || len(f1) || f1 || ...)``: the MAC covers the header body and every
array frame, each prefixed by its length (so frames cannot be merged or split), streamed frame by frame (no
concatenation, no copy). A peer that does not know the job secret cannot produce a message any node accepts, nor
change one byte of a captured one. The header carries the sender's node id, its session (16 random bytes, new per
registration) and a sequence number: see ``freshness`` for how replays are refused. docs/security.md has the threat
model and why HMAC-SHA256 (SHA-NI) was chosen over keyed BLAKE2b and Poly1305.

Buffers (:class:`BufferPool`), reused for arrays sent without a copy. A zero-copy send keeps a reference to the
array until ZeroMQ has written it out, so a buffer may be filled again once nothing but the pool refers to it.
Reusing buffers spares the allocator a fresh multi-hundred-kB block per message, whose first touch costs a page
fault per 4 kB page.

>>> pool = BufferPool()
>>> a = pool.take(4)
>>> first, view = id(a), a[1:]      # a view, as a frame in flight holds one
>>> del a
>>> id(pool.take(4)) == first        # still referenced: not handed out again
False
>>> del view
>>> id(pool.take(4)) == first
True
"""
import hashlib
import hmac
import itertools
import secrets as _secrets
import struct
import sys
import threading
from dataclasses import dataclass, field

import msgpack
import numpy as np
import zmq
import zmq.utils.z85

from sparkps.comm.settings import resolve_curve
from sparkps.errors import AuthError, ConfigError, MalformedMessage

COMMANDS = frozenset("""ABORT REGISTER NODES BARRIER RELEASE HEARTBEAT STATUS PROGRESS REPORT_ERROR FINISH
    TERMINATE INIT PUSH PULL PUSHPULL SET_OPTIMIZER COMMAND LEAVE ERROR""".split())
DTYPES = frozenset("""bool int8 int16 int32 int64 uint8 uint16 uint32 uint64
    float16 float32 float64""".split())
MAX_HEADER_BYTES = 4 * 1024 * 1024
MAX_ARRAYS = 4096
FRAME_BYTES = 4 * 1024 * 1024       # the largest array frame sent: a larger array goes as several frames
MAX_FRAMES = 1 << 16               # array frames of one message (256 GiB of arrays at FRAME_BYTES each)
MAX_NDIM = 32
_DTYPE_NAMES = {np.dtype(name): name for name in DTYPES}
_DTYPES_BY_NAME = {name: np.dtype(name) for name in DTYPES}
_HEADER_KEYS = {"cmd": str, "sender": int, "sid": bytes, "seq": int, "rid": int, "reply": bool, "meta": dict,
                "arrays": list, "job": bytes}


@dataclass
class Message:
    """One request or reply.  ``arrays`` are numpy arrays; ``meta`` holds plain msgpack values."""

    cmd: str
    sender: int = -1
    rid: int = 0
    reply: bool = False
    meta: dict = field(default_factory=dict)
    arrays: list = field(default_factory=list)
    err: str = None
    session: bytes = b""
    seq: int = 0
    job: bytes = b""


def _plain(value):
    """msgpack hook: numpy scalars become Python numbers; anything else is refused."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError("cannot send a %s in a message header (only plain numbers, strings, lists, dicts)"
                    % type(value).__name__)


def encode(msg, key):
    """Frames for ``msg`` signed with ``key`` (bytes or a MacKey).  Arrays are sent as contiguous buffers,
    hashed in place for the MAC."""
    if msg.cmd not in COMMANDS:
        raise MalformedMessage("unknown command %r" % (msg.cmd,))
    buffers, specs = [], []
    for array in msg.arrays:
        array = np.asarray(array)
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        dtype_name = _DTYPE_NAMES.get(array.dtype)
        if dtype_name is None:
            raise MalformedMessage("cannot send arrays of dtype %s" % array.dtype)
        flat = array.reshape(-1).view(np.uint8) if array.size else b""
        if len(flat) > FRAME_BYTES:
            pieces = [flat[start:start + FRAME_BYTES] for start in range(0, len(flat), FRAME_BYTES)]
            specs.append([dtype_name, list(array.shape), len(pieces)])
            buffers.extend(pieces)
        else:
            specs.append([dtype_name, list(array.shape)])
            buffers.append(flat)
    header = {"cmd": msg.cmd, "sender": int(msg.sender), "sid": bytes(msg.session), "seq": int(msg.seq),
              "rid": int(msg.rid), "reply": bool(msg.reply), "meta": msg.meta or {}, "arrays": specs, "err": msg.err,
              "job": bytes(msg.job)}
    body = msgpack.packb(header, default=_plain, use_bin_type=True)
    if len(body) > MAX_HEADER_BYTES:
        raise MalformedMessage("header of %s is %d bytes, above the %d-byte limit"
                               % (msg.cmd, len(body), MAX_HEADER_BYTES))
    return [sign(key, body, buffers) + body] + buffers


def _raw(frame):
    """The bytes-like content of a zmq Frame, bytes or memoryview."""
    return frame.buffer if type(frame) is zmq.Frame else frame


def _unpack_header(raw, key, frames):
    size = len(raw)
    if size <= MAC_SIZE:
        raise MalformedMessage("header frame of %d bytes is too short" % size)
    if size > MAC_SIZE + MAX_HEADER_BYTES:
        raise MalformedMessage("header frame of %d bytes is above the limit" % size)
    raw = memoryview(raw)
    body = raw[MAC_SIZE:]
    if len(frames) > MAX_FRAMES:
        raise MalformedMessage("message has %d array frames, above the limit of %d" % (len(frames), MAX_FRAMES))
    if not hmac.compare_digest(raw[:MAC_SIZE], sign(key, body, frames)):
        raise AuthError("message authentication failed (wrong job secret, or a header or array frame was altered)")
    try:
        header = msgpack.unpackb(body, raw=False, strict_map_key=False, use_list=True,
                                 max_array_len=1 << 20, max_map_len=1 << 20)
    except Exception as exc:  # msgpack raises several unrelated classes on garbage
        raise MalformedMessage("header is not valid msgpack: %s" % exc) from None
    if type(header) is not dict:
        raise MalformedMessage("header is a %s, not a map" % type(header).__name__)
    for name, kind in _HEADER_KEYS.items():
        if type(header.get(name)) is not kind:  # exact types: msgpack gives no subclasses (bool is not int)
            raise MalformedMessage("header field %r is missing or not a %s" % (name, kind.__name__))
    if header["cmd"] not in COMMANDS:
        raise MalformedMessage("unknown command %r" % header["cmd"][:40])
    err = header.get("err")
    if err is not None and type(err) is not str:
        raise MalformedMessage("header field 'err' is not text")
    return header


def _frame_count(spec, index):
    """How many frames array ``index`` travels in: 1, or the third element of its description."""
    if type(spec) is list and len(spec) == 3:
        count = spec[2]
        if type(count) is not int or count < 2:
            raise MalformedMessage("array %d has a bad description %r" % (index, str(spec)[:80]))
        return count
    return 1


def _array(spec, frame, index):
    if type(spec) is list and len(spec) == 3:
        spec = spec[:2]
    dtype = _DTYPES_BY_NAME.get(spec[0]) if type(spec) is list and len(spec) == 2 and type(spec[0]) is str else None
    shape = spec[1] if dtype is not None else None
    if (type(shape) is not list or len(shape) > MAX_NDIM
            or not all(type(d) is int and d >= 0 for d in shape)):
        raise MalformedMessage("array %d has a bad description %r" % (index, str(spec)[:80]))
    count = 1
    for dim in shape:
        count *= dim
    data = frame
    if count * dtype.itemsize != data.nbytes:
        raise MalformedMessage("array %d: %s%s needs %d bytes, frame has %d"
                               % (index, spec[0], tuple(shape), count * dtype.itemsize, data.nbytes))
    if not count:
        array = np.zeros(shape, dtype)
    else:
        array = np.frombuffer(data, dtype=dtype)
        if len(shape) != 1:
            array = array.reshape(shape)
    array.flags.writeable = False
    return array


def decode(frames, key):
    """The Message in ``frames`` (zmq Frames or bytes), checked against ``key``.

    Raises AuthError for a bad MAC and MalformedMessage for anything else that does not decode.
    """
    if not frames:
        raise MalformedMessage("empty message")
    data = [memoryview(_raw(frame)) for frame in frames[1:]]
    header = _unpack_header(_raw(frames[0]), key, data)
    specs = header["arrays"]
    counts = [_frame_count(spec, i) for i, spec in enumerate(specs)] if len(specs) <= MAX_ARRAYS else None
    if counts is None or sum(counts) != len(frames) - 1:
        needed = "" if counts is None or sum(counts) == len(specs) else " (the arrays need %d)" % sum(counts)
        raise MalformedMessage("header announces %d arrays, message has %d array frames%s"
                               % (len(specs), len(frames) - 1, needed))
    arrays, at = [], 0
    for i, (spec, count) in enumerate(zip(specs, counts)):
        frame = data[at] if count == 1 else memoryview(b"".join(data[at:at + count]))
        arrays.append(_array(spec, frame, i))
        at += count
    return Message(header["cmd"], header["sender"], header["rid"], header["reply"], header["meta"],
                   arrays, header.get("err"), header["sid"], header["seq"], header["job"])


MAC_SIZE = 32
SESSION_BYTES = 16
JOB_ID_BYTES = 16
_LENGTH = struct.Struct("<Q").pack


def generate_secret():
    """A fresh random job secret (64 hex characters)."""
    return _secrets.token_hex(32)


def secret_bytes(secret):
    """The secret as bytes; an empty or missing secret is a configuration error."""
    if isinstance(secret, str):
        secret = secret.encode("utf-8")
    if not isinstance(secret, (bytes, bytearray)) or not secret:
        raise ConfigError("a job secret is required (give --secret or set SPARKPS_SECRET)")
    return bytes(secret)


class MacKey:
    """A job secret prepared for signing: the HMAC key schedule is computed once, not per message."""

    __slots__ = ("_base",)

    def __init__(self, secret):
        self._base = hmac.new(secret_bytes(secret), digestmod="sha256")

    def sign(self, body):
        """The MAC of a message without array frames."""
        return self.sign_frames(body, ())

    def sign_frames(self, body, frames):
        """The MAC of the header ``body`` and the array ``frames`` (bytes-like, hashed in place)."""
        mac = self._base.copy()
        mac.update(_LENGTH(len(frames)))
        mac.update(_LENGTH(len(body)))
        mac.update(body)
        for frame in frames:
            mac.update(_LENGTH(len(frame)))
            mac.update(frame)
        return mac.digest()


def _key(key):
    return key if isinstance(key, MacKey) else MacKey(key)


def sign(key, body, frames=()):
    """The 32-byte MAC of ``body`` and ``frames`` under ``key`` (bytes or a MacKey)."""
    return _key(key).sign_frames(body, frames)


class Sequencer:
    """The session (16 random bytes) and sequence numbers (1, 2, ...) of one sending endpoint.

    A new Sequencer, hence a new session, per endpoint: a restarted node registers with a new session
    and starts its sequence again.  ``next`` is thread-safe (itertools.count is atomic under the GIL).
    """

    __slots__ = ("session", "_count")

    def __init__(self):
        self.session = _secrets.token_bytes(SESSION_BYTES)
        self._count = itertools.count(1)

    def next(self):
        return next(self._count)


def curve_available():
    """True when the linked libzmq supports CURVE encryption."""
    return bool(zmq.has("curve"))


class CurveKeys:
    """The job's CURVE key pair, derived from the job secret so no key has to be distributed.

    Every node's ROUTER is a CURVE server with this key pair; every DEALER is a CURVE client with a
    fresh key pair of its own and the job's public key as its server key.  CURVE encrypts; the HMAC
    on each header still decides who may talk.
    """

    def __init__(self, secret):
        if not curve_available():
            raise ConfigError("CURVE encryption was requested but this libzmq was built without CURVE")
        seed = hashlib.sha256(b"sparkps-curve:" + secret_bytes(secret)).digest()
        self.server_secret = zmq.utils.z85.encode(seed)
        self.server_public = zmq.curve_public(self.server_secret)

    def configure_server(self, socket):
        """Make ``socket`` (a ROUTER) a CURVE server."""
        socket.curve_secretkey = self.server_secret
        socket.curve_publickey = self.server_public
        socket.curve_server = True

    def configure_client(self, socket):
        """Make ``socket`` (a DEALER) a CURVE client of any node of this job."""
        public, secret = zmq.curve_keypair()
        socket.curve_secretkey = secret
        socket.curve_publickey = public
        socket.curve_serverkey = self.server_public


# ---- when CURVE is on ------------------------------------------------------------------------------------
# A job's CURVE keys are derived from its secret (CurveKeys above): a new secret per job (generate_secret, made
# by the job's scheduler) gives new keys per job, and no key is ever written to a file; the secret reaches a
# server process through its environment (readable by its own user only), never its command line.

def is_loopback(host):
    """True when ``host`` (an address or name a node binds) is this machine's loopback only."""
    import ipaddress
    name = str(host or "").strip("[]").lower()
    if name in ("localhost", "localhost.localdomain", ""):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def curve_for(host, requested=None, env=None):
    """Whether a role binding ``host`` uses CURVE, by the one precedence of ``settings.resolve_curve``:
    ``requested`` when given (True / False), else ``SPARKPS_CURVE`` of ``env`` (default: this process's
    environment) when set, else on whenever ``host`` is not loopback (traffic that leaves the machine is
    encrypted by default). ConfigError when CURVE is on and this libzmq lacks it."""
    chosen = resolve_curve(requested, env)
    curve = (not is_loopback(host)) if chosen is None else chosen
    if curve and not curve_available():
        raise ConfigError("CURVE encryption is needed for a job binding %s (not loopback) but this libzmq was "
                          "built without CURVE; pass curve=False to send in plaintext" % host)
    return curve


def curve_from_env(environ=None):
    """The ``SPARKPS_CURVE`` setting of a process's environment (``settings.resolve_curve``; unset: off)."""
    return bool(resolve_curve(None, environ))


_UNUSED_REFS = 3  # the pool's list, the loop variable and getrefcount's own argument


class BufferPool:
    """Flat arrays by (size, dtype), reused once released; keeps at most ``keep`` per kind. Thread-safe."""

    def __init__(self, keep=3):
        self.keep = keep
        self._buffers = {}
        self._lock = threading.Lock()

    def take(self, size, dtype=np.float32):
        """A flat array of ``size`` elements that nobody else refers to (contents undefined)."""
        kind = (int(size), np.dtype(dtype))
        with self._lock:
            buffers = self._buffers.setdefault(kind, [])
            for buffer in buffers:
                if sys.getrefcount(buffer) == _UNUSED_REFS:
                    return buffer
            buffer = np.empty(kind[0], kind[1])
            if len(buffers) < self.keep:
                buffers.append(buffer)
            return buffer

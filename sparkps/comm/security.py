"""Job secrets, message authentication (HMAC-SHA256 over every frame) and optional CURVE keys.

Every header frame starts with ``HMAC-SHA256(secret, n || len(body) || body || len(f1) || f1 || ...)``:
the MAC covers the header body and every array frame, each prefixed by its length (so frames cannot
be merged or split), streamed frame by frame (no concatenation, no copy).  A peer that does not know
the job secret cannot produce a message any node accepts, nor change one byte of a captured one.
The header carries the sender's node id, its session (16 random bytes, new per registration) and a
sequence number: see ``freshness`` for how replays are refused.  docs/security.md has the threat
model and why HMAC-SHA256 (SHA-NI) was chosen over keyed BLAKE2b and Poly1305.
"""
import hashlib
import hmac
import itertools
import secrets as _secrets
import struct

import zmq
import zmq.utils.z85

from sparkps.comm.settings import resolve_curve
from sparkps.errors import ConfigError

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

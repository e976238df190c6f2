"""Job secrets, header authentication (HMAC-SHA256) and optional CURVE keys derived from the secret.

Every header frame starts with ``HMAC-SHA256(secret, body)``; a peer that does not know the job
secret cannot produce a header any node accepts.  Array frames are not covered by the MAC (hashing
16 MB per push would cost more than sending it); their dtype, shape and byte size are in the
authenticated header and are checked on receipt.
"""
import hashlib
import hmac
import secrets as _secrets

import zmq
import zmq.utils.z85

from sparkps.errors import ConfigError

MAC_SIZE = 32


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
        mac = self._base.copy()
        mac.update(body)
        return mac.digest()


def sign(key, body):
    """The 32-byte MAC of ``body`` under ``key`` (bytes or a MacKey)."""
    if isinstance(key, MacKey):
        return key.sign(body)
    return hmac.digest(key, body, "sha256")


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


def curve_for(host, requested=None):
    """Whether a role binding ``host`` uses CURVE: ``requested`` when given (True / False), else on whenever
    ``host`` is not loopback (traffic that leaves the machine is encrypted by default). ConfigError when CURVE
    is on and this libzmq lacks it."""
    curve = (not is_loopback(host)) if requested is None else bool(requested)
    if curve and not curve_available():
        raise ConfigError("CURVE encryption is needed for a job binding %s (not loopback) but this libzmq was "
                          "built without CURVE; pass curve=False to send in plaintext" % host)
    return curve


def curve_from_env(environ=None):
    """The ``SPARKPS_CURVE`` setting of a process's environment (``1``/``true``/``yes``: on)."""
    import os
    value = (os.environ if environ is None else environ).get("SPARKPS_CURVE", "")
    return value.strip().lower() in ("1", "true", "yes", "on")

"""Exceptions sparkps raises on purpose. Every message names the thing at fault."""


class SparkpsError(Exception):
    """Base class of every error sparkps raises on purpose."""


class ShapeError(SparkpsError, ValueError):
    """A shape does not fit an op or a bound array; the message names the op and both shapes."""


class DataError(SparkpsError, ValueError):
    """Bad input data: malformed rows, NaN, wrong width, label out of range."""


class ConfigError(SparkpsError, ValueError):
    """An unknown option or config key, or a value out of its range."""


class BackendUnavailable(SparkpsError, RuntimeError):
    """The requested array backend (CuPy) cannot be used here."""


class ClusterError(SparkpsError, RuntimeError):
    """A parameter-server failure. ``node`` names the peer at fault when it is known."""

    def __init__(self, message, node=None):
        super().__init__(message)
        self.node = node


class PeerTimeout(ClusterError, TimeoutError):
    """A wait on a peer ran out; the message names the peer and what was awaited."""


class NodeDied(ClusterError):
    """A node stopped sending heartbeats or reported a failure."""


class RemoteError(ClusterError):
    """A peer answered a request with an ERROR reply."""


class AuthError(ClusterError):
    """A peer presented a wrong or missing job secret."""


class MalformedMessage(ClusterError):
    """Frames that do not decode as a sparkps message."""

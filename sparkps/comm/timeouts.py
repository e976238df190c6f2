"""Timeouts of every wait in the parameter server, in seconds."""
from dataclasses import asdict, dataclass

from sparkps.errors import ConfigError


@dataclass
class Timeouts:
    """How long each kind of wait may last before it raises an error naming the peer.

    ``register``: a node waits this long for the node table; the scheduler waits this long for every
    node to register.  ``request``: default wait for a reply.  ``barrier``: default wait in a barrier.
    ``heartbeat_interval``: nodes send a heartbeat this often.  ``heartbeat_timeout``: a node that sent
    none for this long is dead (and a node whose heartbeats the scheduler did not answer for this long
    considers the scheduler dead).

    >>> Timeouts(heartbeat_interval=0.1, heartbeat_timeout=1.0).request
    60.0
    """

    register: float = 60.0
    request: float = 60.0
    barrier: float = 300.0
    heartbeat_interval: float = 1.0
    heartbeat_timeout: float = 10.0

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ConfigError("Timeouts.%s must be a positive number of seconds, got %r" % (name, value))
            setattr(self, name, float(value))
        if self.heartbeat_timeout <= self.heartbeat_interval:
            raise ConfigError("Timeouts.heartbeat_timeout (%g s) must exceed heartbeat_interval (%g s)"
                              % (self.heartbeat_timeout, self.heartbeat_interval))

    def to_dict(self):
        """The timeouts as a plain dict (for command lines and environment variables)."""
        return asdict(self)

"""The ``ssp`` round policy (``dist_async`` with ``max_staleness``): Angel's stale synchronous parallel.

Every push is applied on arrival, as in ``async``. Each worker numbers its pushes (its *clock*: 1, 2, ...);
a pull tagged with clock ``c`` is answered only when ``c - slowest <= max_staleness``, where ``slowest`` is
the smallest clock of the workers still pushing. So no worker runs more than ``max_staleness`` rounds ahead
of the slowest one; with 0 the workers move in lock step (without summing their gradients). A worker that
sends LEAVE is no longer waited for.

>>> import numpy as np
>>> from sparkps.server.tables.dense import DenseGradient
>>> grad = {"dense": DenseGradient([0], [2], np.ones(2, np.float32))}
>>> ssp = BoundedStaleness(worker_ids=[3, 4], max_staleness=1)
>>> [c.round for c in ssp.push(3, 1, grad)], ssp.wait_pull(1, "a")
([1], True)
>>> ssp.push(3, 2, grad) and ssp.wait_pull(2, "b")
False
>>> [c.round for c in ssp.push(4, 1, grad)], ssp.mark_applied(1)
([1], ['b'])
"""
from sparkps.errors import ClusterError, ConfigError
from sparkps.server.policy.rounds import CompletedRound, RoundPolicy


class BoundedStaleness(RoundPolicy):
    """Policy ``ssp``: apply every push at once; hold a pull while its worker is too far ahead. A refused push
    fails no round (:class:`RoundPolicy`'s ``fail_round``/``failure``): it is applied on arrival or not at all."""

    needs_round = True
    answers_round = False

    def __init__(self, worker_ids, max_staleness=0):
        if isinstance(max_staleness, bool) or not isinstance(max_staleness, int) or max_staleness < 0:
            raise ConfigError("max_staleness must be a non-negative int, got %r" % (max_staleness,))
        self.max_staleness = max_staleness
        self.clock = {w: 0 for w in worker_ids}
        self.active = set(worker_ids)
        self.waits = 0  # pulls that had to wait for a slower worker
        self._parked = []

    @property
    def slowest(self):
        """The smallest clock of the workers still pushing (the largest clock once all left)."""
        clocks = [self.clock[w] for w in self.active] or list(self.clock.values()) or [0]
        return min(clocks) if self.active else max(clocks)

    def push(self, worker, round_, updates):
        """Advance ``worker``'s clock to ``round_``; its updates are applied now."""
        if worker not in self.clock:
            raise ClusterError("PUSH from node %s, which is not a worker of this cluster" % worker, node=worker)
        if round_ <= self.clock[worker]:
            raise ClusterError("worker node %s pushed clock %d again (its last was %d)"
                               % (worker, round_, self.clock[worker]), node=worker)
        self.clock[worker] = round_
        return [CompletedRound(round_, updates, 1.0, 1)]

    def leave(self, worker):
        """``worker`` pushes no more: it no longer holds the others back."""
        if worker not in self.clock:
            raise ClusterError("LEAVE from node %s, which is not a worker of this cluster" % worker, node=worker)
        self.active.discard(worker)
        return [CompletedRound(self.clock[worker], {}, 1.0, 0)]  # nothing to apply; releases parked pulls

    def wait_pull(self, round_, token):
        """True if a worker at clock ``round_`` is within the bound; otherwise park ``token``."""
        if round_ - self.slowest <= self.max_staleness:
            return True
        self.waits += 1
        self._parked.append((round_, token))
        return False

    def mark_applied(self, round_):
        """Returns the parked tokens now within the bound (the slowest clock may have moved)."""
        bound = self.slowest + self.max_staleness
        ready = [t for r, t in self._parked if r <= bound]
        self._parked = [(r, t) for r, t in self._parked if r > bound]
        return ready

    def parked(self):
        """Tokens still waiting for a slower worker."""
        return [t for _, t in self._parked]

    def unapplied(self, worker):
        """Pushes of ``worker`` received but not applied yet: none, every push is applied on arrival."""
        return 0

    def status(self):
        """Counters for the cluster status: the clocks and how many pulls waited."""
        return {"policy": "ssp", "max_staleness": self.max_staleness, "waits": self.waits,
                "clocks": {str(w): c for w, c in self.clock.items()}}

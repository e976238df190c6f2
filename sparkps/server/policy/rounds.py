"""The ``sync`` and ``async`` round policies of one server (see :mod:`sparkps.server.policy`).

``sync`` (``dist_sync``) keeps explicit rounds: who pushed which round, when a round is complete.

Every worker numbers its pushes (its *round*, 1, 2, ...). A round is complete when every *active* worker
pushed it; the server then applies the summed gradient once. Rounds are applied in increasing order, and a
pull for round ``r`` is answered only once every round up to ``r`` has been applied.

A refused push (a NaN or infinity, ``nonfinite='fail'``) fails its round: ``fail_round`` hands back the
pulls parked for it and later rounds, which the server answers with the refusal at once, and ``failure``
answers every later pull of them the same way (instead of each worker waiting out its request timeout).

Uneven data: a worker that has no more batches sends LEAVE and is no longer waited for; later rounds
complete with the workers still active. The gradients are *summed* and the workers scale them by
``1 / (batch * num_workers)`` (MXNet's rescale_grad), so a round that only ``k`` of ``W`` workers
contribute to is scaled by ``W / k`` (:attr:`CompletedRound.scale`): the applied step stays the mean
gradient of the contributors, as large as in a full round.

``async`` (``dist_async``) applies every push at once and answers every pull at once.

No sockets here: the server feeds events in and acts on what comes back. Updates are whatever a table's
``gradient`` returns; the policy only sums them with ``update.add``.

>>> import numpy as np
>>> from sparkps.server.tables.dense import DenseGradient
>>> rounds = SyncRounds(worker_ids=[3, 4])
>>> rounds.push(3, 1, {"dense": DenseGradient([0], [2], np.ones(2, np.float32))})
[]
>>> [(c.round, c.scale, c.updates["dense"].flat.tolist())
...  for c in rounds.push(4, 1, {"dense": DenseGradient([0], [2], np.ones(2, np.float32))})]
[(1, 1.0, [2.0, 2.0])]
"""
from abc import ABC, abstractmethod
from typing import NamedTuple

from sparkps.errors import ClusterError


class CompletedRound(NamedTuple):
    """A round ready to apply: the summed update per table name and the factor to multiply it by."""
    round: int
    updates: dict
    scale: float
    contributors: int


class RoundSum:
    """The sum so far of one round's updates, per table, and the workers that contributed.

    The updates are summed in the order of the workers' ids, whatever order their pushes arrive in: a float sum
    depends on its order, and with three or more workers an order of arrival would make two runs of one seed end in
    models a few last bits apart, then further. A push is folded in once the pushes of every lower worker are;
    until then it waits (at most the pushes of the workers ahead of a slow one), and ``total`` folds the waiting
    ones in order when the round completes (a worker that left never pushes)."""

    def __init__(self, workers=()):
        self.contributors = set()
        self._order = sorted(workers)
        self._next = 0               # the first worker of _order whose push is not in the sum yet
        self._sum = {}
        self._waiting = {}

    def add(self, worker, updates):
        """Count ``worker``'s ``updates`` ({table name: update}) in the round."""
        self.contributors.add(worker)
        self._waiting[worker] = updates
        while self._next < len(self._order) and self._order[self._next] in self._waiting:
            self._fold(self._waiting.pop(self._order[self._next]))
            self._next += 1

    def total(self):
        """``{table name: summed update}`` of every contributor, summed in the order of their ids."""
        for worker in sorted(self._waiting):
            self._fold(self._waiting.pop(worker))
        return self._sum

    def _fold(self, updates):
        for table, update in updates.items():
            known = self._sum.get(table)
            self._sum[table] = update if known is None else known.add(update)


class RoundPolicy(ABC):
    """The base of every round policy (the contract in :mod:`sparkps.server.policy`); ``register_policy`` takes
    only its subclasses, so the server asks a policy what it declares and never probes it. Declared here:
    ``needs_round``/``answers_round`` (False), ``applied`` (0), ``is_stale`` (never), ``status()`` (no counters;
    the server adds the policy's name), ``fail_round``/``failure`` (nothing waits for a round, so nothing fails)."""

    needs_round = False
    answers_round = False
    applied = 0

    @abstractmethod
    def push(self, worker, round_, updates):
        """``worker`` pushed ``{table name: update}`` for ``round_``: the rounds now ready to apply, in order."""

    @abstractmethod
    def leave(self, worker):
        """``worker`` pushes no more (LEAVE): the rounds that waited only for it, in order."""

    @abstractmethod
    def wait_pull(self, round_, token):
        """True when a pull of ``round_`` may be answered now; otherwise ``token`` is parked."""

    @abstractmethod
    def mark_applied(self, round_):
        """The server applied ``round_``: the parked tokens that may now be answered."""

    @abstractmethod
    def parked(self):
        """Tokens still parked (answered with an ERROR when the server stops)."""

    @abstractmethod
    def unapplied(self, worker):
        """How many of ``worker``'s pushes were received but wait in rounds not applied yet."""

    def is_stale(self, round_):
        """Whether a push of ``round_`` will be dropped as stale (only a policy that ``answers_round`` drops)."""
        return False

    def status(self):
        """The policy's counters for the cluster status (none here)."""
        return {}

    def fail_round(self, round_, text):
        """A push to ``round_`` was refused (``text``): the round cannot complete. Returns the parked pull tokens
        to answer with ``text`` now (none here: nothing waits for a round)."""
        return []

    def failure(self, round_):
        """The refusal that failed ``round_`` or an earlier round (a pull of it is answered with it), or None."""
        return None


class AsyncUpdates(RoundPolicy):
    """Policy ``async``: every push is applied at once, every pull answered at once."""
    needs_round = False
    answers_round = False

    def __init__(self, worker_ids):
        self.worker_ids = set(worker_ids)

    def push(self, worker, round_, updates):
        return [CompletedRound(0, updates, 1.0, 1)]

    def leave(self, worker):
        return []

    def wait_pull(self, round_, token):
        return True

    def mark_applied(self, round_):
        return []

    def parked(self):
        return []

    def unapplied(self, worker):
        """Pushes of ``worker`` received but not applied yet: none, every push is applied on arrival."""
        return 0


class ParkedPulls(RoundPolicy):
    """Pulls that wait until their round is applied: ``applied`` (the last applied round) and the tokens parked
    until then. A round policy sets both in its ``__init__``; ``_failed`` is ``(round, refusal)`` once a push
    was refused (``fail_round``)."""

    answers_round = False
    _failed = None

    def wait_pull(self, round_, token):
        """True if round ``round_`` is applied; otherwise park ``token`` for :meth:`mark_applied`."""
        if round_ <= self.applied:
            return True
        self._parked.append((round_, token))
        return False

    def mark_applied(self, round_):
        """Note that ``round_`` was applied; returns the parked tokens whose round is now applied."""
        self.applied = max(self.applied, round_)
        ready = [t for r, t in self._parked if r <= self.applied]
        self._parked = [(r, t) for r, t in self._parked if r > self.applied]
        return ready

    def fail_round(self, round_, text):
        """A push to ``round_`` was refused (``text``): that round and every later one cannot complete, so
        the pulls parked for them are returned, to be answered with ``text`` at once (not a timeout), and every
        later pull of them gets it too (``failure``)."""
        failed = self._failed
        if failed is None or round_ < failed[0]:
            self._failed = (round_, text)
        ready = [t for r, t in self._parked if r >= round_]
        self._parked = [(r, t) for r, t in self._parked if r < round_]
        return ready

    def failure(self, round_):
        failed = self._failed
        return failed[1] if failed is not None and round_ >= failed[0] else None

    def parked(self):
        """Tokens still waiting for a round (answered with an error when the server stops)."""
        return [t for _, t in self._parked]

    def unapplied(self, worker):
        """Pushes of ``worker`` waiting in rounds not applied yet (a checkpoint taken now does not hold them)."""
        return sum(1 for pending in self._pending.values() if worker in pending.contributors)


class SyncRounds(ParkedPulls):
    """Policy ``sync``: round bookkeeping for one server.

    ``push(worker, round, updates)`` and ``leave(worker)`` return the rounds that became complete, in order;
    ``wait_pull(round, token)`` either says the round is applied (True) or parks ``token`` until it is;
    ``mark_applied(round)`` returns the parked tokens that may now be answered.
    """

    needs_round = True

    def __init__(self, worker_ids):
        self.num_workers = len(worker_ids)
        self.active = set(worker_ids)
        self.left = set()
        self.applied = 0
        self.last_pushed = {w: 0 for w in worker_ids}
        self._pending = {}
        self._parked = []

    def push(self, worker, round_, updates):
        """Record ``worker``'s updates ``{table name: update}`` for ``round_``; returns completed rounds."""
        self._check_push(worker, round_)
        self.last_pushed[worker] = round_
        self._pending.setdefault(round_, RoundSum(self.last_pushed)).add(worker, updates)
        return self._complete()

    def leave(self, worker):
        """``worker`` pushes no more; rounds waiting only for it complete now. Idempotent."""
        if worker not in self.last_pushed:
            raise ClusterError("LEAVE from node %s, which is not a worker of this cluster" % worker,
                               node=worker)
        self.active.discard(worker)
        self.left.add(worker)
        return self._complete()

    def _check_push(self, worker, round_):
        if worker not in self.last_pushed:
            raise ClusterError("PUSH from node %s, which is not a worker of this cluster" % worker, node=worker)
        if worker in self.left:
            raise ClusterError("PUSH for round %d from worker node %s after it left the sync rounds"
                               % (round_, worker), node=worker)
        if round_ <= self.last_pushed[worker] or round_ <= self.applied:
            raise ClusterError("worker node %s pushed round %d again (its last round was %d, applied up to %d)"
                               % (worker, round_, self.last_pushed[worker], self.applied), node=worker)

    def _complete(self):
        done = []
        for round_ in sorted(self._pending):
            pending = self._pending[round_]
            if not self.active <= pending.contributors:
                break
            del self._pending[round_]
            count = len(pending.contributors)
            done.append(CompletedRound(round_, pending.total(), self.num_workers / count, count))
        return done

"""Pure state of ``dist_sync`` rounds on one server: who pushed which round, when a round is complete.

Every worker numbers its pushes (its *round*, 1, 2, ...). A round is complete when every *active* worker
pushed it; the server then applies the summed gradient once. Rounds are applied in increasing order, and a
pull for round ``r`` is answered only once every round up to ``r`` has been applied.

Uneven data: a worker that has no more batches sends LEAVE and is no longer waited for; later rounds
complete with the workers still active. The gradients are *summed* and the workers scale them by
``1 / (batch * num_workers)`` (MXNet's rescale_grad), so a round that only ``k`` of ``W`` workers
contribute to is scaled by ``W / k`` (:attr:`CompletedRound.scale`): the applied step stays the mean
gradient of the contributors, as large as in a full round.

No sockets here: the server feeds events in and acts on what comes back.

>>> rounds = SyncRounds(worker_ids=[3, 4])
>>> rounds.push(3, 1, {0: np.ones(2, np.float32)})
[]
>>> [(c.round, c.scale, c.grads[0].tolist()) for c in rounds.push(4, 1, {0: np.ones(2, np.float32)})]
[(1, 1.0, [2.0, 2.0])]
"""
from typing import NamedTuple

import numpy as np

from sparkps.errors import ClusterError


class CompletedRound(NamedTuple):
    """A round ready to apply: the summed gradient per piece id and the factor to multiply it by."""
    round: int
    grads: dict
    scale: float
    contributors: int


class _Pending:
    """The sum so far of one round's gradients and the workers that contributed."""

    def __init__(self):
        self.contributors = set()
        self.grads = {}
        self.owned = set()

    def add(self, grads):
        for pid, grad in grads.items():
            if pid not in self.grads:
                self.grads[pid] = grad  # kept as received; copied only when a second gradient arrives
            elif pid in self.owned:
                self.grads[pid] += grad
            else:
                self.grads[pid] = np.add(self.grads[pid], grad, dtype=np.float32)
                self.owned.add(pid)


class SyncRounds:
    """Round bookkeeping for one server.

    ``push(worker, round, grads)`` and ``leave(worker)`` return the rounds that became complete, in order;
    ``wait_pull(round, token)`` either says the round is applied (True) or parks ``token`` until it is;
    ``mark_applied(round)`` returns the parked tokens that may now be answered.
    """

    def __init__(self, worker_ids):
        self.num_workers = len(worker_ids)
        self.active = set(worker_ids)
        self.left = set()
        self.applied = 0
        self.last_pushed = {w: 0 for w in worker_ids}
        self._pending = {}
        self._parked = []

    def push(self, worker, round_, grads):
        """Record ``worker``'s gradients ``{piece id: array}`` for ``round_``; returns completed rounds."""
        self._check_push(worker, round_)
        self.last_pushed[worker] = round_
        self._pending.setdefault(round_, _Pending())
        self._pending[round_].contributors.add(worker)
        self._pending[round_].add(grads)
        return self._complete()

    def leave(self, worker):
        """``worker`` pushes no more; rounds waiting only for it complete now. Idempotent."""
        if worker not in self.last_pushed:
            raise ClusterError("LEAVE from node %s, which is not a worker of this cluster" % worker,
                               node=worker)
        self.active.discard(worker)
        self.left.add(worker)
        return self._complete()

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

    def parked(self):
        """Tokens still waiting for a round (answered with an error when the server stops)."""
        return [t for _, t in self._parked]

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
            done.append(CompletedRound(round_, pending.grads, self.num_workers / count, count))
        return done

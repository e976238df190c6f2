"""The ``sync_replicas`` round policy (``dist_sync_replicas``): TensorFlow's SyncReplicasOptimizer on one server.

Rounds are the server's global steps. A worker pushes a gradient computed on the weights of round
``applied``; it is tagged ``applied + 1``. Round ``r`` is applied as soon as ``replicas_to_aggregate`` (N)
workers pushed it, with the mean of those N gradients; pushes tagged with a round already applied are
*stale*: dropped and counted (:attr:`SyncReplicas.dropped`). The pull of a worker whose push was stale is
answered at once with the current weights, so a late worker continues from the current round (the worker
learns that round from the pull's reply, see :class:`sparkps.worker.kvworker.KVWorker`).

Uneven data never hangs: a worker that sends LEAVE is not waited for; once fewer than N workers are
active, a round completes when every active worker pushed it.

The workers scale their gradients by ``1 / (batch * num_workers)`` (MXNet's rescale_grad), so a round of
``k`` contributions is applied with scale ``num_workers / k``: the step is the mean gradient of those k.

>>> import numpy as np
>>> from sparkps.server.tables.dense import DenseGradient
>>> grad = lambda v: {"dense": DenseGradient([0], [2], np.full(2, v, np.float32))}
>>> rounds = SyncReplicas(worker_ids=[3, 4, 5], replicas_to_aggregate=2)
>>> rounds.push(3, 1, grad(1.0))
[]
>>> [(c.round, c.scale, c.contributors) for c in rounds.push(4, 1, grad(3.0))]
[(1, 1.5, 2)]
>>> rounds.push(5, 1, grad(9.0)), rounds.dropped
([], 1)
"""
from sparkps.errors import ClusterError, ConfigError
from sparkps.server.policy.rounds import CompletedRound, ParkedPulls, RoundSum


class SyncReplicas(ParkedPulls):
    """Policy ``sync_replicas``: apply a round on the first ``replicas_to_aggregate`` pushes of it.

    ``replicas_to_aggregate`` defaults to every worker; ``total_num_replicas`` (if given) must equal the
    number of workers of the cluster (TensorFlow's name; here every worker is a replica).
    """

    needs_round = True
    answers_round = True  # a pull's reply says which round the weights are of

    def __init__(self, worker_ids, replicas_to_aggregate=None, total_num_replicas=None):
        self.num_workers = len(worker_ids)
        if total_num_replicas is not None and total_num_replicas != self.num_workers:
            raise ConfigError("total_num_replicas=%r but the cluster has %d workers"
                              % (total_num_replicas, self.num_workers))
        wanted = self.num_workers if replicas_to_aggregate is None else replicas_to_aggregate
        if isinstance(wanted, bool) or not isinstance(wanted, int) or not 1 <= wanted <= self.num_workers:
            raise ConfigError("replicas_to_aggregate must be an int in 1..%d (the workers), got %r"
                              % (self.num_workers, replicas_to_aggregate))
        self.replicas_to_aggregate = wanted
        self.active = set(worker_ids)
        self.applied = 0
        self.completed = 0  # the last round handed out to apply (the server applies it before the next event)
        self.dropped = 0
        self.dropped_by_worker = {w: 0 for w in worker_ids}
        self._pending = {}
        self._parked = []

    def push(self, worker, round_, updates):
        """Record ``worker``'s updates for ``round_``; a stale one is dropped. Returns completed rounds."""
        if worker not in self.dropped_by_worker:
            raise ClusterError("PUSH from node %s, which is not a worker of this cluster" % worker, node=worker)
        if worker not in self.active:
            raise ClusterError("PUSH for round %d from worker node %s after it left the rounds" % (round_, worker),
                               node=worker)
        if round_ <= self.completed:
            self.dropped += 1
            self.dropped_by_worker[worker] += 1
            return []
        pending = self._pending.setdefault(round_, RoundSum(self.dropped_by_worker))
        if worker in pending.contributors:
            raise ClusterError("worker node %s pushed round %d twice" % (worker, round_), node=worker)
        pending.add(worker, updates)
        return self._complete()

    def is_stale(self, round_):
        """Whether a push tagged ``round_`` would be (was) dropped."""
        return round_ <= self.completed

    def leave(self, worker):
        """``worker`` pushes no more; rounds waiting only for it complete now. Idempotent."""
        if worker not in self.dropped_by_worker:
            raise ClusterError("LEAVE from node %s, which is not a worker of this cluster" % worker, node=worker)
        self.active.discard(worker)
        return self._complete()

    def status(self):
        """Counters for the cluster status: rounds applied, stale pushes dropped (in all and per worker)."""
        return {"policy": "sync_replicas", "applied": self.applied, "dropped": self.dropped,
                "dropped_by_worker": {str(w): n for w, n in self.dropped_by_worker.items()}}

    def _complete(self):
        done = []
        while self.completed + 1 in self._pending:
            pending = self._pending[self.completed + 1]
            if len(pending.contributors) < self.replicas_to_aggregate and not self.active <= pending.contributors:
                break
            self.completed += 1
            del self._pending[self.completed]
            count = len(pending.contributors)
            done.append(CompletedRound(self.completed, pending.total(), self.num_workers / count, count))
        return done

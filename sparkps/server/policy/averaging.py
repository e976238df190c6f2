"""The ``average`` round policy (``dist_model_average``): a round's pushes are weights, applied as their mean.

Rounds are kept as in ``sync`` (:class:`SyncRounds`: every active worker's push, LEAVE for uneven data),
but what the workers push are their local weights, and the server holds no optimizer, so a table *becomes*
what it is applied with: the sum of the round's weights scaled by ``1 / contributors``, their mean. Every
worker then pulls the average and trains on from it.

>>> import numpy as np
>>> from sparkps.server.tables.dense import DenseGradient
>>> avg = WeightAverage(worker_ids=[3, 4])
>>> avg.push(3, 1, {"dense": DenseGradient([0], [2], np.array([1.0, 2.0], np.float32))})
[]
>>> [(c.scale, (c.updates["dense"].flat * c.scale).tolist())
...  for c in avg.push(4, 1, {"dense": DenseGradient([0], [2], np.array([3.0, 6.0], np.float32))})]
[(0.5, [2.0, 4.0])]
"""
from sparkps.server.policy.rounds import CompletedRound, SyncRounds


class WeightAverage(SyncRounds):
    """Policy ``average``: sync rounds whose summed pushes are applied scaled by ``1 / contributors``."""

    def _complete(self):
        return [CompletedRound(done.round, done.updates, 1.0 / done.contributors, done.contributors)
                for done in super()._complete()]

    def status(self):
        """Counters for the cluster status: rounds averaged."""
        return {"policy": "average", "applied": self.applied}

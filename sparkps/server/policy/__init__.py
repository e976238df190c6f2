"""Round policies: when the updates pushed by the workers are applied, and when a pull may be answered.

The server feeds each policy events and acts on what comes back (no sockets here, dask's
``handle_stimulus`` shape). A policy is a class built with the worker node ids, with:

``needs_round``
    True when PUSH and PULL must carry a ``round`` (the server answers an ERROR naming the field if not).
``answers_round``
    True when a pull's reply names the applied round (``sync_replicas``); such a policy also has
    ``applied`` (the last applied round) and ``is_stale(round) -> bool`` (a push of ``round`` will be dropped).
``push(worker, round, updates) -> [CompletedRound]``
    ``worker`` pushed ``{table name: update}`` (an update as the table's ``gradient`` returns it, summed
    with ``update.add``); returns the rounds now ready to apply, in order. Raises ClusterError naming the
    worker for a push the policy refuses.
``leave(worker) -> [CompletedRound]``
    ``worker`` pushes no more (LEAVE); rounds that waited only for it complete.
``wait_pull(round, token) -> bool``
    True when a pull for ``round`` may be answered now; otherwise ``token`` is parked.
``mark_applied(round) -> [token]``
    The server applied ``round``: the parked tokens that may now be answered.
``parked() -> [token]``
    Tokens still parked (answered with an ERROR when the server stops).
``unapplied(worker) -> int``
    How many of ``worker``'s pushes were received but wait in rounds not applied yet (a checkpoint taken now
    holds the worker's other pushes: its position in its data).

:class:`CompletedRound` carries ``updates`` and the ``scale`` the server applies them with. Adding a policy
(sync replicas, model averaging, elastic averaging, bounded staleness) is one module in this package and one
:func:`register_policy` call. INIT's ``sync`` field picks ``"sync"`` or ``"async"``; its ``policy`` field
(``{"name": ..., options}``) picks any registered policy with its options (``sync_replicas``:
``replicas_to_aggregate``, ``total_num_replicas``; ``ssp``: ``max_staleness``; ``average``: none). A policy
derives from :class:`RoundPolicy` (``register_policy`` refuses any other class), which declares the methods above
and gives defaults for ``status()`` (counters for the cluster status: none), ``is_stale`` (never) and
``fail_round(round, text) -> [token]`` / ``failure(round) -> text or None`` (a refused push fails its round: the
parked pulls of it and later rounds, and every later pull of them, are answered with the refusal; ``sync``
overrides them, the others keep "nothing fails").

>>> sorted(ROUND_POLICIES)
['async', 'average', 'ssp', 'sync', 'sync_replicas']
"""
import inspect

from sparkps.errors import ConfigError
from sparkps.server.policy.averaging import WeightAverage
from sparkps.server.policy.replicas import SyncReplicas
from sparkps.server.policy.rounds import AsyncUpdates, CompletedRound, RoundPolicy, SyncRounds
from sparkps.server.policy.staleness import BoundedStaleness

ROUND_POLICIES = {}


def register_policy(name, cls):
    """Make the round policy ``cls`` (a :class:`RoundPolicy` subclass; ConfigError naming it otherwise) available
    under ``name``."""
    if not (isinstance(cls, type) and issubclass(cls, RoundPolicy)):
        raise ConfigError("round policy %r must be a RoundPolicy subclass, got %r" % (name, cls))
    if name in ROUND_POLICIES and ROUND_POLICIES[name] is not cls:
        raise ConfigError("round policy %r is already registered (%s)" % (name, ROUND_POLICIES[name].__name__))
    ROUND_POLICIES[name] = cls


def policy_options(cls):
    """The option names the policy class ``cls`` takes besides the worker ids."""
    return [p for p in inspect.signature(cls).parameters if p != "worker_ids"]


def create_policy(name, worker_ids, options=None):
    """A new round policy of kind ``name`` for the workers ``worker_ids``, with ``options`` (a dict).

    ConfigError naming the known policies for an unknown ``name``, and naming the option for an unknown one.
    """
    cls = ROUND_POLICIES.get(name)
    if cls is None:
        raise ConfigError("unknown round policy %r (known: %s)" % (name, ", ".join(sorted(ROUND_POLICIES))))
    options = dict(options or {})
    unknown = sorted(set(options) - set(policy_options(cls)))
    if unknown:
        raise ConfigError("round policy %r has no option(s) %s (known: %s)"
                          % (name, ", ".join(unknown), ", ".join(policy_options(cls)) or "none"))
    return cls(worker_ids, **options)


register_policy("sync", SyncRounds)
register_policy("async", AsyncUpdates)
register_policy("sync_replicas", SyncReplicas)
register_policy("ssp", BoundedStaleness)
register_policy("average", WeightAverage)

__all__ = ["AsyncUpdates", "BoundedStaleness", "CompletedRound", "ROUND_POLICIES", "SyncReplicas", "SyncRounds",
           "RoundPolicy", "WeightAverage", "create_policy", "policy_options", "register_policy"]

"""Round policies: when the updates pushed by the workers are applied, and when a pull may be answered.

The server feeds each policy events and acts on what comes back (no sockets here, dask's
``handle_stimulus`` shape). A policy is a class built with the worker node ids, with:

``needs_round``
    True when PUSH and PULL must carry a ``round`` (the server answers an ERROR naming the field if not).
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

:class:`CompletedRound` carries ``updates`` and the ``scale`` the server applies them with. Adding a policy
(sync replicas, model averaging, elastic averaging, bounded staleness) is one module in this package and one
:func:`register_policy` call. INIT's ``sync`` field picks ``"sync"`` or ``"async"``.

>>> sorted(ROUND_POLICIES)
['async', 'sync']
"""
from sparkps.errors import ConfigError
from sparkps.ps.server.policy.rounds import AsyncUpdates, CompletedRound, SyncRounds

ROUND_POLICIES = {}


def register_policy(name, cls):
    """Make the round policy ``cls`` available under ``name``."""
    if name in ROUND_POLICIES and ROUND_POLICIES[name] is not cls:
        raise ConfigError("round policy %r is already registered (%s)" % (name, ROUND_POLICIES[name].__name__))
    ROUND_POLICIES[name] = cls


def create_policy(name, worker_ids):
    """A new round policy of kind ``name`` for the workers ``worker_ids``; ConfigError naming the known ones."""
    cls = ROUND_POLICIES.get(name)
    if cls is None:
        raise ConfigError("unknown round policy %r (known: %s)" % (name, ", ".join(sorted(ROUND_POLICIES))))
    return cls(worker_ids)


register_policy("sync", SyncRounds)
register_policy("async", AsyncUpdates)

__all__ = ["AsyncUpdates", "CompletedRound", "ROUND_POLICIES", "SyncRounds", "create_policy", "register_policy"]

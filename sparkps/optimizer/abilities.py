"""What an optimizer class can do, declared on the class and asked by the code that runs it, as a store is asked
``KVStoreBase.is_capable`` (MXNet's ``python/mxnet/kvstore/base.py``) instead of being recognised by its name:

=================  ============================================================================================
ability            meaning (and who asks)
=================  ============================================================================================
``'fused'``        one update of the flat weights of several keys (same learning rate, weight decay and update
                   count) equals the per-key updates: the dense table updates a run of keys at once
                   (:mod:`sparkps.server.tables.dense`)
``'row_wise'``     a per-row form (``Optimizer.update_rows``): a sparse table runs it on gathered rows and their
                   state, rows the gradient does not name keep theirs (:class:`sparkps.optimizer.rowwise.RowOptimizer`)
``'lazy_rows'``    MXNet's row_sparse kernel: a RowSparse gradient updates only its rows (with ``lazy_update``,
                   where the optimizer has that option); without it the gradient is densified
                   (:mod:`sparkps.optimizer.sparse`)
``'row_counts'``   the per-row form reads each row's own update count (Adam's bias correction), kept by the table:
                   the class overrides ``update_rows`` (``register`` refuses one that declares it and does not)
=================  ============================================================================================

A class lists its abilities in ``ABILITIES`` and its state arrays per weight element in ``STATES`` (``num_states()``
when hyper-parameters change the count: SGD's momentum, centered RMSProp). Whether an update of a piece of a weight
equals that piece of the whole update is the class attribute ``elementwise`` (False for LAMB, whose step takes the
norms of the whole weight): the kvstore keeps the keys of an optimizer that is not elementwise whole on one server
(:mod:`sparkps.comm.layout`). A new optimizer is one module with its
``@register``: the dense table, the sparse tables and ``sparkps plan`` read these. Asking for a name outside the
table above is a ConfigError (a misspelt ability must not read as "not capable").
"""
from sparkps.errors import ConfigError

FUSED, ROW_WISE, LAZY_ROWS, ROW_COUNTS = 'fused', 'row_wise', 'lazy_rows', 'row_counts'
KNOWN_ABILITIES = (FUSED, ROW_WISE, LAZY_ROWS, ROW_COUNTS)


def check_ability(ability):
    """``ability`` when it is one of KNOWN_ABILITIES; ConfigError naming it otherwise."""
    if ability not in KNOWN_ABILITIES:
        raise ConfigError(f"unknown optimizer ability {ability!r} (known: {', '.join(KNOWN_ABILITIES)})")
    return ability

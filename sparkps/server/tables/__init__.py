"""Server-side tables: each kind owns its storage, its optimizer state and its update (dense ranges, sparse rows).

The server (:class:`~sparkps.server.kvserver.KVServer`) routes every data request to the table its
``table`` field names (default ``"dense"``, see :mod:`sparkps.comm.protocol`); an INIT for a table not yet
held creates it from the kind registered under the same name. This is the server's one seam, as ps-lite's
``KVServer::set_request_handle``: the transport and the round policy never change when a table kind is added.

A table kind is a class with a ``kind`` attribute (the name it is registered under) and these methods (the server
calls them from its handler thread, one at a time; none blocks except ``save``/``load`` on file I/O):

``init(request)``
    INIT (:class:`~sparkps.comm.protocol.Init`): hold new entries, or overwrite held ones. An INIT whose
    ``kind`` field is set creates the table from that kind (a sparse table named ``user`` is of kind
    ``sparse``); otherwise the kind is the table's name.
``gradient(request) -> update``
    Decode and validate the payload of a PUSH or PUSHPULL (:class:`~sparkps.comm.protocol.Push`) into an
    *update*: any value with ``update.add(other) -> summed update`` (a sync round sums the workers' updates
    with it before the table applies the sum once).
``apply(update, scale=1.0)``
    Apply an update (or a sum of them) once, multiplied by ``scale``, through the table's optimizer.
``read(request) -> numpy array``
    The flat values a PULL (:class:`~sparkps.comm.protocol.Pull`) asks for. The server copies a writeable
    result before its zero-copy send; a read-only one must never change later.
``set_optimizer(config)``, ``set_learning_rate(lr)``
    The optimizer from its JSON config (states restart), and a new learning rate.
``save(directory) -> dict``, ``load(directory)``
    Checkpoints: ``save`` returns reply fields the worker merges into the manifest (``pieces`` and
    ``tables`` lists are concatenated over tables and servers, see :mod:`sparkps.comm.manifest`).
``compact(directory, manifest) -> dict``
    COMMAND compact: merge the incremental saves in ``directory`` into one new base; returns reply fields as
    ``save`` does (``{}`` when there is nothing to merge).
``write_shard(folder) -> dict`` (the ``sparse`` kind only)
    COMMAND write_tables: write this server's rows of the table into ``folder`` as its Parquet shard
    (:mod:`sparkps.rows.shards`); returns the table's manifest fields and the shard's entry.

Adding a kind is one module under this package and one :func:`register_table_kind` call (here, for the kinds
sparkps ships).

>>> sorted(TABLE_KINDS)
['dense', 'sparse']
>>> create_table("dense").kind
'dense'
"""
from sparkps.errors import ConfigError
from sparkps.server.tables.dense import DenseTable

TABLE_KINDS = {}


def register_table_kind(name, cls):
    """Make the table kind ``cls`` available under ``name`` (the ``table`` field of requests)."""
    if name in TABLE_KINDS and TABLE_KINDS[name] is not cls:
        raise ConfigError("table kind %r is already registered (%s)" % (name, TABLE_KINDS[name].__name__))
    TABLE_KINDS[name] = cls


def create_table(name):
    """A new, empty table of the kind registered under ``name``; ConfigError naming the known kinds."""
    cls = TABLE_KINDS.get(name)
    if cls is None:
        raise ConfigError("unknown server table %r (known: %s)" % (name, ", ".join(sorted(TABLE_KINDS))))
    return cls()


def served_sparse_table():
    """A new 'sparse' table (:class:`~sparkps.server.tables.sparse_served.ServedTable`), imported on first
    use: it compiles numba kernels, which a server holding only dense parameters never needs."""
    from sparkps.server.tables.sparse_served import ServedTable
    return ServedTable()


register_table_kind("dense", DenseTable)
register_table_kind("sparse", served_sparse_table)

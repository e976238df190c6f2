"""Parameter-server workers: KVWorker, the non-blocking push/pull client every dist kvstore is built on
(:mod:`sparkps.worker.dist_kvstore` gives it MXNet's KVStore interface). Importing the package registers
``DistKVStore`` under the dist types of ``sparkps.kvstore.create``.

>>> # worker = KVWorker(postoffice, sync=True); rid = worker.push([0], [grad]); worker.wait(rid)
"""
from sparkps.worker.dist_kvstore import DistKVStore
from sparkps.worker.kvworker import KVWorker

__all__ = ["DistKVStore", "KVWorker"]

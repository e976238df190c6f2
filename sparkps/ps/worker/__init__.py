"""Parameter-server workers: KVWorker (non-blocking push/pull) and the MXNet-style DistKVStore.

>>> # kv = sparkps.ps.worker.create_dist_kvstore('dist_sync', scheduler_uri=uri, secret=secret)
"""
from sparkps.ps.worker.dist_kvstore import DistKVStore, create_dist_kvstore
from sparkps.ps.worker.kvworker import KVWorker

__all__ = ["DistKVStore", "KVWorker", "create_dist_kvstore"]

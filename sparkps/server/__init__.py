"""Parameter-server servers: the request handler, tables (dense, ...), round policies, the node runner.

>>> # sparkps.server.run_server(scheduler_uri, secret)        # blocks until the scheduler ends the job
>>> # proc = sparkps.runtime.server_node.spawn_server(scheduler_uri, secret)  # same, as a subprocess
"""
from sparkps.server.kvserver import KVServer
from sparkps.server.runner import run_server

__all__ = ["KVServer", "run_server"]

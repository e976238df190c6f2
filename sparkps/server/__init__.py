"""Parameter-server servers: key layout, sync rounds, server-side optimizer, checkpoints, the node runner.

>>> # sparkps.server.run_server(scheduler_uri, secret)        # blocks until the scheduler ends the job
>>> # proc = sparkps.server.spawn_server(scheduler_uri, secret)  # same, as a subprocess
"""
from sparkps.server.kvserver import KVServer
from sparkps.server.layout import KeyLayout, Piece
from sparkps.server.runner import run_server, spawn_server

__all__ = ["KVServer", "KeyLayout", "Piece", "run_server", "spawn_server"]

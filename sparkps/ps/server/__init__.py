"""Parameter-server servers: key layout, sync rounds, server-side optimizer, checkpoints, the node runner.

>>> # sparkps.ps.server.run_server(scheduler_uri, secret)        # blocks until the scheduler ends the job
>>> # proc = sparkps.ps.server.spawn_server(scheduler_uri, secret)  # same, as a subprocess
"""
from sparkps.ps.server.kvserver import KVServer
from sparkps.ps.server.layout import KeyLayout, Piece
from sparkps.ps.server.runner import run_server, spawn_server

__all__ = ["KVServer", "KeyLayout", "Piece", "run_server", "spawn_server"]

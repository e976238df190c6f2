"""A parameter-server node as a supervised subprocess (``python -m sparkps.server``), as Spark tasks and the
benchmarks start it.

>>> # server = spawn_server(scheduler.uri, scheduler.secret, rank=0)
>>> # ...; server.wait(30); or server.stop(grace=5) to end it early
"""
import json
import sys

from sparkps.runtime.supervisor import importing_env, spawn


def spawn_server(scheduler_uri, secret, rank=None, env=None, timeouts=None, stderr=None, host="127.0.0.1",
                 curve=False, relay=None):
    """Start ``python -m sparkps.server`` as a supervised subprocess; returns its
    :class:`~sparkps.runtime.supervisor.Child` (Popen's interface, plus ``stop(grace)``). Never blocks.

    ``host`` is the address the server binds and advertises (an address other nodes can reach). The secret
    travels in the child's environment (``SPARKPS_SECRET``), not on its command line, and so does ``curve``
    (``SPARKPS_CURVE``: the server's sockets use CURVE with keys derived from the secret). The server imports
    what this process imports (its ``sys.path`` as the child's PYTHONPATH: ``supervisor.importing_env``), so a
    Spark task running sparkps from a ``--py-files`` zip starts a server that runs from the same zip. ``relay``
    (a text stream): the server's output goes there line by line (``[server N] line``), its last line kept in the
    child's ``last_line`` (why it exited, when it fails).
    """
    child_env = importing_env(env)
    child_env["SPARKPS_SECRET"] = secret
    child_env["SPARKPS_CURVE"] = "1" if curve else "0"
    command = [sys.executable, "-m", "sparkps.server", "--scheduler", scheduler_uri, "--host", host]
    if rank is not None:
        command += ["--rank", str(int(rank))]
    if timeouts is not None:
        command += ["--timeouts", json.dumps(timeouts.to_dict())]
    return spawn("server %s" % ("?" if rank is None else rank), command, env=child_env, stderr=stderr, relay=relay)

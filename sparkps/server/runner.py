"""Run a server node: in this process (``run_server``) or from the shell (a subprocess:
:func:`sparkps.runtime.server_node.spawn_server`).

``python -m sparkps.server --scheduler tcp://127.0.0.1:PORT`` (secret from ``SPARKPS_SECRET``, CURVE on with
``SPARKPS_CURVE=1``, tables written only below ``SPARKPS_TABLES_ROOT``) registers
with the scheduler, serves until the scheduler sends TERMINATE, and exits 0; it exits 1 with a message
naming the peer when the job fails (a dead node, a lost scheduler).
"""
import argparse
import json
import logging
import sys
import threading

from sparkps.comm.message import curve_from_env
from sparkps.comm.postoffice import Postoffice
from sparkps.comm.settings import NodeSettings, resolve_start_tables, resolve_tables_root
from sparkps.comm.timeouts import Timeouts
from sparkps.errors import ClusterError, SparkpsError
from sparkps.server.kvserver import KVServer

log = logging.getLogger(__name__)


def run_server(scheduler_uri=None, secret=None, rank=None, host="127.0.0.1", transport="tcp",
               zmq_context=None, timeouts=None, curve=False, on_started=None, tables_root=None,
               start_tables=None):
    """Register a server node and serve until the scheduler ends the job.

    ``tables_root``: the folder below which COMMAND write_tables may write (default ``SPARKPS_TABLES_ROOT``; None:
    the server writes no table), fixed now for the server's whole life. ``start_tables``: the tables folder of the
    model a fit starts from, read on COMMAND load_tables (default ``SPARKPS_START_TABLES``; None: none).

    Blocks until TERMINATE (returns None) or a job failure (raises NodeDied / ClusterError naming the
    node at fault); registration waits at most ``timeouts.register`` seconds. ``on_started(server)``
    is called with the KVServer once the node is registered (tests use it to inspect the server).
    """
    scheduler_uri, secret, rank = NodeSettings.resolve(scheduler_uri, secret, rank)
    postoffice = Postoffice("server", scheduler_uri, secret, rank=rank, host=host, transport=transport,
                            zmq_context=zmq_context, timeouts=timeouts, curve=curve)
    server = KVServer(postoffice, tables_root=resolve_tables_root(tables_root),
                      start_tables=resolve_start_tables(start_tables))
    postoffice.start(server.handle)
    stopping = threading.Event()
    reports = threading.Thread(target=report_counters, args=(server, postoffice, stopping), daemon=True,
                               name="sparkps-counters-%s" % postoffice.name)
    reports.start()
    try:
        if on_started is not None:
            on_started(server)
        postoffice.wait_for_termination()
    finally:
        stopping.set()
        reports.join(5.0)
        server.close("%s is stopping" % postoffice.name)
        postoffice.stop()


def report_counters(server, postoffice, stopping):
    """Send the server's request counters (``KVServer.counters``) to the scheduler every heartbeat interval when they
    changed, until ``stopping`` is set or the node failed (what ``sparkps status`` shows while the job runs)."""
    last = None
    while not stopping.wait(postoffice.timeouts.heartbeat_interval):
        counters = server.counters()
        if counters == last:
            continue
        try:
            postoffice.report_progress({"counters": counters})
        except ClusterError:
            return
        last = counters


def main(argv=None):
    """Entry point of ``python -m sparkps.server``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m sparkps.server",
                                     description="Run one sparkps parameter-server node until the job ends.")
    parser.add_argument("--scheduler", help="scheduler URI (default: $SPARKPS_SCHEDULER_URI)")
    parser.add_argument("--rank", type=int, help="requested server rank (default: $SPARKPS_RANK or any)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--timeouts", help="JSON object of Timeouts fields, e.g. '{\"request\": 30}'")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    threading.Thread(target=_warm_tables, name="sparkps-warm-tables", daemon=True).start()
    try:
        timeouts = Timeouts(**json.loads(args.timeouts)) if args.timeouts else None
        run_server(args.scheduler, None, args.rank, host=args.host, timeouts=timeouts, curve=curve_from_env())
    except (SparkpsError, ValueError, TypeError) as exc:
        print("sparkps server: %s" % exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _warm_tables():
    """Import the sparse tables while the node registers (their compiled id index loads only for a table that grows
    large: rows.index.GrowingRowIndex)."""
    try:
        from sparkps.server.tables import sparse_served  # noqa: F401 - the import is the warm-up
    except Exception:     # a warm-up only: the first real use reports any problem
        logging.getLogger(__name__).debug("importing the sparse tables failed", exc_info=True)

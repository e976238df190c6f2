"""An in-process parameter-server cluster for tests: a scheduler, S servers and W workers in threads.

    with PSCluster(num_servers=2, num_workers=2, transport="inproc") as cluster:
        results = cluster.run_workers(lambda kv: ...)       # one call per worker, in threads

Servers run ``sparkps.ps.server.run_server`` on threads; workers are DistKVStores created concurrently
(registration blocks until every node arrived). Tear-down closes the workers, waits for the scheduler to
stop the servers, joins every thread and terminates the zmq context (which only returns once every socket
is closed: a leaked socket makes the tear-down fail).
"""
import threading

import zmq

from sparkps.ps.comm.timeouts import Timeouts
from sparkps.ps.scheduler import Scheduler
from sparkps.ps.server import run_server
from sparkps import kvstore

FAST = dict(register=20.0, request=20.0, barrier=30.0, heartbeat_interval=0.2, heartbeat_timeout=3.0)


def run_in_threads(functions, timeout):
    """Call every function on its own thread; returns their results or raises the first exception.

    Raises TimeoutError naming the calls still running after ``timeout`` seconds.
    """
    results, errors = [None] * len(functions), [None] * len(functions)

    def call(i):
        try:
            results[i] = functions[i]()
        except BaseException as exc:  # handed to the caller
            errors[i] = exc

    threads = [threading.Thread(target=call, args=(i,), daemon=True, name="ps-test-%d" % i)
               for i in range(len(functions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    hung = [i for i, t in enumerate(threads) if t.is_alive()]
    if hung:
        raise TimeoutError("calls %s still running after %g s" % (hung, timeout))
    for exc in errors:
        if exc is not None:
            raise exc
    return results


class PSCluster:
    """Scheduler + servers (threads) + worker kvstores, over ``inproc://`` or ``tcp://127.0.0.1``."""

    def __init__(self, num_servers=1, num_workers=1, kvtype="dist_sync", transport="inproc", compression=None,
                 timeouts=None, start_servers=True):
        self.num_servers, self.num_workers = num_servers, num_workers
        self.kvtype, self.transport, self.compression = kvtype, transport, compression
        self.timeouts = timeouts or Timeouts(**FAST)
        self.context = zmq.Context() if transport == "inproc" else None
        self.scheduler = Scheduler(num_servers, num_workers, transport=transport, timeouts=self.timeouts,
                                   zmq_context=self.context).start()
        self.servers, self.server_errors, self.kvstores = {}, [], []
        self._server_threads = []
        if start_servers:
            for _ in range(num_servers):
                self.start_server_thread()

    @property
    def uri(self):
        return self.scheduler.uri

    @property
    def secret(self):
        return self.scheduler.secret

    def start_server_thread(self, rank=None):
        """Run one server node on a thread (``run_server``)."""
        def serve():
            try:
                run_server(self.uri, self.secret, rank=rank, transport=self.transport, zmq_context=self.context,
                           timeouts=self.timeouts, on_started=lambda s: self.servers.__setitem__(s.postoffice.rank, s))
            except Exception as exc:
                self.server_errors.append(exc)

        thread = threading.Thread(target=serve, daemon=True, name="ps-test-server")
        thread.start()
        self._server_threads.append(thread)

    def start_workers(self, ranks=None, timeout=30.0):
        """Create the worker kvstores concurrently (``sparkps.kvstore.create``); returns them by rank."""
        ranks = ranks or [None] * self.num_workers
        make = [lambda r=r: kvstore.create(self.kvtype, scheduler_uri=self.uri, secret=self.secret, rank=r,
                                                timeouts=self.timeouts, compression=self.compression,
                                                transport=self.transport, zmq_context=self.context)
                for r in ranks]
        self.kvstores = sorted(run_in_threads(make, timeout), key=lambda kv: kv.rank)
        return self.kvstores

    def run_workers(self, work, timeout=60.0):
        """Call ``work(kv)`` for every worker kvstore on its own thread; returns the results by rank."""
        if not self.kvstores:
            self.start_workers()
        return run_in_threads([lambda kv=kv: work(kv) for kv in self.kvstores], timeout)

    def close(self, timeout=10.0):
        """Close the workers, let the scheduler stop the servers, join threads, free the zmq context."""
        try:
            run_in_threads([kv.close for kv in self.kvstores], timeout)
        finally:
            try:
                self.scheduler.wait(timeout)
            except Exception:
                pass
            self.scheduler.stop()
            for thread in self._server_threads:
                thread.join(timeout)
            alive = [t.name for t in self._server_threads if t.is_alive()]
            if self.context is not None:
                run_in_threads([self.context.term], timeout)
            if alive:
                raise TimeoutError("server threads still running after close: %s" % alive)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

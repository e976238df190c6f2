"""The one cluster harness of the test suite: a real scheduler, servers and workers inside the test process.

Two levels, one timeouts setting (``CLUSTER_TIMEOUTS``) and one thread runner that re-raises:

    with NodeCluster(num_servers=1, num_workers=2) as c:      # bare Postoffices (comm/scheduler tests)
        c.workers[0].barrier("workers", 5)
        c.finish()                                            # every worker finishes; asserts a clean end

    with PSCluster(num_servers=2, num_workers=2) as c:        # KVServers on threads, DistKVStore workers
        results = c.run_workers(lambda kv: ...)               # one call per worker, in threads

``PSCluster`` on leaving its ``with`` block (or ``close()``) asserts that the job finished cleanly: the
scheduler's ``wait`` must return (a failed job raises its error), its state must be ``finished`` with no
recorded error, and no server thread may have raised. The fixtures in ``conftest.py`` (``ps_cluster``,
``node_cluster``) build the same objects and tear them down even when a test fails half way.
"""
import threading
import time

import zmq

from sparkps import kvstore
from sparkps.comm import Postoffice, Timeouts
from sparkps.scheduler import Scheduler
from sparkps.server import run_server

# Generous on purpose: the suite runs on loaded 2-core machines. A node is declared dead only after 3 s
# without a heartbeat; tests of dead-node detection pass their own, shorter, setting.
CLUSTER_TIMEOUTS = dict(register=20.0, request=20.0, barrier=30.0, heartbeat_interval=0.2, heartbeat_timeout=3.0)


class RecordingResponder:
    """What a server's ``handle`` is given to answer one request: it records each reply as ``(meta, arrays)`` and
    each error as ``(error_tag, text)`` in ``replies``."""

    def __init__(self, error_tag="error"):
        self.error_tag, self.replies = error_tag, []

    def reply(self, meta=None, arrays=()):
        self.replies.append((meta, list(arrays)))

    def error(self, text):
        self.replies.append((self.error_tag, text))


def cluster_timeouts(**overrides):
    """``Timeouts`` of the test suite, with some fields replaced."""
    return Timeouts(**dict(CLUSTER_TIMEOUTS, **overrides))


def run_in_threads(functions, timeout):
    """Call every function on its own thread; returns their results or raises the first exception.

    Blocks at most ``timeout`` s per thread; raises TimeoutError naming the calls still running then.
    """
    results, errors = [None] * len(functions), [None] * len(functions)

    def call(i):
        try:
            results[i] = functions[i]()
        except BaseException as exc:  # handed to the caller
            errors[i] = exc

    threads = [threading.Thread(target=call, args=(i,), daemon=True, name=f"test-call-{i}")
               for i in range(len(functions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    hung = [i for i, t in enumerate(threads) if t.is_alive()]
    if hung:
        raise TimeoutError(f"calls {hung} still running after {timeout:g} s")
    for exc in errors:
        if exc is not None:
            raise exc
    return results


def start_all(postoffices, handlers=None, timeout=20):
    """Start every postoffice in parallel (registration blocks until all arrived).

    Returns the exception each start raised (None for a clean start), in order, so that tests of
    registration failures can look at them; fails if a start still runs after ``timeout`` s.
    """
    errors = [None] * len(postoffices)

    def start(i, po):
        try:
            po.start((handlers or {}).get(po.role))
        except Exception as exc:  # returned to the caller
            errors[i] = exc

    run_in_threads([lambda i=i, po=po: start(i, po) for i, po in enumerate(postoffices)], timeout)
    return errors


def assert_job_finished_cleanly(scheduler, timeout):
    """The scheduler's job ended as ``finished`` with no error; raises the job's own error otherwise."""
    scheduler.wait(timeout)
    status = scheduler.status()
    assert status["state"] == "finished", f"the job ended {status['state']}: {status['errors']}"
    assert status["errors"] == [], f"the scheduler recorded errors: {status['errors']}"


class NodeCluster:
    """A scheduler with S servers and W workers as bare Postoffices; ``stop()`` stops everything (idempotent)."""

    def __init__(self, num_servers=1, num_workers=2, transport="inproc", handlers=None, timeouts=None,
                 ranks=None, curve=False):
        self.timeouts = timeouts or cluster_timeouts()
        self.scheduler = Scheduler(num_servers, num_workers, transport=transport, timeouts=self.timeouts,
                                   curve=curve).start()
        ranks = ranks or {}
        self.servers = [self.node("server", ranks.get(("server", i)), transport, curve) for i in range(num_servers)]
        self.workers = [self.node("worker", ranks.get(("worker", i)), transport, curve) for i in range(num_workers)]
        errors = start_all(self.servers + self.workers, handlers)
        if any(errors):
            self.stop()
            raise next(e for e in errors if e)

    def node(self, role, rank=None, transport="inproc", curve=False):
        return Postoffice(role, self.scheduler.uri, self.scheduler.secret, rank=rank, transport=transport,
                          timeouts=self.timeouts, curve=curve)

    def finish(self, timeout=10):
        """Every worker finishes; asserts the job ended cleanly and every server was told to terminate."""
        for w in self.workers:
            w.finish()
        assert_job_finished_cleanly(self.scheduler, timeout)
        for s in self.servers:
            s.wait_for_termination(timeout)

    def stop(self):
        for po in self.workers + self.servers:
            po.stop()
        self.scheduler.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class PSCluster:
    """Scheduler + KVServers (threads) + DistKVStore workers, over ``inproc://`` or ``tcp://127.0.0.1``.

    Servers run ``sparkps.server.run_server`` on threads; workers are created concurrently by
    ``start_workers`` (registration blocks until every node arrived). ``close`` closes the workers,
    waits for the scheduler to stop the servers, joins every thread and terminates the zmq context
    (which only returns once every socket is closed: a leaked socket makes the tear-down fail).
    """

    def __init__(self, num_servers=1, num_workers=1, kvtype="dist_sync", transport="inproc", compression=None,
                 timeouts=None, start_servers=True):
        self.num_servers, self.num_workers = num_servers, num_workers
        self.kvtype, self.transport, self.compression = kvtype, transport, compression
        self.timeouts = timeouts or cluster_timeouts()
        self.context = zmq.Context() if transport == "inproc" else None
        self.scheduler = Scheduler(num_servers, num_workers, transport=transport, timeouts=self.timeouts,
                                   zmq_context=self.context).start()
        self.servers, self.server_errors, self.kvstores = {}, [], []
        self._server_threads, self._closed = [], False
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
        """Run one server node on a thread (``run_server``); what it raises lands in ``server_errors``."""
        def serve():
            try:
                run_server(self.uri, self.secret, rank=rank, transport=self.transport, zmq_context=self.context,
                           timeouts=self.timeouts, on_started=lambda s: self.servers.__setitem__(s.postoffice.rank, s))
            except BaseException as exc:  # checked by close()
                self.server_errors.append(exc)

        thread = threading.Thread(target=serve, daemon=True, name=f"test-server-{len(self._server_threads)}")
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
        deadline = time.monotonic() + timeout     # every server registered; wait for their threads to publish them
        while len(self.servers) < len(self._server_threads) and not self.server_errors and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.kvstores

    def run_workers(self, work, timeout=60.0):
        """Call ``work(kv)`` for every worker kvstore on its own thread; returns the results by rank."""
        if not self.kvstores:
            self.start_workers()
        return run_in_threads([lambda kv=kv: work(kv) for kv in self.kvstores], timeout)

    def close(self, timeout=10.0, check=True):
        """Close the workers, let the scheduler stop the servers, join threads, free the zmq context.

        With ``check`` (the default) raises the job's error if it failed, and fails if the job did not
        finish cleanly or a server raised. Tears everything down in any case; idempotent.
        """
        if self._closed:
            return
        self._closed = True
        problems = []
        try:
            run_in_threads([kv.close for kv in self.kvstores], timeout)
            if check:
                assert_job_finished_cleanly(self.scheduler, timeout)
        finally:
            self.scheduler.stop()
            for thread in self._server_threads:
                thread.join(timeout)
            alive = [t.name for t in self._server_threads if t.is_alive()]
            if self.context is not None:
                run_in_threads([self.context.term], timeout)
            if alive:
                problems.append(f"server threads still running after close: {alive}")
        if check and self.server_errors:
            problems.append(f"servers raised: {self.server_errors!r}")
        if problems:
            raise AssertionError("; ".join(problems))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(check=exc_type is None)  # a failing test keeps its own error


def live_threads():
    """Python threads other than the main thread and pyzmq's own garbage collector."""
    return {t for t in threading.enumerate()
            if t is not threading.main_thread() and type(t).__name__ != "GarbageCollectorThread"}

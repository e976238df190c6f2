"""Start a real scheduler and real Postoffice nodes inside the test process (inproc, ipc or tcp)."""
import threading

from sparkps.ps.comm import Postoffice, Timeouts
from sparkps.ps.scheduler import Scheduler

FAST = dict(register=10, request=10, barrier=10, heartbeat_interval=0.1, heartbeat_timeout=1.0)


def fast_timeouts(**overrides):
    return Timeouts(**dict(FAST, **overrides))


def start_all(postoffices, handlers=None, timeout=20):
    """Start every postoffice in parallel (registration blocks until all arrived); re-raise failures."""
    errors = [None] * len(postoffices)

    def run(i, po):
        try:
            po.start((handlers or {}).get(po.role))
        except Exception as exc:
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i, po)) for i, po in enumerate(postoffices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a node did not finish starting within %g s" % timeout
    return errors


class Cluster:
    """A scheduler with S servers and W workers; ``stop()`` stops everything (idempotent)."""

    def __init__(self, num_servers=1, num_workers=2, transport="inproc", handlers=None, timeouts=None,
                 ranks=None, curve=False):
        self.timeouts = timeouts or fast_timeouts()
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
        for w in self.workers:
            w.finish()
        self.scheduler.wait(timeout)
        for s in self.servers:
            s.wait_for_termination(timeout)

    def stop(self):
        for po in self.workers + self.servers:
            po.stop()
        self.scheduler.stop()


def live_threads():
    """Python threads other than the main thread and pyzmq's own garbage collector."""
    return {t for t in threading.enumerate()
            if t is not threading.main_thread() and type(t).__name__ != "GarbageCollectorThread"}

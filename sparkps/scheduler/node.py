"""The scheduler node: serves registration, barriers, heartbeats, progress and status on a thread.

>>> sched = Scheduler(num_servers=1, num_workers=2).start()     # doctest: +SKIP
>>> sched.uri, sched.secret          # give both to every node
>>> sched.wait(timeout=600)          # until every worker finished, or raises the job's failure
>>> sched.stop()
"""
import logging
import os
import threading
import time

from sparkps.comm.message import JOB_ID_BYTES, CurveKeys, generate_secret
from sparkps.comm.postoffice import Endpoint, node_name
from sparkps.comm.settings import HEADER_LIMIT_BYTES
from sparkps.comm.timeouts import Timeouts
from sparkps.errors import ClusterError, NodeDied, PeerTimeout
from sparkps.scheduler.state import BarrierBook, HeartbeatMonitor, JobLifecycle, Registry, RequestBook

log = logging.getLogger(__name__)
GROUP_ROLES = {"workers": ("worker",), "servers": ("server",), "all": ("server", "worker")}


class Scheduler:
    """Registers S servers and W workers, runs barriers, watches heartbeats, reports status.

    Thread-safe.  ``start`` never blocks; ``wait`` blocks until the job ends; ``stop`` is idempotent.
    """

    def __init__(self, num_servers, num_workers, host="127.0.0.1", port=0, secret=None, transport="tcp",
                 timeouts=None, zmq_context=None, curve=False):
        self.timeouts = timeouts or Timeouts()
        self.secret = secret or generate_secret()
        self.num_servers, self.num_workers = num_servers, num_workers
        self._registry = Registry(num_servers, num_workers)
        self._barriers = BarrierBook()
        self._heartbeats = HeartbeatMonitor(self.timeouts.heartbeat_timeout)
        self._job = JobLifecycle(num_workers)
        self._requests = RequestBook()
        # strict: a node id is accepted only with the session it registered; no message to the scheduler
        # carries arrays, so its sockets refuse any frame above the header limit
        self._endpoint = Endpoint("scheduler", self.secret, self._handle, transport, host, port, zmq_context,
                                  CurveKeys(self.secret) if curve else None, max_message_bytes=HEADER_LIMIT_BYTES,
                                  strict=True)
        self._endpoint.node_id = 0
        self.job_id = os.urandom(JOB_ID_BYTES)   # binds every message to this job (freshness), in the node table
        self._endpoint.join(self.job_id)
        self._lock = threading.RLock()
        self._done = threading.Event()
        self._halt = threading.Event()
        self._registrants = {}
        self._nodes = {}
        self._progress = {}
        self._terminations = []
        self._started_at = None
        self._monitor = None
        self._stopped = False
        self._served = {"HEARTBEAT": self._on_heartbeat, "BARRIER": self._on_barrier, "PROGRESS": self._on_progress,
                        "REPORT_ERROR": self._on_report_error, "FINISH": self._on_finish}

    @property
    def uri(self):
        """The scheduler's address, e.g. 'tcp://127.0.0.1:40213' (set by start)."""
        return self._endpoint.address

    def start(self):
        """Bind and serve on background threads; returns self without blocking."""
        self._endpoint.start()
        self._started_at = time.monotonic()
        self._monitor = threading.Thread(target=self._watch, name="sparkps-scheduler-monitor", daemon=True)
        self._monitor.start()
        return self

    # -- requests -------------------------------------------------------------------------------
    def _handle(self, msg, responder):
        with self._lock:
            self._requests.received(msg.cmd, time.monotonic())
            if msg.cmd == "REGISTER":
                return self._register(msg, responder)
            if msg.cmd == "STATUS":
                return responder.reply({"status": self.status()})
            if msg.cmd == "ABORT":
                return self._abort(msg, responder)
            node = self._nodes.get(msg.sender)
            if node is None:
                return responder.error("scheduler: node %s is not registered in this job" % msg.sender)
            self._served.get(msg.cmd, self._on_unknown)(msg, responder, node)

    def _register(self, msg, responder):
        meta = msg.meta
        if not msg.job:   # a node's first REGISTER: it learns the job's id and registers again with it
            return responder.reply({"job": self.job_id})
        if self._job.state != "registering":
            return responder.error("registration is closed: the job is %s" % self._job.state)
        try:
            index = self._registry.add(meta.get("role"), meta.get("rank"), str(meta.get("address")),
                                       {"host": meta.get("host"), "pid": meta.get("pid"), "session": msg.session})
        except ClusterError as exc:
            return responder.error(str(exc))
        self._registrants[index] = responder
        if self._registry.complete:
            self._announce_nodes()

    def _abort(self, msg, responder):
        """A peer holding the secret reports a role that failed (see report_abort): before registering, or a
        registered node's process seen dead by the one that started it."""
        responder.reply()
        meta = msg.meta
        name = "%s %s" % (meta.get("role"), "?" if meta.get("rank") is None else meta.get("rank"))
        when = " before registering" if self._job.state == "registering" else ""
        self._fail(name, "%s failed%s: %s" % (name, when, str(meta.get("error"))[:4000]), NodeDied)

    def _announce_nodes(self):
        table = self._registry.assign()
        public = [{k: n[k] for k in ("id", "role", "rank", "address", "session")} for n in table]
        self._endpoint.van.freshness.install({n["id"]: n["session"] for n in table})
        now = time.monotonic()
        for n in table:
            self._nodes[n["id"]] = dict(n, name=node_name(n["role"], n["rank"], n["id"]), finished=False)
            self._heartbeats.beat(n["id"], now)
        self._job.start_running()
        for n in table:
            self._registrants.pop(n["index"]).reply(
                {"node_id": n["id"], "rank": n["rank"], "nodes": public,
                 "num_servers": self.num_servers, "num_workers": self.num_workers, "job": self.job_id}, cmd="NODES")
        log.info("scheduler: all %d servers and %d workers registered", self.num_servers, self.num_workers)

    def _on_heartbeat(self, msg, responder, node):
        if not self._job.ended and not node["finished"]:
            self._heartbeats.beat(node["id"], time.monotonic())
        failure = self._job.failure
        responder.reply({"state": self._job.state, "error": str(failure) if failure else None,
                         "node": failure.node if failure else None})

    def _on_barrier(self, msg, responder, node):
        group = msg.meta.get("group")
        if group not in GROUP_ROLES:
            return responder.error("unknown barrier group %r (workers, servers or all)" % (group,))
        for token in self._barriers.enter(group, node["id"], responder, self._expected(group)):
            token.reply(cmd="RELEASE")

    def _expected(self, group):
        return {n["id"] for n in self._nodes.values() if n["role"] in GROUP_ROLES[group] and not n["finished"]}

    def _on_progress(self, msg, responder, node):
        progress = msg.meta.get("progress")
        if isinstance(progress, dict):
            progress = dict(progress)
            self._requests.update(node["id"], progress.pop("counters", None))
            servers = progress.pop("server_counters", None)   # worker 0's last look at every server, by rank
            if isinstance(servers, dict):
                for rank, counters in servers.items():
                    self._requests.update(self._server_id(rank), counters)
            if node["role"] == "worker" and progress:
                self._progress[node["rank"]] = dict(progress, time=time.time())
        responder.reply()

    def _server_id(self, rank):
        found = [n["id"] for n in self._nodes.values() if n["role"] == "server" and str(n["rank"]) == str(rank)]
        return found[0] if found else None

    def _on_report_error(self, msg, responder, node):
        responder.reply()
        node["gone"] = True  # it is stopping: no TERMINATE for it
        self._heartbeats.forget(node["id"])
        text = str(msg.meta.get("error"))[:4000]
        self._fail(node["name"], "%s failed: %s" % (node["name"], text), NodeDied)

    def _on_finish(self, msg, responder, node):
        responder.reply()
        if node["role"] != "worker" or node["finished"]:
            return
        node["finished"] = True
        self._heartbeats.forget(node["id"])
        if self._job.worker_finished(node["rank"]):
            log.info("scheduler: every worker finished; stopping the servers")
            self._terminate(error=None)
            self._done.set()
        else:
            for group in ("workers", "all"):
                for token in self._barriers.check(group, self._expected(group)):
                    token.reply(cmd="RELEASE")

    def _on_unknown(self, msg, responder, node):
        responder.error("the scheduler does not serve %s requests" % msg.cmd)

    # -- failure and termination --------------------------------------------------------------
    def _fail(self, node, message, kind):
        error = kind(message, node=node)
        if not self._job.fail(node, message, error):
            return
        log.error("scheduler: %s", message)
        for responder in list(self._registrants.values()) + self._barriers.drain():
            responder.error(message)
        self._registrants.clear()
        self._terminate(error=error)
        self._done.set()

    def _terminate(self, error):
        meta = {"error": str(error), "node": error.node} if error is not None else {}
        for n in self._nodes.values():
            if not (n["finished"] or n.get("gone")):
                rid = self._endpoint.request(n["address"], n["name"], "TERMINATE", meta)
                self._terminations.append(rid)

    def _watch(self):
        period = min(self.timeouts.heartbeat_interval, 0.5)
        while not self._halt.wait(period):
            with self._lock:
                if self._job.ended:
                    continue
                now = time.monotonic()
                if self._job.state == "registering" and now - self._started_at > self.timeouts.register:
                    self._fail(None, "registration timed out after %g s: %s"
                               % (self.timeouts.register, self._registry.missing()), PeerTimeout)
                for node_id, age in self._heartbeats.overdue(now)[:1]:
                    self._nodes[node_id]["gone"] = True  # dead: no TERMINATE for it
                    name = self._nodes[node_id]["name"]
                    self._fail(name, "%s stopped sending heartbeats: none for %.1f s (heartbeat timeout %g s)"
                               % (name, age, self.timeouts.heartbeat_timeout), NodeDied)

    # -- public -------------------------------------------------------------------------------
    def status(self):
        """Nodes, heartbeat ages, per-worker progress, errors, the job state and ``requests`` (a plain dict).

        ``requests`` (:class:`RequestBook`): the messages this scheduler received by command and the seconds
        between the first and the last; each server's ``served`` requests by command and worker and its
        ``row_steps``; each worker's ``steps``, ``step_requests`` and ``sent`` requests by command. Servers report
        every heartbeat interval and worker 0 once more after the workers' last barrier; workers with their
        progress and once more then, so a finished job's counts are final."""
        with self._lock:
            now = time.monotonic()
            nodes = []
            for n in sorted(self._nodes.values(), key=lambda n: n["id"]):
                age = self._heartbeats.age(n["id"], now)
                nodes.append({"id": n["id"], "role": n["role"], "rank": n["rank"], "address": n["address"],
                              "host": n.get("host"), "pid": n.get("pid"), "finished": n["finished"],
                              "alive": n["finished"] or (age is not None and age <= self.timeouts.heartbeat_timeout),
                              "last_heartbeat_age": None if age is None else round(age, 3)})
            return {"state": self._job.state, "num_servers": self.num_servers, "num_workers": self.num_workers,
                    "registered": len(self._registry.entries), "nodes": nodes,
                    "progress": {rank: dict(p) for rank, p in self._progress.items()},
                    "errors": [dict(e) for e in self._job.errors],
                    "dropped_messages": self._endpoint.van.dropped,
                    "refused_messages": self._endpoint.van.freshness.replays,
                    "requests": self._requests.summary({n["id"]: (n["role"], n["rank"]) for n in self._nodes.values()}),
                    "uptime": round(now - self._started_at, 3) if self._started_at else 0.0}

    @property
    def state(self):
        return self._job.state

    def wait(self, timeout=None):
        """Block until every worker finished (returns) or the job failed (raises its ClusterError).

        Raises PeerTimeout after ``timeout`` seconds (None: no limit; failures end it anyway).
        """
        if not self._done.wait(timeout):
            raise PeerTimeout("the job did not end within %g s: %s" % (timeout, self._job.state), node="scheduler")
        failure = self._job.failure
        if failure is not None:
            raise type(failure)(str(failure), node=failure.node)

    def stop(self, timeout=2.0):
        """End the job (TERMINATE with an error to live nodes if it has not ended), close; idempotent.

        Waits at most ``timeout`` s for nodes to acknowledge TERMINATE.
        """
        if self._stopped:
            return
        self._stopped = True
        with self._lock:
            if not self._job.ended:
                self._fail(None, "the scheduler was stopped before the job finished", ClusterError)
            pending, self._terminations = self._terminations, []
        deadline = time.monotonic() + timeout
        for rid in pending:
            try:
                self._endpoint.wait(rid, max(0.0, deadline - time.monotonic()))
            except ClusterError:
                pass
        self._halt.set()
        if self._monitor is not None:
            self._monitor.join(timeout)
        self._endpoint.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

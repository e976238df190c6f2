"""The Postoffice of a server or worker node: registration, node table, requests, barriers, heartbeats.

One per node, passed around explicitly (no singleton): a whole cluster can live in one process.

>>> po = Postoffice('worker', sched.uri, sched.secret)          # doctest: +SKIP
>>> po.start()                                                   # blocks until every node registered
>>> rid = po.request(po.server_ids[0], 'PULL', meta={'keys': [0]})
>>> po.wait(rid).arrays
"""
import logging
import os
import threading
import time

from sparkps.comm.endpoint import Endpoint
from sparkps.comm.security import CurveKeys
from sparkps.comm.timeouts import Timeouts
from sparkps.errors import ClusterError, ConfigError, NodeDied, PeerTimeout, RemoteError

log = logging.getLogger(__name__)
ROLES = ("server", "worker")
GROUPS = ("workers", "servers", "all")
SCHEDULER_NAME = "scheduler (node 0)"


def node_name(role, rank, node_id):
    """How errors name a node: 'server 0 (node 1)'."""
    return SCHEDULER_NAME if role == "scheduler" else "%s %s (node %s)" % (role, rank, node_id)


def _copy(error):
    """A fresh copy of the ClusterError ``error`` (many threads may raise the same failure at once)."""
    return type(error)(str(error), node=error.node)


class Postoffice:
    """A server or worker node of one job.

    ``handler(msg, responder)`` (given to ``start``) serves requests from other nodes on the node's
    handler thread; TERMINATE is handled here.  Thread-safe: any thread may request and wait.
    """

    def __init__(self, role, scheduler_uri, secret, rank=None, host="127.0.0.1", transport="tcp",
                 zmq_context=None, timeouts=None, curve=False, max_message_bytes=None):
        if role not in ROLES:
            raise ConfigError("role must be one of %s, got %r" % (", ".join(ROLES), role))
        if not scheduler_uri:
            raise ConfigError("a scheduler URI is required (give --scheduler or set SPARKPS_SCHEDULER_URI)")
        if rank is not None and (not isinstance(rank, int) or rank < 0):
            raise ConfigError("rank must be a non-negative integer, got %r" % (rank,))
        self.role, self.scheduler_uri, self.requested_rank = role, scheduler_uri, rank
        self.transport = transport
        self.timeouts = timeouts or Timeouts()
        self.node_id, self.rank, self.num_servers, self.num_workers = -1, None, 0, 0
        self.nodes = []
        self._peers = {}
        self._endpoint = Endpoint("%s (unregistered)" % role, secret, self._handle, transport, host, 0,
                                  zmq_context, CurveKeys(secret) if curve else None,
                                  max_message_bytes=max_message_bytes, hold_requests=True)
        self._handler = None
        self._done = threading.Event()
        self._failure = None
        self._terminated = self._finished = self._reported = self._stopped = False
        self._heartbeat = None
        self._lock = threading.Lock()

    @property
    def name(self):
        return node_name(self.role, self.rank, self.node_id) if self.node_id >= 0 else self._endpoint.name

    @property
    def address(self):
        """This node's bound ROUTER address."""
        return self._endpoint.address

    @property
    def server_ids(self):
        return [n["id"] for n in self.nodes if n["role"] == "server"]

    @property
    def worker_ids(self):
        return [n["id"] for n in self.nodes if n["role"] == "worker"]

    @property
    def max_message_bytes(self):
        """The per-frame size limit of this node's sockets (exclusive: a frame of this size is refused)."""
        return self._endpoint.van.max_message_bytes

    @property
    def dropped_messages(self):
        """How many received messages were dropped (bad secret or MAC, malformed frames, replays)."""
        return self._endpoint.van.dropped

    @property
    def refused_messages(self):
        """How many authenticated messages were refused as replayed, reordered or not from a registered session
        (counted in ``dropped_messages`` too); by reason in ``refused_reasons``."""
        return self._endpoint.van.freshness.replays

    @property
    def refused_reasons(self):
        return dict(self._endpoint.van.freshness.refused)

    @property
    def failure(self):
        """The ClusterError that ended this node, or None."""
        return self._failure

    def start(self, handler=None, threaded=False):
        """Bind, REGISTER with the scheduler, wait for the node table, start heartbeats.

        ``handler(msg, responder)`` runs inline on the I/O thread (it must not block or wait for
        replies); with ``threaded=True`` it runs on a thread of its own and may request and wait.

        Blocks until every node of the job registered, at most ``timeouts.register`` (+10 %) seconds;
        raises PeerTimeout (no answer: scheduler down or wrong secret) or ClusterError (refused).
        """
        self._handler = handler
        self._endpoint.threaded = threaded
        address = self._endpoint.start()
        meta = {"role": self.role, "rank": self.requested_rank, "address": address,
                "pid": os.getpid(), "host": os.uname().nodename}
        wait_s = self.timeouts.register * 1.1 + 1.0
        try:
            # first the job's id (a REGISTER without it registers nothing), then REGISTER bound to that job
            rid = self._endpoint.request(self.scheduler_uri, SCHEDULER_NAME, "REGISTER", meta)
            job = self._endpoint.wait(rid, wait_s).meta.get("job")
            if not isinstance(job, bytes) or not job:
                raise RemoteError("the scheduler at %s sent no job id" % self.scheduler_uri, node=SCHEDULER_NAME)
            self._endpoint.join(job)
            rid = self._endpoint.request(self.scheduler_uri, SCHEDULER_NAME, "REGISTER", meta)
            reply = self._endpoint.wait(rid, wait_s)
        except PeerTimeout:
            self._endpoint.stop()
            raise PeerTimeout("%s got no node table from the scheduler at %s within %g s (is the scheduler "
                              "running, and is the job secret the same?)" % (self.role, self.scheduler_uri, wait_s),
                              node=SCHEDULER_NAME) from None
        except RemoteError as exc:
            self._endpoint.stop()
            raise ClusterError("the scheduler refused %s: %s" % (self.role, exc), node=SCHEDULER_NAME) from None
        self._apply_table(reply.meta)
        self._endpoint.reply_hooks["HEARTBEAT"] = self._heartbeat_answered
        self._heartbeat = threading.Thread(target=self._heartbeat_loop, daemon=True,
                                           name="sparkps-heartbeat-%s" % self.name)
        self._heartbeat.start()
        return self

    def _apply_table(self, meta):
        self.node_id, self.rank = meta["node_id"], meta["rank"]
        self.num_servers, self.num_workers = meta["num_servers"], meta["num_workers"]
        self.nodes = sorted(meta["nodes"], key=lambda n: n["id"])
        self._peers = {n["id"]: (n["address"], node_name(n["role"], n["rank"], n["id"])) for n in self.nodes}
        self._peers[0] = (self.scheduler_uri, SCHEDULER_NAME)
        self._endpoint.van.name = self.name
        self._endpoint.van.freshness.install({n["id"]: n["session"] for n in self.nodes if "session" in n},
                                             anonymous=False)
        self._endpoint.registered(self.node_id, self.name)

    def peer_name(self, node_id):
        """The readable name of node ``node_id`` ('worker 1 (node 4)')."""
        return self._peers[node_id][1] if node_id in self._peers else "node %s" % node_id

    def request(self, peer_id, cmd, meta=None, arrays=(), track=True):
        """Send ``cmd`` to node ``peer_id``; returns the request id to ``wait`` on.  Never blocks.

        ``arrays`` (numpy) travel without a copy: do not modify them until the reply arrived.
        With ``track=False`` the reply is dropped (fire and forget).  Raises the node's failure.
        """
        if self._failure is not None:
            raise _copy(self._failure)
        if peer_id not in self._peers:
            raise ClusterError("%s: no node %r in the node table" % (self.name, peer_id))
        address, peer = self._peers[peer_id]
        return self._endpoint.request(address, peer, cmd, meta, arrays, track)

    def wait(self, rid, timeout=None):
        """Block until the reply to ``rid`` arrives, at most ``timeout`` (default timeouts.request) s.

        Raises PeerTimeout naming the peer and request, RemoteError for an ERROR reply, NodeDied /
        ClusterError when the job failed meanwhile.  Received arrays are read-only views.
        """
        return self._endpoint.wait(rid, self.timeouts.request if timeout is None else timeout)

    def discard(self, rid):
        """Forget request ``rid`` without waiting for it."""
        self._endpoint.customer.discard(rid)

    def in_flight(self):
        """Number of requests tracked now (bounded: completed ones are forgotten)."""
        return self._endpoint.customer.in_flight()

    def barrier(self, group="workers", timeout=None):
        """Block until every (unfinished) node of ``group`` entered this barrier.

        Waits at most ``timeout`` (default timeouts.barrier) seconds, then raises PeerTimeout.
        """
        if group not in GROUPS:
            raise ConfigError("barrier group must be one of %s, got %r" % (", ".join(GROUPS), group))
        rid = self.request(0, "BARRIER", {"group": group})
        self.wait(rid, self.timeouts.barrier if timeout is None else timeout)

    def report_progress(self, progress):
        """Send this worker's progress (epoch, nbatch, samples, metrics) to the scheduler; never blocks."""
        if self._failure is None and self.node_id >= 0:
            self.request(0, "PROGRESS", {"progress": dict(progress)}, track=False)

    def report_error(self, text, timeout=5.0):
        """Tell the scheduler this node failed with ``text``: the job fails and every node stops.

        Waits at most ``timeout`` s for the acknowledgement; never raises.  Afterwards this node is
        failed too: its requests and waits raise NodeDied with ``text``.
        """
        self._reported = True
        try:
            self.wait(self.request(0, "REPORT_ERROR", {"error": str(text)}), timeout)
        except ClusterError as exc:
            log.warning("%s: could not report the error to the scheduler: %s", self.name, exc)
        self._fail(NodeDied("%s failed: %s" % (self.name, text), node=self.name))

    def finish(self, timeout=None):
        """Tell the scheduler this worker is done; when all are, servers are told to stop.

        Blocks until acknowledged, at most ``timeout`` (default timeouts.request) s.
        """
        self.wait(self.request(0, "FINISH"), timeout)
        self._finished = True

    def wait_for_termination(self, timeout=None):
        """Block until the scheduler ends the job (TERMINATE) or the job fails.

        Returns normally after an orderly TERMINATE; raises the failure (NodeDied, ...) otherwise, or
        PeerTimeout after ``timeout`` s (None: no limit; a dead scheduler is noticed by heartbeats).
        """
        if not self._done.wait(timeout):
            raise PeerTimeout("%s: the job did not end within %g s" % (self.name, timeout), node=SCHEDULER_NAME)
        if self._failure is not None:
            raise _copy(self._failure)

    def _handle(self, msg, responder):
        if msg.cmd == "TERMINATE":
            responder.reply()
            error = msg.meta.get("error")
            if error:
                self._fail(NodeDied(str(error), node=msg.meta.get("node")))
            else:
                self._terminated = True
                self._done.set()
        elif self._handler is None:
            responder.error("%s does not serve %s requests" % (self.name, msg.cmd))
        else:
            self._handler(msg, responder)

    def _fail(self, error):
        with self._lock:
            if self._failure is not None or self._terminated:
                return
            self._failure = error
        log.error("%s: %s", self.name, error)
        self._endpoint.fail(error)
        self._done.set()

    def _heartbeat_loop(self):
        """Send a heartbeat every interval (never waiting for it) on this thread's own channel, and read the answers
        there (``_heartbeat_answered``): a handler holding the I/O thread (a sparse table's first use loading its
        compiled index, a long checkpoint) does not silence the node.  No answer for heartbeat_timeout: the
        scheduler is dead."""
        interval, limit = self.timeouts.heartbeat_interval, self.timeouts.heartbeat_timeout
        self._last_answer = time.monotonic()
        while not self._read_answers(interval):
            silence = time.monotonic() - self._last_answer
            if silence > limit:
                if not (self._finished or self._stopped):
                    self._fail(NodeDied("the scheduler at %s did not answer heartbeats for %.1f s (heartbeat "
                                        "timeout %g s)" % (self.scheduler_uri, silence, limit), node=SCHEDULER_NAME))
                return
            if self._failure is not None:
                return
            try:
                self._endpoint.request(self.scheduler_uri, SCHEDULER_NAME, "HEARTBEAT", track=False)
            except ClusterError:
                return

    def _read_answers(self, seconds):
        """Read heartbeat answers on this thread's channel for ``seconds`` (in slices, so ``stop`` is prompt);
        True once the node is done."""
        deadline = time.monotonic() + seconds
        while not self._done.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            step = min(remaining, 0.1)
            if not self._endpoint.van.poll_own(step) and self._done.wait(step):
                return True
        return True

    def _heartbeat_answered(self, msg):
        self._last_answer = time.monotonic()
        if msg.cmd == "HEARTBEAT" and msg.meta.get("state") == "failed":
            self._fail(NodeDied(msg.meta.get("error") or "the job failed", node=msg.meta.get("node")))

    def stop(self, timeout=5.0):
        """Stop heartbeats, join threads, close sockets; idempotent.

        A node stopping before the job ended (no finish(), no TERMINATE, no failure) first reports
        that to the scheduler, so the rest of the job fails fast instead of waiting for heartbeats.
        """
        if self._stopped:
            return
        if (self.node_id >= 0 and not (self._finished or self._terminated or self._reported)
                and self._failure is None):
            self.report_error("%s stopped before the job finished" % self.name, timeout=min(timeout, 2.0))
        self._stopped = True
        self._done.set()
        self._endpoint.fail(ClusterError("%s is stopped" % self.name))
        if self._heartbeat is not None and self._heartbeat is not threading.current_thread():
            self._heartbeat.join(timeout)
        self._endpoint.stop(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

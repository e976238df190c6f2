"""Ask a running scheduler for its status over the wire (what `sparkps status` does)."""
import os

import zmq

from sparkps.comm import message as wire
from sparkps.comm.message import SESSION_BYTES, CurveKeys, secret_bytes
from sparkps.errors import PeerTimeout, RemoteError


def fetch_status(uri, secret, timeout=10.0, curve=False):
    """The scheduler's status dict (see Scheduler.status).  Blocks at most ``timeout`` seconds,
    then raises PeerTimeout (scheduler gone, or a wrong secret: unauthenticated requests are dropped)."""
    return _ask(uri, secret, wire.Message("STATUS", rid=1), timeout, curve).meta["status"]


def report_abort(uri, secret, role, rank, error, timeout=5.0, curve=False):
    """Fail the job from outside its node table: tell the scheduler that ``role`` ``rank`` failed before it
    could register (e.g. a server process that died at start-up), so every waiting node gets the error at
    once instead of a registration timeout.  Blocks at most ``timeout`` seconds (PeerTimeout after)."""
    meta = {"role": str(role), "rank": None if rank is None else int(rank), "error": str(error)[:4000]}
    job = _ask(uri, secret, wire.Message("STATUS", rid=1), timeout, curve).job   # ABORT must carry the job's id
    _ask(uri, secret, wire.Message("ABORT", rid=1, meta=meta, job=job), timeout, curve)


def _ask(uri, secret, request, timeout, curve):
    """Send one request on a fresh DEALER and return the reply; RemoteError for an ERROR reply."""
    key = secret_bytes(secret)
    request.session, request.seq = os.urandom(SESSION_BYTES), 1  # a one-message session of its own
    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    try:
        if curve:
            CurveKeys(secret).configure_client(sock)
        sock.connect(uri)
        sock.send_multipart(wire.encode(request, key))
        if not sock.poll(int(timeout * 1000)):
            raise PeerTimeout("no %s reply from the scheduler at %s within %g s (is it running, and is the "
                              "secret right?)" % (request.cmd, uri, timeout), node="scheduler")
        reply = wire.decode(sock.recv_multipart(), key)
        if reply.cmd == "ERROR":
            raise RemoteError("the scheduler at %s answered %s with: %s" % (uri, request.cmd, reply.err),
                              node="scheduler")
        return reply
    finally:
        sock.close(0)
        context.term()


def _age(value):
    return "-" if value is None else "%.1fs" % value


def format_status(status):
    """The status dict as a readable table: state, nodes, per-worker progress, errors."""
    lines = ["state: %s   servers: %s   workers: %s   uptime: %.1fs"
             % (status["state"], status["num_servers"], status["num_workers"], status.get("uptime", 0.0))]
    if not status["nodes"]:
        lines.append("registered: %d of %d nodes" % (status["registered"],
                                                      status["num_servers"] + status["num_workers"]))
    else:
        lines.append("%-4s %-7s %-4s %-6s %-9s %-10s %s" % ("id", "role", "rank", "alive", "heartbeat", "pid",
                                                            "address"))
        for n in status["nodes"]:
            alive = "done" if n["finished"] else ("yes" if n["alive"] else "NO")
            lines.append("%-4s %-7s %-4s %-6s %-9s %-10s %s" % (n["id"], n["role"], n["rank"], alive,
                                                                _age(n["last_heartbeat_age"]), n.get("pid") or "-",
                                                                n["address"]))
    for rank, p in sorted(status["progress"].items(), key=lambda item: int(item[0])):
        metrics = ", ".join("%s=%.4f" % (k, v) for k, v in sorted((p.get("metrics") or {}).items())
                            if isinstance(v, (int, float)))
        shown = f", {metrics}" if metrics else ""
        lines.append(f"worker {rank}: epoch {p.get('epoch')}, batch {p.get('nbatch')}, "
                     f"{p.get('samples')} samples{shown}")
        for name, t in sorted((p.get("tables") or {}).items()):  # sparse tables, summed over the servers
            lines.append("  table %s: %s rows, %s bytes, %s admitted, %s evicted" % (
                name, t.get("rows"), t.get("bytes"), t.get("admitted"), t.get("evicted")))
    lines += _request_lines(status.get("requests") or {})
    for e in status["errors"]:
        lines.append("error from %s: %s" % (e["node"] or "scheduler", e["message"]))
    return "\n".join(lines)


def _request_lines(requests):
    """The request counters: what the scheduler received, what each server served (by command, summed over the
    workers) and each worker's steps."""
    lines = []
    scheduler = requests.get("scheduler") or {}
    if scheduler.get("received"):
        lines.append("scheduler received: %s over %.1fs" % (
            ", ".join("%s %d" % item for item in sorted(scheduler["received"].items())), scheduler.get("span_s", 0)))
    for rank, server in sorted((requests.get("servers") or {}).items(), key=lambda item: int(item[0])):
        served = ", ".join("%s %d" % (cmd, sum(by.values())) for cmd, by in sorted(server.get("served", {}).items()))
        lines.append("server %s served: %s; row steps %d" % (rank, served or "nothing",
                                                             sum((server.get("row_steps") or {}).values())))
    for rank, worker in sorted((requests.get("workers") or {}).items(), key=lambda item: int(item[0])):
        lines.append("worker %s sent: %s steps, %s step requests" % (rank, worker.get("steps"),
                                                                    worker.get("step_requests")))
    return lines

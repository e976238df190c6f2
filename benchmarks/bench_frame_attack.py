"""A stranger's frames at the size limit, and a secret reused across jobs: what a server's memory and a job's
refusal counters show.

Frame attack: a server process (``python -m sparkps.server``, limit ``--limit``, default the tree's own default) of
a running job; ``--connections`` raw TCP connections (ZMTP 3, NULL mechanism, no secret) each announce one frame of
``size`` bytes and stream all of it; the server's RSS is read before and while they are open. Sizes: exactly the
limit (refused before allocation since the limit is exclusive) and one byte below (the exposure that remains:
each connection may hold one frame below the limit until the MAC check drops it). Then each connection sends
``--frames`` frames of 1 MiB as one message it never ends (every frame below the limit): libzmq holds a message's
frames until its last one arrives, whatever their number.

Cross-job replay: jobs A and B share one secret; messages of job A (REGISTER to B's scheduler, INIT,
SET_OPTIMIZER, PUSHPULL and ``COMMAND save`` to B's server, signed as A's worker signs them, A's job id in the
header) are counted as refused by B, and B's own worker still registers and trains.

    python -m benchmarks.bench_frame_attack [--limit 1G] [--connections 2] [--frames 256] [--tree PATH] [--write-docs]
        [--json PATH]

``--tree`` runs the frame attack with another checkout's ``sparkps`` package first on the path (e.g. the code
before the limit became exclusive, extracted with ``git archive``); the cross-job part needs this tree's.
Runs about 20 s; needs about connections x limit of free memory. ``--write-docs`` writes the frame attack's table
as section ``frame_attack`` of docs/security.md.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

from benchmarks import report
from benchmarks.process_memory import settled_rss

DOC = os.path.join(report.ROOT, "docs", "security.md")
SIZES = ("frames of the limit", "frames one byte below the limit")
UNENDED = "1 MiB frames of one message never ended"

GREETING = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + b"NULL" + b"\0" * 16 + b"\0" + b"\0" * 31
_READY_BODY = b"\x05READY" + b"\x0bSocket-Type" + (6).to_bytes(4, "big") + b"DEALER"
READY = bytes([0x04, len(_READY_BODY)]) + _READY_BODY


def frame_header(size):
    """ZMTP 3 flags + length of one final frame of ``size`` bytes (long form)."""
    return b"\x02" + size.to_bytes(8, "big")


def settled_rss_mib(pid, seconds=10.0):
    """The server's resident memory in MiB once it holds still (``process_memory.settled_rss``)."""
    return settled_rss(pid, seconds) / float(1 << 20)


def _attack(address, payload):
    """A raw connection to ``address`` that completed the ZMTP greeting, then sent what ``payload(sock)`` sends;
    None when disconnected on the way."""
    host, port = address[len("tcp://"):].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    try:
        sock.sendall(GREETING)
        got = 0
        while got < len(GREETING):
            data = sock.recv(4096)
            if not data:
                raise ConnectionResetError("closed during the greeting")
            got += len(data)
        payload(sock)
        return sock
    except OSError:
        sock.close()
        return None


def announce(address, size, chunk=1 << 20):
    """A connection that announced one frame of ``size`` bytes and streamed all of it but its last byte (so the
    peer holds it, incomplete); None when disconnected while sending."""
    def payload(sock):
        sock.sendall(READY + frame_header(size))
        block = b"\0" * chunk
        left = size - 1
        while left > 0:
            sock.sendall(block[:min(chunk, left)])
            left -= min(chunk, left)
    return _attack(address, payload)


def announce_frames(address, count, size=1 << 20):
    """A connection that sent ``count`` frames of ``size`` bytes, each flagged 'more' (one message never ended);
    None when disconnected while sending."""
    def payload(sock):
        sock.sendall(READY)
        frame = b"\x03" + size.to_bytes(8, "big") + b"\0" * size     # flags: more, long
        for _ in range(count):
            sock.sendall(frame)
    return _attack(address, payload)


def still_open(sock):
    """False once the peer closed the connection (libzmq disconnects a frame above its limit)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except (BlockingIOError, TimeoutError):
        return True
    except OSError:
        return False


def frame_attack(limit, connections, frames=256):
    """{size label: {'before_mib', 'during_mib', 'grown_mib', 'connections_kept'}} for frames of the limit, one
    byte below, and ``frames`` frames of 1 MiB in one message never ended, against one server process of a running
    job. ``limit`` None: the tree's default."""
    from sparkps.comm.postoffice import Postoffice
    from sparkps.comm.settings import resolve_max_message_bytes
    from sparkps.comm.timeouts import Timeouts
    from sparkps.scheduler import Scheduler
    limit_bytes = resolve_max_message_bytes(limit)
    timeouts = Timeouts(register=60, request=30, heartbeat_interval=0.5, heartbeat_timeout=60)
    sched = Scheduler(1, 1, transport="tcp", timeouts=timeouts).start()
    env = dict(os.environ, SPARKPS_SCHEDULER_URI=sched.uri, SPARKPS_SECRET=sched.secret,
               SPARKPS_MAX_MESSAGE_BYTES=str(limit_bytes))      # limit None: the value the tree resolved unset
    server = subprocess.Popen([sys.executable, "-m", "sparkps.server"], env=env)
    worker = Postoffice("worker", sched.uri, sched.secret, timeouts=timeouts, max_message_bytes=limit_bytes)
    out = {"limit_bytes": limit_bytes, "connections": connections, "frames": frames}
    try:
        worker.start()
        address = next(n["address"] for n in worker.nodes if n["role"] == "server")
        attacks = [(label, lambda size=size: announce(address, size))
                   for label, size in zip(SIZES, (limit_bytes, limit_bytes - 1))]
        if frames and limit_bytes > (1 << 20) + 9:
            attacks.append((UNENDED, lambda: announce_frames(address, frames)))
        for label, attack in attacks:
            before = settled_rss_mib(server.pid)
            opened = [attack() for _ in range(connections)]
            time.sleep(1.0)
            during = settled_rss_mib(server.pid, 5.0)
            opened = [sock if sock is not None and still_open(sock) else None for sock in opened]
            for sock in opened:
                if sock is not None:
                    sock.close()
            out[label] = {"before_mib": round(before, 1), "during_mib": round(during, 1),
                          "grown_mib": round(during - before, 1),
                          "connections_open": sum(sock is not None for sock in opened)}
            settled_rss_mib(server.pid)
        out["job_state_after"] = worker.wait(worker.request(0, "STATUS"), 10).meta["status"]["state"]
        worker.finish()
        sched.wait(30)
        server.wait(30)
    finally:
        worker.stop()
        sched.stop()
        if server.poll() is None:
            server.kill()
            server.wait()
    return out


def cross_job_replay():
    """B's refusal counters after job A's messages (same secret) were sent to B's scheduler and server."""
    import numpy as np

    from sparkps.comm import Endpoint, Postoffice
    from sparkps.comm.timeouts import Timeouts
    from sparkps.errors import PeerTimeout
    from sparkps.scheduler import Scheduler
    timeouts = Timeouts(register=30, request=10, heartbeat_interval=0.5, heartbeat_timeout=30)
    a = Scheduler(1, 1, transport="tcp", timeouts=timeouts).start()
    b = Scheduler(1, 1, transport="tcp", secret=a.secret, timeouts=timeouts).start()
    replayer = Endpoint("job A's worker", a.secret)
    replayer.join(a.job_id)
    replayer.start()
    server = Postoffice("server", b.uri, b.secret, timeouts=timeouts)
    worker = Postoffice("worker", b.uri, b.secret, timeouts=timeouts)
    unanswered = 0

    def send(address, cmd, meta=None, arrays=()):
        nonlocal unanswered
        try:
            replayer.wait(replayer.request(address, "B", cmd, meta, arrays), 0.5)
        except PeerTimeout:
            unanswered += 1
    try:
        send(b.uri, "REGISTER", {"role": "worker", "rank": None, "address": replayer.address})
        threads = [threading.Thread(target=node.start, kwargs={"handler": lambda m, r: r.reply(arrays=m.arrays)})
                   for node in (server, worker)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        replayer.node_id = worker.node_id
        for cmd, meta, arrays in (("INIT", {"pieces": [[0, 0, 4]], "shapes": [[0, [4]]]}, [np.ones(4, np.float32)]),
                                  ("SET_OPTIMIZER", {"config": {"name": "sgd"}}, []),
                                  ("PUSHPULL", {"keys": [0], "round": 1}, [np.ones(4, np.float32)]),
                                  ("COMMAND", {"name": "save", "path": "/tmp/x"}, [])):
            send(server.address, cmd, meta, arrays)
        reply = worker.wait(worker.request(server.server_ids[0], "PULL", arrays=[np.arange(3.0)]), 10)
        worker.finish()
        b.wait(20)
        return {"sent": 5, "unanswered": unanswered, "b_scheduler_refused": b.status()["refused_messages"],
                "b_server_refused": server.refused_reasons, "b_worker_trained": reply.arrays[0].tolist() == [0, 1, 2],
                "b_state": b.status()["state"]}
    finally:
        replayer.stop()
        worker.stop()
        server.stop()
        a.stop()
        b.stop()


SECTIONS = ("frame_attack",)


def render(run):
    """The section of a run record (pure function of it)."""
    return markdown(run["data"]["figures"], argparse.Namespace(**run["data"]["options"]))


def markdown(figures, args):
    """The frame attack's figures as the ``frame_attack`` section of docs/security.md."""
    runs = [(name[len("frame attack, "):], run) for name, run in figures.items() if name.startswith("frame attack")]
    limit = "`SPARKPS_MAX_MESSAGE_BYTES` %s" % args.limit if args.limit else "each tree's default frame limit"
    lines = ["`python -m sparkps.server` of a running job with %s; %d raw TCP connections (ZMTP 3, no secret) each "
             "announce one frame and stream all of it, then each sends %d frames of 1 MiB as one message it never "
             "ends; the server process's RSS before and while they are open." % (limit, args.connections, args.frames),
             "", "| code | limit (MiB) | frames sent | RSS before (MiB) | RSS during (MiB) | grown (MiB) "
             "| connections left open |", "|---|---|---|---|---|---|---|"]
    for code, run in runs:
        for label in SIZES + (UNENDED,):
            if label not in run:
                continue
            row = run[label]
            lines.append("| %s | %.2f | %s | %.1f | %.1f | %.1f | %d |"
                         % (code, run["limit_bytes"] / float(1 << 20), label, row["before_mib"], row["during_mib"],
                            row["grown_mib"], row["connections_open"]))
    replay = figures["cross-job replay, this tree"]
    lines += ["", "Cross-job replay (this tree): %d messages of job A sent to job B, %d answered; B's worker "
              "trained: %s." % (replay["sent"], replay["sent"] - replay["unanswered"],
                                "yes" if replay["b_worker_trained"] else "no")]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_frame_attack", description=__doc__.split("\n")[0])
    parser.add_argument("--limit", help="the server's SPARKPS_MAX_MESSAGE_BYTES (default: the tree's own default)")
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--frames", type=int, default=256, help="1 MiB frames of the message never ended")
    parser.add_argument("--tree", help="run the frame attack with this checkout's sparkps package")
    parser.add_argument("--attack-only", action="store_true", help=argparse.SUPPRESS)
    report.add_output_args(parser)
    args = parser.parse_args(argv)
    if args.attack_only:
        print(json.dumps(frame_attack(args.limit, args.connections, args.frames)))
        return
    run = report.Run("bench_frame_attack", argv)
    figures = {}
    if args.tree:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(args.tree), os.getcwd()]))
        limit = ["--limit", args.limit] if args.limit else []
        done = subprocess.run([sys.executable, "-m", "benchmarks.bench_frame_attack", "--attack-only", *limit,
                               "--connections", str(args.connections), "--frames", str(args.frames)], env=env,
                              check=True, capture_output=True, text=True, cwd="/")   # not the checkout (-m: cwd first)
        figures["frame attack, %s" % args.tree] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["frame attack, this tree"] = frame_attack(args.limit, args.connections, args.frames)
    figures["cross-job replay, this tree"] = cross_job_replay()
    print(json.dumps(figures, indent=2))
    print(run.publish(args, "frame_attack", {"options": report.options(args), "figures": figures}, render, doc=DOC))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=2)


if __name__ == "__main__":
    main()

"""Ask a running scheduler for its status over the wire (what `sparkps status` does)."""
import zmq

from sparkps.comm import message as wire
from sparkps.comm.security import CurveKeys, secret_bytes
from sparkps.errors import PeerTimeout, RemoteError


def fetch_status(uri, secret, timeout=10.0, curve=False):
    """The scheduler's status dict (see Scheduler.status).  Blocks at most ``timeout`` seconds,
    then raises PeerTimeout (scheduler gone, or a wrong secret: unauthenticated requests are dropped)."""
    key = secret_bytes(secret)
    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    try:
        if curve:
            CurveKeys(secret).configure_client(sock)
        sock.connect(uri)
        sock.send_multipart(wire.encode(wire.Message("STATUS", rid=1), key))
        if not sock.poll(int(timeout * 1000)):
            raise PeerTimeout("no STATUS reply from the scheduler at %s within %g s (is it running, and is the "
                              "secret right?)" % (uri, timeout), node="scheduler")
        reply = wire.decode(sock.recv_multipart(), key)
        if reply.cmd == "ERROR":
            raise RemoteError("the scheduler at %s answered STATUS with: %s" % (uri, reply.err), node="scheduler")
        return reply.meta["status"]
    finally:
        sock.close(0)
        context.term()

"""Replay protection: every authenticated message carries its sender's node id, session and sequence number.

A sender numbers its messages 1, 2, ... within one session (16 random bytes chosen when its endpoint is
created, so a restarted node registers with a new session and starts again).  A receiver keeps, per sender,
the session it expects and a sliding window of the last ``WINDOW`` sequence numbers it accepted: a number
seen before is a replay, one older than the window is reordered too far; both are refused and counted.
The window (not a strict ``seq > last``) lets the threads of one node, which number their messages in one
sequence but send them on sockets of their own, arrive slightly out of order.

Binding to the registration: the scheduler learns each node's session from its REGISTER and puts it in
the node table; once a node has the table (``install``), a message claiming to come from node ``n`` is
accepted only with ``n``'s registered session, and a node id that is not in the table is refused.  Before
that (a worker's first push may overtake the server's copy of the table) the first session seen for a node
id is pinned and replaced by the table's.  Messages of nodes that have not registered yet (sender -1:
REGISTER, STATUS, ABORT) are windowed per session, for a bounded number of sessions, and only the scheduler
accepts them once it has a table (``install(..., anonymous=False)`` on servers and workers).

Binding to the job: every header carries the job's id (16 random bytes drawn by the scheduler, sent with the
node table).  Once a node knows it (``job``; the scheduler from the start), a message of another job is refused
and counted even when its secret is the same; a message without a job id only when it is a first REGISTER (the
scheduler answers it with the job id and registers nothing) or a STATUS.  Nothing blocks.

>>> f = Freshness()
>>> f.install({5: b"s" * 16})
>>> f.admit(5, b"s" * 16, 1), f.admit(5, b"s" * 16, 1), f.admit(5, b"t" * 16, 2), f.admit(6, b"s" * 16, 1)
(None, 'replayed', 'not the registered session of node 5', 'not a registered node')
"""
import collections
import threading

from sparkps.comm.message import SESSION_BYTES

WINDOW = 4096
MAX_ANONYMOUS_SESSIONS = 1024
REPLAYED = "replayed"
TOO_OLD = "reordered beyond the replay window"
OTHER_JOB = "from another job"
NO_JOB = "without this job's id"
JOBLESS_COMMANDS = frozenset(("REGISTER", "STATUS"))


class ReplayWindow:
    """The sequence numbers accepted from one session: the highest and a bitmap of the ``WINDOW`` below it.

    >>> w = ReplayWindow()
    >>> [w.admit(s) for s in (1, 3, 2, 3, 1)]
    [None, None, None, 'replayed', 'replayed']
    >>> w.admit(3 + WINDOW) is None, w.admit(3)
    (True, 'reordered beyond the replay window')
    """

    __slots__ = ("top", "seen")
    _MASK = (1 << WINDOW) - 1

    def __init__(self):
        self.top, self.seen = 0, 0  # bit i of seen: sequence number top - i was accepted

    def admit(self, seq):
        """None when ``seq`` is fresh (and records it), else the reason it is refused."""
        if seq > self.top:
            shift = seq - self.top
            self.seen = ((self.seen << shift) | 1) & self._MASK if shift < WINDOW else 1
            self.top = seq
            return None
        age = self.top - seq
        if age >= WINDOW:
            return TOO_OLD
        bit = 1 << age
        if self.seen & bit:
            return REPLAYED
        self.seen |= bit
        return None


class Freshness:
    """Sessions and replay windows of every sender one node hears from; thread-safe, never blocks.

    ``strict``: refuse node ids with no registered session (the scheduler from the start, other nodes
    once they have the node table).  ``refused`` counts refusals by reason.
    """

    def __init__(self, strict=False, job=b""):
        self.strict, self.anonymous, self.job = strict, True, bytes(job)
        self.refused = collections.Counter()
        self._lock = threading.Lock()
        self._sessions, self._windows = {}, {}
        self._anonymous = collections.OrderedDict()

    @property
    def replays(self):
        """How many messages were refused as replayed, reordered or from a session not registered."""
        return sum(self.refused.values())

    def expect(self, node_id, session):
        """Accept node ``node_id`` only with ``session`` from now on (a new session starts a new window)."""
        with self._lock:
            if self._sessions.get(node_id) != session:
                self._sessions[node_id] = bytes(session)
                self._windows[node_id] = ReplayWindow()

    def install(self, sessions, anonymous=True):
        """The node table's ``{node id: session}``: expect each, then refuse every other node id (and, with
        ``anonymous=False``, every sender that has not registered)."""
        for node_id, session in sessions.items():
            self.expect(node_id, session)
        self.strict, self.anonymous = True, anonymous

    def admit(self, sender, session, seq):
        """None when the message is fresh (and records it), else the reason it is refused (counted)."""
        reason = self._check(sender, session, seq)
        if reason is not None:
            with self._lock:
                self.refused[reason] += 1
        return reason

    def admit_job(self, job, cmd, reply=False):
        """None when a message of job ``job`` (bytes) may be heard: this node does not know its job yet, the job
        is this one, or it is a jobless first REGISTER / STATUS request to a node hearing unregistered senders;
        else the reason it is refused (counted)."""
        reason = None
        if self.job and job != self.job:
            if job:
                reason = OTHER_JOB
            elif reply or cmd not in JOBLESS_COMMANDS or not self.anonymous:
                reason = NO_JOB
        if reason is not None:
            with self._lock:
                self.refused[reason] += 1
        return reason

    def _check(self, sender, session, seq):
        if len(session) != SESSION_BYTES or seq < 1:
            return "no session or sequence number"
        with self._lock:
            if sender < 0:
                return self._anonymous_window(session).admit(seq) if self.anonymous else "not a registered node"
            expected = self._sessions.get(sender)
            if expected is None:
                if self.strict:
                    return "not a registered node"
                self._sessions[sender], expected = session, session
                self._windows[sender] = ReplayWindow()
            if expected != session:
                return "not the registered session of node %d" % sender
            return self._windows[sender].admit(seq)

    def _anonymous_window(self, session):
        window = self._anonymous.get(session)
        if window is None:
            window = self._anonymous[session] = ReplayWindow()
            if len(self._anonymous) > MAX_ANONYMOUS_SESSIONS:
                self._anonymous.popitem(last=False)
        else:
            self._anonymous.move_to_end(session)
        return window

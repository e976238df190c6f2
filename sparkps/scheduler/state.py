"""The scheduler's decisions as plain classes without sockets: registration and ranks, barriers,
heartbeats, and the job's life cycle.  Every method is given the current time where time matters.
"""
from sparkps.errors import ClusterError, ConfigError

ROLES = ("server", "worker")


def _ranks(ranks):
    ranks = list(ranks)
    return ("rank %d" % ranks[0]) if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


class Registry:
    """Who registered, with which requested rank; assigns deterministic ranks and node ids.

    A node may ask for a rank (e.g. its Spark partition id); the others get the free ranks in order
    of arrival.  Node ids: scheduler 0, servers 1..S by rank, workers S+1..S+W by rank.

    >>> r = Registry(1, 2)
    >>> _ = r.add('worker', 1, 'tcp://a'), r.add('worker', None, 'tcp://b'), r.add('server', None, 'tcp://c')
    >>> [(n['role'], n['rank'], n['id'], n['address']) for n in r.assign()]
    [('server', 0, 1, 'tcp://c'), ('worker', 0, 2, 'tcp://b'), ('worker', 1, 3, 'tcp://a')]
    """

    def __init__(self, num_servers, num_workers):
        for name, count in (("servers", num_servers), ("workers", num_workers)):
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ConfigError("the number of %s must be a positive integer, got %r" % (name, count))
        self.counts = {"server": num_servers, "worker": num_workers}
        self.entries = []

    def add(self, role, rank, address, info=None):
        """Record a registration; returns its index.  Raises ClusterError for a role that is full,
        an unknown role, a rank out of range or a rank already taken."""
        if role not in self.counts:
            raise ClusterError("cannot register role %r (expected server or worker)" % (role,))
        count = self.counts[role]
        mine = [e for e in self.entries if e["role"] == role]
        if len(mine) >= count:
            raise ClusterError("the job already has its %d %s%s" % (count, role, "s" if count > 1 else ""))
        if rank is not None:
            if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < count:
                raise ClusterError("%s rank %r is out of range: the job has %d %ss (ranks 0..%d)"
                                   % (role, rank, count, role, count - 1))
            taken = [e for e in mine if e["requested"] == rank]
            if taken:
                raise ClusterError("%s rank %d was already taken by the node at %s"
                                   % (role, rank, taken[0]["address"]))
        self.entries.append({"role": role, "requested": rank, "address": address, "info": dict(info or {})})
        return len(self.entries) - 1

    @property
    def complete(self):
        return len(self.entries) == sum(self.counts.values())

    def _rank_plan(self, role):
        """(rank per entry index, ranks nobody will get) for one role."""
        mine = [(i, e) for i, e in enumerate(self.entries) if e["role"] == role]
        requested = {e["requested"] for _, e in mine if e["requested"] is not None}
        free = [r for r in range(self.counts[role]) if r not in requested]
        plan = {}
        for i, e in mine:
            plan[i] = e["requested"] if e["requested"] is not None else free.pop(0)
        return plan, free

    def assign(self):
        """The node table: one dict per node (id, role, rank, address, index), sorted by id."""
        nodes = []
        for role in ROLES:
            plan, _ = self._rank_plan(role)
            base = 1 if role == "server" else 1 + self.counts["server"]
            for i, rank in plan.items():
                e = self.entries[i]
                nodes.append({"id": base + rank, "role": role, "rank": rank, "address": e["address"],
                              "index": i, **e["info"]})
        return sorted(nodes, key=lambda n: n["id"])

    def missing(self):
        """A sentence naming the roles and ranks that never registered ('' when complete)."""
        parts = []
        for role in ROLES:
            _, free = self._rank_plan(role)
            if free:
                parts.append("%d of %d %ss (%s)" % (len(free), self.counts[role], role, _ranks(free)))
        return " and ".join(parts) + (" never registered" if parts else "")


class BarrierBook:
    """Barriers per group: who is waiting, and when everyone expected has arrived.

    >>> b = BarrierBook()
    >>> b.enter('workers', 4, 'token4', expected={4, 5})
    []
    >>> b.enter('workers', 5, 'token5', expected={4, 5})
    ['token4', 'token5']
    """

    def __init__(self):
        self.waiting = {}

    def enter(self, group, node_id, token, expected):
        """Record ``node_id`` in ``group``; returns the tokens to release (all of them) or []."""
        self.waiting.setdefault(group, {})[node_id] = token
        return self.check(group, expected)

    def check(self, group, expected):
        """Release ``group`` if everyone in ``expected`` is waiting (used when a member finishes)."""
        waiting = self.waiting.get(group, {})
        if waiting and set(expected) <= set(waiting):
            del self.waiting[group]
            return [waiting[n] for n in sorted(waiting)]
        return []

    def drain(self):
        """Every waiting token (the job ended); the book is empty afterwards."""
        tokens = [t for group in self.waiting.values() for t in group.values()]
        self.waiting = {}
        return tokens


class HeartbeatMonitor:
    """Last heartbeat per node; nodes silent for longer than ``timeout`` seconds are overdue.

    >>> h = HeartbeatMonitor(timeout=2.0)
    >>> h.beat(1, now=0.0); h.beat(2, now=1.5)
    >>> h.overdue(now=2.5)
    [(1, 2.5)]
    """

    def __init__(self, timeout):
        self.timeout = timeout
        self.last = {}

    def beat(self, node_id, now):
        self.last[node_id] = now

    def forget(self, node_id):
        self.last.pop(node_id, None)

    def age(self, node_id, now):
        """Seconds since ``node_id``'s last heartbeat, or None if it is not watched."""
        return None if node_id not in self.last else now - self.last[node_id]

    def overdue(self, now):
        """(node id, age) of every watched node silent for more than the timeout, oldest first."""
        late = [(n, now - t) for n, t in self.last.items() if now - t > self.timeout]
        return sorted(late, key=lambda item: -item[1])


class JobLifecycle:
    """registering -> running -> finished | failed; errors and finished workers.

    >>> job = JobLifecycle(num_workers=2)
    >>> job.start_running(); job.worker_finished(0)
    False
    >>> job.worker_finished(1), job.state
    (True, 'finished')
    """

    def __init__(self, num_workers):
        self.num_workers = num_workers
        self.state = "registering"
        self.finished_workers = set()
        self.errors = []
        self.failure = None

    def start_running(self):
        if self.state == "registering":
            self.state = "running"

    @property
    def ended(self):
        return self.state in ("finished", "failed")

    def worker_finished(self, rank):
        """Record that worker ``rank`` finished; True when this made the whole job finished."""
        self.finished_workers.add(rank)
        if self.state == "running" and len(self.finished_workers) == self.num_workers:
            self.state = "finished"
            return True
        return False

    def fail(self, node, message, error):
        """Record an error; True when it is the first failure (the one that ends the job)."""
        self.errors.append({"node": node, "message": message})
        if self.ended:
            return False
        self.state, self.failure = "failed", error
        return True


def merge_counts(old, new):
    """Counters of one node (nested dicts of integers) merged by taking the larger count everywhere: counts only
    grow, so an older report arriving late never lowers one.

    >>> merge_counts({'served': {'PUSHPULL': {'3': 3}}}, {'served': {'PUSHPULL': {'3': 2, '4': 1}}})
    {'served': {'PUSHPULL': {'3': 3, '4': 1}}}
    """
    if not isinstance(old, dict) or not isinstance(new, dict):
        if isinstance(new, int) and isinstance(old, int):
            return max(old, new)
        return new if new is not None else old
    merged = dict(old)
    for key, value in new.items():
        merged[key] = merge_counts(old.get(key), value) if key in old else value
    return merged


class RequestBook:
    """What the scheduler knows of the job's requests: the messages it received by command (and the span they
    came over), and each node's latest counters (a server's served requests, a worker's steps), merged with
    :func:`merge_counts`. Servers report the senders of what they served as node ids; ``summary`` names them.

    >>> book = RequestBook()
    >>> book.received('HEARTBEAT', now=1.0); book.received('HEARTBEAT', now=3.0)
    >>> book.update(1, {'served': {'PUSHPULL': {'3': 4}}, 'row_steps': {'3': 4}})
    >>> book.update(3, {'steps': 4, 'step_requests': 4})
    >>> names = {1: ('server', 0), 3: ('worker', 0)}
    >>> book.summary(names)['servers']['0']['served']
    {'PUSHPULL': {'worker 0': 4}}
    >>> book.summary(names)['scheduler']
    {'received': {'HEARTBEAT': 2}, 'span_s': 2.0, 'spans_s': {'HEARTBEAT': 2.0}}
    """

    def __init__(self):
        self.by_command = {}
        self.first = self.last = None
        self.first_of = {}    # command -> when the first of its messages came
        self.last_of = {}
        self.counters = {}

    def received(self, cmd, now):
        """Count one message ``cmd`` received at ``now`` (monotonic seconds)."""
        self.by_command[cmd] = self.by_command.get(cmd, 0) + 1
        if self.first is None:
            self.first = now
        self.first_of.setdefault(cmd, now)
        self.last = self.last_of[cmd] = now

    def update(self, node_id, counters):
        """Merge a report of node ``node_id``'s counters (a dict; anything else is ignored)."""
        if isinstance(counters, dict):
            self.counters[node_id] = merge_counts(self.counters.get(node_id, {}), counters)

    def summary(self, roles):
        """``{'scheduler': {'received', 'span_s', 'spans_s'}, 'servers': {rank: counters}, 'workers': {rank:
        counters}}`` with every sender node id named ('worker 2', 'scheduler'); ``roles``: {node id: (role, rank)}.
        ``span_s``: seconds from the first message received to the last; ``spans_s``: the same by command."""
        def name(node):
            node = int(node) if str(node).lstrip("-").isdigit() else node
            if node == 0:
                return "scheduler"
            return "%s %s" % roles[node] if node in roles else "node %s" % node

        servers, workers = {}, {}
        for node_id, counters in self.counters.items():
            role, rank = roles.get(node_id, (None, None))
            if role == "server":
                counters = dict(counters)
                counters["served"] = {cmd: {name(s): n for s, n in by.items()}
                                      for cmd, by in (counters.get("served") or {}).items()}
                counters["row_steps"] = {name(s): n for s, n in (counters.get("row_steps") or {}).items()}
                servers[str(rank)] = counters
            elif role == "worker":
                workers[str(rank)] = dict(counters)
        span = 0.0 if self.first is None else round(self.last - self.first, 3)
        spans = {cmd: round(self.last_of[cmd] - first, 3) for cmd, first in self.first_of.items()}
        return {"scheduler": {"received": dict(self.by_command), "span_s": span, "spans_s": spans},
                "servers": servers, "workers": workers}

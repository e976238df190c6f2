"""KVServer: the request handler of one server node; it routes data requests to tables and consults a round policy.

It runs on the node's handler thread (one request at a time). Every request is parsed by
:func:`sparkps.comm.protocol.parse_request` (the one place requests are validated); data requests go to the
table their ``table`` field names (:mod:`sparkps.server.tables`), and pushes go through the round policy
INIT chose (:mod:`sparkps.server.policy`: ``sync`` rounds or ``async``). A pull for a round not yet
applied is parked with its responder and answered when the round completes. Bad requests are answered with an
ERROR naming what was wrong; nothing a peer sends can stop the server. A push holding NaN or infinity is refused
with an ERROR naming the worker and the key or row, or (server setting ``nonfinite='skip'``, from
``SPARKPS_NONFINITE``) dropped and counted, its round completing without it (:mod:`sparkps.optimizer.finite`).
Names and paths from the wire stay where the server started: INIT refuses a table name that is not an identifier,
and COMMAND write_tables writes only below ``tables_root`` (``SPARKPS_TABLES_ROOT``; none: no table is written), with
no ``..`` and no symbolic link followed (:func:`sparkps.rows.shards.folder_below`).

>>> # po = Postoffice('server', uri, secret); server = KVServer(po); po.start(server.handle)
"""
import collections
import logging
import os

import numpy as np

from sparkps.comm import protocol
from sparkps.comm.manifest import read_manifest
from sparkps.comm.message import BufferPool
from sparkps.errors import ConfigError, MalformedMessage
from sparkps.optimizer.finite import NonFinite, nonfinite_mode
from sparkps.rows.shards import check_table_name, folder_below
from sparkps.server.policy import create_policy
from sparkps.server.tables import create_table

log = logging.getLogger(__name__)
_EMPTY = np.zeros(0, np.float32)


class KVServer:
    """Serves the tables of one server node; ``handle(msg, responder)`` is the node's handler."""

    def __init__(self, postoffice, nonfinite=None, tables_root=None, start_tables=None):
        self.postoffice = postoffice
        # COMMAND load_tables reads the shard files of this folder only (None: none), fixed for the server's life
        self.start_tables = None if start_tables is None else os.path.realpath(os.path.abspath(start_tables))
        # COMMAND write_tables writes only below this folder (None: nowhere), fixed for the server's life
        self.tables_root = None if tables_root is None else os.path.realpath(os.path.abspath(tables_root))
        self.nonfinite = nonfinite_mode(nonfinite)
        self.skipped = collections.Counter()  # pushes dropped for a NaN or infinity (nonfinite='skip'), by sender
        self.tables = {protocol.DEFAULT_TABLE: create_table(protocol.DEFAULT_TABLE)}
        self.served = collections.Counter()  # requests served, by (command, sender node id)
        self.row_steps = collections.Counter()  # PUSHPULLs carrying sparse rows (a whole step), by sender node id
        self.steps = collections.Counter()   # steps pushed, by sender node id (a checkpoint's data positions)
        self.optimizer_config = None
        self._policy_name = "async"
        self._policy_options = {}
        self._policy = None
        self._buffers = BufferPool()
        self._handlers = {protocol.Init: self._init, protocol.Push: self._push, protocol.Pull: self._pull,
                          protocol.PushPull: self._pushpull, protocol.SetOptimizer: self._set_optimizer,
                          protocol.Command: self._command, protocol.Leave: self._leave}
        self._commands = {"set_lr": self._set_lr, "save": self._save, "load": self._load, "stats": self._stats,
                          "compact": self._compact, "write_tables": self._write_tables,
                          "load_tables": self._load_tables}

    @property
    def policy(self):
        """The round policy (created on first use: the worker ids are known after start)."""
        if self._policy is None:
            self._policy = create_policy(self._policy_name, self.postoffice.worker_ids, self._policy_options)
        return self._policy

    @property
    def dense(self):
        """The dense table (every server has one)."""
        return self.tables[protocol.DEFAULT_TABLE]

    def handle(self, msg, responder):
        """Serve one request; raises (-> ERROR reply) on a malformed or impossible request."""
        request = protocol.parse_request(msg)
        self.served[msg.cmd, msg.sender] += 1
        self._handlers[type(request)](request, msg.sender, responder)

    def counters(self):
        """The requests this server served, as plain JSON values: ``{'served': {command: {sender node id: n}},
        'row_steps': {sender node id: n}}`` (node ids as strings; a row step is a PUSHPULL carrying sparse rows,
        also counted under PUSHPULL). Never blocks; safe from another thread (it copies the counters first)."""
        served = {}
        for (cmd, sender), n in dict(self.served).items():
            served.setdefault(cmd, {})[str(sender)] = n
        return {"served": served, "row_steps": {str(sender): n for sender, n in dict(self.row_steps).items()}}

    def _table(self, name):
        table = self.tables.get(name)
        if table is None:
            raise ConfigError("this server holds no table %r (tables: %s; INIT it first)"
                              % (name, ", ".join(sorted(self.tables))))
        return table

    # ---- data -------------------------------------------------------------------------------------
    def _init(self, request, sender, responder):
        # a table's name becomes a folder name when its shard is written: identifiers only
        check_table_name(request.table, "INIT: table")
        if request.options is not None and "name" in request.options:
            check_table_name(request.options["name"], "INIT of table %r: option 'name'" % request.table)
        if request.table not in self.tables:
            self.tables[request.table] = table = create_table(request.kind or request.table)
            if self.optimizer_config is not None:
                table.set_optimizer(self.optimizer_config)
        self.tables[request.table].init(request)
        if request.policy is not None:
            options = {k: v for k, v in request.policy.items() if k != "name"}
            if (request.policy["name"], options) != (self._policy_name, self._policy_options):
                self._policy_name, self._policy_options, self._policy = request.policy["name"], options, None
            _ = self.policy  # an unknown policy or option is an error of this INIT
        elif request.sync is not None:
            name = "sync" if request.sync else "async"
            if name != self._policy_name:
                self._policy_name, self._policy_options, self._policy = name, {}, None
        responder.reply()

    def _round(self, request):
        if request.round is None and self.policy.needs_round:
            raise MalformedMessage("request field 'round' must be an int, got None")
        return request.round or 0

    def _push(self, request, sender, responder, reply=True):
        """Hand the update to the round policy; returns whether the policy dropped it as stale."""
        round_ = self._round(request)
        updates = self._finite(sender, {request.table: (self._table(request.table), request)}, round_)
        if request.table == protocol.DEFAULT_TABLE:   # a sparse table's own push is part of the same step
            self.steps[sender] += 1
        stale = self.policy.answers_round and self.policy.is_stale(round_)
        self._apply_rounds(self.policy.push(sender, round_, updates))
        if reply:
            responder.reply(meta={"stale": True} if stale else None)
        return stale

    def _pull(self, request, sender, responder, stale=False):
        self._table(request.table)
        failure = self._failure(request.round or 0)
        if failure is not None:
            return responder.error(failure)
        if self.policy.wait_pull(request.round or 0, (responder, request)):
            self._answer_pull(responder, request, stale)

    def _pushpull(self, request, sender, responder):
        if request.tables is not None:
            return self._step(request, sender, responder)
        stale = self._push(request.as_push(), sender, responder, reply=False)
        self._pull(request.as_pull(), sender, responder, stale)

    def _step(self, request, sender, responder):
        """A step: the dense push and every table's row push are one round; the pull waits for it."""
        round_ = self._round(request)
        self.steps[sender] += 1
        self.row_steps[sender] += 1
        pushes = {}
        if request.keys:
            pushes[protocol.DEFAULT_TABLE] = (self.dense, request.as_push())
        for part in request.tables:
            table = self._table(part.name)
            if part.push_ids is not None:
                pushes[part.name] = (table, protocol.Push([], round_, part.name, part.push_ids, part.grads))
        self._apply_rounds(self.policy.push(sender, round_, self._finite(sender, pushes, round_)))
        failure = self._failure(round_)
        if failure is not None:
            return responder.error(failure)
        if self.policy.wait_pull(round_, (responder, request)):
            self._answer_pull(responder, request)

    def _finite(self, sender, pushes, round_=0):
        """``{table name: update}`` of the pushes ``{table name: (table, request)}`` of one step; a NaN or
        infinity in any of them refuses the step naming the worker (NonFinite) and fails its round (every pull
        waiting for it gets the refusal), or with ``nonfinite='skip'`` drops the whole step (``{}``: its round
        completes without it) and counts it."""
        try:
            return {name: table.gradient(request) for name, (table, request) in pushes.items()}
        except NonFinite as exc:
            who = self.postoffice.peer_name(sender)
            if self.nonfinite != "skip":
                refusal = NonFinite("%s pushed %s" % (who, exc))
                self._fail_round(round_, refusal)
                raise refusal from None
            self.skipped[sender] += 1
            if self.skipped[sender] == 1:
                log.warning("%s: skipping the pushes of %s holding NaN or infinity (nonfinite='skip'): %s; "
                            "later ones are counted in the stats", self.postoffice.name, who, exc)
            return {}

    def _answer_pull(self, responder, request, stale=False):
        meta = None
        if self.policy.answers_round:  # the worker's next push is tagged this round + 1
            meta = {"round": self.policy.applied, "stale": True} if stale else {"round": self.policy.applied}
        if isinstance(request, protocol.PushPull) and request.tables is not None:   # a step
            dense = self._snapshot(self.dense.read(request.as_pull())) if request.keys else _EMPTY
            rows = [self._snapshot(self.tables[t.name].read(protocol.Pull([], request.round, t.name, t.pull_ids,
                                                                          t.pull_counts)))
                    for t in request.tables if t.pull_ids is not None]
            responder.reply(meta=meta, arrays=[dense] + rows)
            return
        responder.reply(meta=meta, arrays=[self._snapshot(self.tables[request.table].read(request))])

    def _snapshot(self, values):
        # The reply is sent without a copy and later rounds change the weights in place: send a snapshot,
        # in a buffer reused once its last reply went out (values a table never changes go as they are).
        if values.flags.writeable and values.size:
            snapshot = self._buffers.take(values.size)
            snapshot[:] = values.reshape(-1)
            values = snapshot
        return values

    def _fail_round(self, round_, error):
        """Answer every pull parked for round ``round_`` or later with ``error``; later pulls of them get it too."""
        text = "round %d failed: %s: %s" % (round_, type(error).__name__, error)
        for responder, _ in self.policy.fail_round(round_, text):
            responder.error(text)

    def _failure(self, round_):
        """The refusal that failed ``round_`` (a pull of it is answered with it), or None."""
        return self.policy.failure(round_)

    def _apply_rounds(self, completed):
        for done in completed:
            for name, update in done.updates.items():
                try:
                    self.tables[name].apply(update, scale=done.scale)
                except NonFinite as exc:    # the update made weights non-finite: refused like such a gradient
                    self._fail_round(done.round, exc)
                    raise
            for responder, request in self.policy.mark_applied(done.round):
                self._answer_pull(responder, request)

    def _leave(self, request, sender, responder):
        self._apply_rounds(self.policy.leave(sender))
        responder.reply()

    # ---- optimizer and commands -------------------------------------------------------------------
    def _set_optimizer(self, request, sender, responder):
        for table in self.tables.values():
            table.set_optimizer(request.config)
        self.optimizer_config = request.config
        responder.reply()

    def _command(self, request, sender, responder):
        responder.reply(meta=self._commands[request.name](request) or {})

    def _stats(self, request):
        # every table but the dense one holds rows and reports their statistics (ServedTable.stats); the round
        # policy reports its counters (rounds applied, stale pushes dropped, ...) under "policy"
        return {"tables": {name: table.stats() for name, table in self.tables.items()
                           if name != protocol.DEFAULT_TABLE},
                "policy": {"policy": self._policy_name, **self.policy.status()},
                "nonfinite_skipped": {self.postoffice.peer_name(n): c for n, c in self.skipped.items()},
                "requests": self.counters()}

    def _set_lr(self, request):
        for table in self.tables.values():
            table.set_learning_rate(request.lr)

    def _save(self, request):
        reply = {"pieces": [], "optimizer": None, "tables": []}
        for table in self.tables.values():
            saved = table.save(request.path)
            reply["pieces"].extend(saved.pop("pieces", []))
            reply["tables"].extend(saved.pop("tables", []))
            reply["optimizer"] = reply["optimizer"] or saved.pop("optimizer", None)
            reply.update(saved)
        reply["steps"] = self.applied_steps()
        return reply

    def applied_steps(self):
        """``{worker node id: steps}``: how many steps of each worker the weights hold now (pushed and applied,
        or dropped as stale); saved with a checkpoint, it is where each worker resumes in its data."""
        return {str(node): self.steps[node] - self.policy.unapplied(node) for node in self.postoffice.worker_ids}

    def _compact(self, request):
        # each table merges its base and deltas into a new base of this server's shard (ServedTable.compact); the
        # worker that asked writes the manifest from the replies, then removes the replaced files
        manifest = read_manifest(request.path)
        return {"tables": [d for table in self.tables.values()
                           for d in table.compact(request.path, manifest).get("tables", [])]}

    def _write_tables(self, request):
        # each sparse table writes this server's shard of its rows as one Parquet file (ServedTable.write_shard);
        # the worker that asked gathers the replies into the tables' manifest (sparkps.rows.shards)
        # only below the tables root the server started with (no '..', no symbolic link followed)
        folder = folder_below(self.tables_root, request.path, "COMMAND write_tables: folder")
        return {"tables": {name: table.write_shard(folder, request.forget) for name, table in self.tables.items()
                           if table.kind == "sparse"}}

    def _load_tables(self, request):
        # a warm start: each sparse table reads its shard's rows from the tables folder of the model the fit starts
        # from, the one folder this server was started with (no path travels in the request)
        from sparkps.errors import DataError
        from sparkps.rows.shards import read_manifest as read_tables
        if self.start_tables is None:
            raise DataError("COMMAND load_tables refused: this server was started without the tables of a model to "
                            "start from (SPARKPS_START_TABLES)")
        manifest = read_tables(self.start_tables)
        return {"loaded": {name: table.load_start(self.start_tables, manifest) for name, table in self.tables.items()
                           if table.kind == "sparse"}}

    def _load(self, request):
        manifest = read_manifest(request.path)
        for table in self.tables.values():
            table.load(request.path, manifest)
        if manifest.get("optimizer") is not None:
            self.optimizer_config = manifest["optimizer"]

    def close(self, reason="the server stopped"):
        """Answer every parked pull with an ERROR (the server is going down)."""
        if self._policy is not None:
            for responder, _ in self._policy.parked():
                responder.error(reason)

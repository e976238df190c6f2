"""What a worker asks of every server, beside pushes and pulls: the optimizer, the learning rate, checkpoints
(save, load, resume) and statistics. A mixin of :class:`sparkps.worker.dist_kvstore.DistKVStore` (it uses the
store's ``worker``, ``postoffice``, ``rank``, ``barrier`` and its queued pushes); every call blocks until every
server answered, at most the request timeout.
"""
import numpy as np

from sparkps.comm import manifest, protocol
from sparkps.optimizer import from_config as optimizer_from_config


class ServerCommands:
    """The COMMAND and SET_OPTIMIZER requests of a dist kvstore."""

    def server_stats(self):
        """The round policy's counters of every server (rounds applied, stale pushes dropped, ...), by rank.

        Blocks until every server answered (at most the request timeout).
        """
        self._wait_pushes()
        replies = self.worker.wait(self.worker.command(protocol.Command("stats")))
        return [r.meta.get("policy", {}) for r in replies]

    def server_requests(self):
        """The requests every server served (``KVServer.counters``: by command and sender, and the row steps),
        by server rank. Blocks until every server answered (at most the request timeout)."""
        self._wait_pushes()
        replies = self.worker.wait(self.worker.command(protocol.Command("stats")))
        return [r.meta.get("requests", {}) for r in replies]

    def set_optimizer(self, optimizer):
        """Rank 0 sends ``optimizer.to_config()`` (JSON) to every server; then a barrier. Collective.

        Model averaging and EASGD keep ``optimizer`` on this worker and give the servers their own rule.
        """
        if self._local is not None:
            self._local.set_optimizer(optimizer)
            optimizer = self._local.server_optimizer(optimizer)
        if optimizer is not None and not optimizer.elementwise:
            self._keep_keys_whole()
        if self.rank == 0 and optimizer is not None:
            self.worker.wait(self.worker.command(protocol.SetOptimizer(optimizer.to_config())))
        self.barrier()
        if self._resume_path is not None:       # a checkpoint holds every row: it replaces a warm start's tables
            path, self._resume_path = self._resume_path, None
            self._start_tables = False
            self.load_checkpoint(path)
        elif self._start_tables:
            self._start_tables = False
            self.load_start_tables()

    def _keep_keys_whole(self):
        """Lay every dense key on one server from now on: the servers' optimizer is not ``elementwise`` (LAMB's
        step takes the norms of the whole weight), so no key may be updated in pieces. The keys ``init`` cut across
        servers are re-laid whole (:meth:`sparkps.comm.layout.KeyLayout.lay_whole`, the same on every worker) and
        rank 0 moves their current values (a pull, then a relay INIT). Blocks until the servers answered."""
        layout = self.worker.layout
        layout.whole_keys = True
        cut = layout.cut_keys()
        if not cut:
            return
        self._wait_pushes()
        values = [np.empty(layout.shapes[k], np.float32) for k in cut] if self.rank == 0 else None
        if values is not None:
            self.worker.wait(self.worker.pull(cut, values))
        layout.lay_whole(cut)
        if values is not None:
            self.worker.wait(self.worker.relay(cut, values))

    def resume_from(self, path):
        """Load the checkpoint in ``path`` (weights, optimizer state, sparse tables) right after the next
        ``set_optimizer``, whose fresh optimizer state it replaces. Every worker calls it; the load then blocks
        as ``load_checkpoint`` does."""
        self._resume_path = str(path)

    def start_from_tables(self):
        """Have the servers load the sparse tables of the model this fit starts from right after the next
        ``set_optimizer`` (the tables exist and their optimizer is set by then): ``load_start_tables``, unless a
        checkpoint is resumed instead. Every worker calls it."""
        self._start_tables = True

    def load_start_tables(self):
        """Have every server load its shard of every sparse table from the shard files of the model the fit starts
        from (the folder each server was started with, ``SPARKPS_START_TABLES``; no row passes through a worker).
        Collective: rank 0 asks the servers, then a barrier. Returns ``{table: rows loaded}`` on rank 0 (``{}``
        elsewhere). Blocks until every server loaded (at most the request timeout) and every worker arrived."""
        loaded = {}
        if self.rank == 0:
            replies = self.worker.wait(self.worker.command(protocol.Command("load_tables")))
            for reply in replies:
                for name, rows in (reply.meta.get("loaded") or {}).items():
                    loaded[name] = loaded.get(name, 0) + int(rows)
        self.barrier()
        return loaded

    def set_learning_rate(self, lr):
        """Set the servers' learning rate (any worker may call it; blocks until every server applied it)."""
        self._wait_pushes()
        self.worker.wait(self.worker.command(protocol.Command("set_lr", lr=float(lr))))

    def table_stats(self):
        """``{table: {"rows", "bytes", "admitted", "evicted", ...}}`` of the sparse tables, summed over the
        servers (:func:`sum_table_stats`). Blocks until every server answered (at most the request timeout)."""
        self._wait_pushes()
        return self._fetch_table_stats()

    def _fetch_table_stats(self):
        replies = self.worker.wait(self.worker.command(protocol.Command("stats")))
        return sum_table_stats([r.meta.get("tables", {}) for r in replies])

    def save_checkpoint(self, path, resume=None):
        """Write weights and optimizer state of every key to directory ``path`` (call from one worker).

        Blocks until every server wrote its pieces; the manifest names pieces per key, so the checkpoint
        loads onto any number of servers. With ``resume`` (a JSON-able dict), the manifest also records it
        under ``"resume"``, with ``"steps"``: ``{rank: steps}``, how many steps of each worker the saved weights
        hold (the most any server applied: a step in flight to some servers only counts as done). Returns the
        manifest, written atomically after every piece. Pushes still queued are sent first, except with
        ``resume`` (a checkpoint taken while training): then a queued step of a network with sparse tables (its
        dense and row pushes wait for the next pull, to travel as one round) stays queued, and the checkpoint
        holds the steps before it.
        """
        if resume is not None:
            self._wait_sent()
        else:
            self._wait_pushes()
        path = str(path)
        replies = self.worker.wait(self.worker.command(protocol.Command("save", path=path)))
        described = [d for r in replies for d in r.meta.get("pieces", [])]
        config = next((r.meta["optimizer"] for r in replies if r.meta.get("optimizer")), None)
        tables = [d for r in replies for d in r.meta.get("tables", [])]
        if resume is not None:      # the servers count steps by worker node id; the checkpoint keeps ranks
            ranks = {str(n["id"]): str(n["rank"]) for n in self.postoffice.nodes if n["role"] == "worker"}
            steps = {}
            for reply in replies:
                for node, count in (reply.meta.get("steps") or {}).items():
                    rank = ranks.get(node, node)
                    count = int(count) if self._local is None else self._local.held_steps(count)
                    steps[rank] = max(steps.get(rank, 0), count)
            resume = dict(resume, steps=steps)
        return manifest.write_manifest(path, described, config, tables, resume=resume)

    def write_tables(self, folder, reading=None, forget=None):
        """Have every server write its shard of every sparse table into ``folder`` (one Parquet file per server
        and table, written by the servers in parallel, atomically: :mod:`sparkps.rows.shards`), then write the
        tables' manifest there from their replies; returns the manifest's tables map ({table: {"dim", "dtype",
        "rows", "options", "shards"}}). ``reading`` ({table: {option: value}}) adds what the servers do not hold
        to a table's options: how the network reads it (its ``fields`` and ``padding_id``). No row passes through
        this worker. Pushes still queued are sent first. ``forget`` (steps): the servers leave out the rows unseen
        for more than that many steps (docs/warm_start.md). Each table's entry also says how many ids were
        ``added``, ``kept`` and ``dropped`` against the model the fit started from (``ids``). Call from one worker;
        blocks until every server wrote (at most the request timeout).
        """
        from sparkps.rows import shards
        self._wait_pushes()
        folder = str(folder)
        replies = self.worker.wait(self.worker.command(protocol.Command("write_tables", path=folder, forget=forget)))
        tables = merged_shards([r.meta.get("tables", {}) for r in replies])
        for name, options in (reading or {}).items():
            if name in tables:
                tables[name]["options"] = dict(tables[name]["options"], **options)
        shards.write_manifest(folder, tables)
        return tables

    def load_checkpoint(self, path):
        """Replace weights and optimizer state with the checkpoint in ``path``. Collective.

        Keys not initialised yet are declared from the checkpoint (whole on one server each when the saved optimizer
        is not ``elementwise``, as ``set_optimizer`` lays them). Blocks until every server loaded
        (rank 0 asks them) and every worker arrived (a barrier).
        """
        path = str(path)
        saved = manifest.read_manifest(path)
        shapes = manifest.key_shapes(saved)
        if saved.get("optimizer") is not None and not optimizer_from_config(saved["optimizer"]).elementwise:
            self._keep_keys_whole()       # the servers run the saved optimizer: no key of it may be cut
        new = {k: s for k, s in shapes.items() if k not in self.worker.layout.shapes}
        if new:
            self.worker.declare(new)
        if self.rank == 0:
            if new:
                self.worker.wait(self.worker.init(sorted(new)))
            self.worker.wait(self.worker.command(protocol.Command("load", path=path)))
        self.barrier()


def merged_shards(per_server):
    """The manifest's tables map from the servers' replies to COMMAND write_tables (``[{table: {"dim", "dtype",
    "options", "shard"}}]``, one per server): each table's shards ordered by server, its rows summed.

    >>> entry = {"dim": 2, "dtype": "float32", "options": {}}
    >>> table = merged_shards([{"t": dict(entry, shard={"server": 1, "rows": 3})},
    ...                        {"t": dict(entry, shard={"server": 0, "rows": 4})}])["t"]
    >>> table["rows"], [s["server"] for s in table["shards"]]
    (7, [0, 1])
    """
    tables = {}
    for replied in per_server:
        for name, entry in replied.items():
            into = tables.setdefault(name, {"dim": int(entry["dim"]), "dtype": entry["dtype"],
                                            "options": entry["options"], "rows": 0, "shards": []})
            into["shards"].append(entry["shard"])
            into["rows"] += int(entry["shard"]["rows"])
            for kind, count in (entry["shard"].get("ids") or {}).items():    # added, kept, dropped
                into.setdefault("ids", {}).setdefault(kind, 0)
                into["ids"][kind] += int(count)
    for entry in tables.values():
        entry["shards"].sort(key=lambda shard: shard["server"])
    return tables


def sum_table_stats(per_server):
    """Add up the servers' ``{table: stats}`` dicts: counts (and per-server capacities) add, ``step`` keeps the
    largest, a field that is None on a server (no capacity) stays None.

    >>> sum_table_stats([{"t": {"rows": 2, "step": 5, "capacity": None}}, {"t": {"rows": 3, "step": 4,
    ...                  "capacity": None}}])
    {'t': {'rows': 5, 'step': 5, 'capacity': None}}
    """
    total = {}
    for tables in per_server:
        for name, stats in tables.items():
            into = total.setdefault(name, {})
            for field, value in stats.items():
                if field not in into:
                    into[field] = value
                elif value is None or into[field] is None:
                    into[field] = None
                else:
                    into[field] = max(into[field], value) if field == "step" else into[field] + value
    return total

"""The worker side of sparse tables on the parameter server: row-sparse keys of a DistKVStore.

A table key is initialised with an empty ``RowSparse`` (its shape gives ``dim`` and, for a bounded table,
``input_dim``): rank 0 sends an INIT of kind ``'sparse'`` to every server, each told its shard. Rows then live
on the server ``sparkps.rows.ids.shard_of(id, servers)`` names, created there on first pull from (table, id).

* ``row_sparse_pull(key, out, row_ids, counts=None, peek=False)``: the ids are split by server; one PULL of rows
  goes to each server that holds some (in sync mode for this worker's last round, so the rows include every update
  pushed before); the replies are scattered back into ``out`` in ``row_ids`` order. A training pull gives
  ``counts`` (how often its batch used each id: the servers add them to the ids' occurrence counts); ``peek``
  reads rows without counting or storing them (an epoch end's validation rows).
* ``push(key, RowSparse)``: repeated ids are summed and the rows split by server. ``dist_sync``: one PUSH of rows
  goes to *every* server (an empty one where no id lands), so each server counts one round per push of each worker;
  the server sums a round's rows per id over the workers and applies them once. ``dist_async``: a PUSH goes to
  each server that holds some of the rows and is applied on arrival.

* The push is queued (one per table): ``pull_step(keys, out, rows)`` sends it with the queued dense push of
  ``keys``, the dense pull and the pulls of ``rows`` as one PUSHPULL per server (one round on each server in sync
  mode: FeedForward's step); any other call that waits sends it on its own as above.
* ``compact_checkpoint(path)``: after saves into ``path``, every server merges its shard's base and deltas into a
  new base (COMMAND compact); this worker writes the manifest, then removes the replaced files.

Blocking: ``row_sparse_pull`` waits for its replies (at most the request timeout); a push returns at once and its
errors surface at the next call that waits (as dense pushes do).
"""
import os

import numpy as np

from sparkps.comm import manifest, protocol
from sparkps.errors import ConfigError, ShapeError
from sparkps.rows.config import table_config
from sparkps.rows.ids import pull_counts, row_ids, split_by_server, trusted
from sparkps.rows.values import RowSparse


class DistRowSparseKeys:
    """Row-sparse keys for DistKVStore (mixed in; uses its ``worker``, ``rank``, ``num_servers``, ``barrier``,
    ``_check_open``, ``_flush`` and ``_pending_pushes``). Not thread-safe, as DistKVStore."""

    def _row_tables(self):
        tables = self.__dict__.get("_tables")
        if tables is None:
            tables = self.__dict__["_tables"] = {}
        return tables

    def init_table(self, key, value, options=None):
        """Create sparse table ``key`` (``value``: an empty RowSparse giving ``dim`` and, for a bounded table,
        ``input_dim``) with its ``options`` (a TableConfig, or a map of declared options, sparkps/rows/config.py:
        min_count, ttl, decay, capacity, on_full, init_scale, optimizer, ...); ConfigError naming unknown options
        before anything is sent. Collective: rank 0 sends the INIT to every server, then a barrier."""
        self._init_rows(key, value, table_config(key, options))

    def _init_rows(self, key, value, config=None):
        """Create table ``key`` (its TableConfig ``config``) on every server (rank 0 sends its ``to_dict`` form;
        then a barrier), and record it on this worker once that succeeded. Collective."""
        if not isinstance(key, str) or not key or not isinstance(value, RowSparse):
            raise ConfigError(f"kvstore init: a sparse table is a name (a non-empty string) with a RowSparse value, "
                              f"got {key!r} with {type(value).__name__}")
        if value.ids.size:
            raise ConfigError(f"table {key!r}: a distributed table starts every row from its row initializer; "
                              f"initial rows cannot be given ({value.ids.size} were)")
        config = table_config(key, config).replace(dim=value.dim, input_dim=value.shape[0])
        options = config.to_dict()
        if self.rank == 0:
            shard = self.num_servers
            self.worker.wait(self.worker.init_table(key, "sparse", lambda s: dict(options, shard=[s, shard])))
        self.barrier()
        self._row_tables()[key] = value.shape     # only once every server holds it: a refused INIT leaves no table

    def _progress_tables(self):
        """Rank 0's view of the sparse tables' statistics for a progress report (None elsewhere or without
        tables). Queued pushes stay queued: a report never splits a step. Blocks for one stats request."""
        if self.rank != 0 or not self._row_tables():
            return None
        return self._fetch_table_stats()

    def compact_checkpoint(self, path):
        """Merge the incremental saves of the sparse tables in checkpoint ``path`` (written by ``save_checkpoint``
        into the same directory) into one base generation per table: every server writes the rows of its own
        shard, then this worker writes the manifest and removes the replaced files. Returns the manifest. Call it
        from one worker, after a save (the servers read the saved files, not their memory).

        Blocks until every server answered (at most the request timeout). DataError when ``path`` holds no
        kvstore manifest; a server's refusal (a missing or unreadable delta, a file of another table) is one
        RemoteError whose message names the file.
        """
        self._wait_pushes()
        path = str(path)
        saved = manifest.read_manifest(path)
        before = {name: [f for gen in entry["generations"] for f in gen["files"]]
                  for name, entry in saved.get("tables", {}).items()}
        replies = self.worker.wait(self.worker.command(protocol.Command("compact", path=path)))
        described = [d for r in replies for d in r.meta.get("tables", [])]
        if not described:
            return saved
        manifest.add_table_generation(saved, described)
        manifest.save_manifest(path, saved)
        for name in {d["table"] for d in described}:
            kept = set(saved["tables"][name]["generations"][0]["files"])
            for file_name in before.get(name, ()):
                stale = os.path.join(path, os.path.basename(file_name))
                if file_name not in kept and os.path.exists(stale):
                    os.remove(stale)
        return saved

    def _table_shape(self, key, what):
        shape = self._row_tables().get(key)
        if shape is None:
            raise ConfigError(f"kvstore {what}: {key!r} is not a sparse table of this kvstore (init it with a "
                              f"RowSparse value)")
        return shape

    def row_sparse_pull(self, key, out=None, row_ids=None, priority=0, counts=None,  # noqa: ARG002 (MXNet's)
                        peek=False):
        """Fill ``out`` ((len(row_ids), dim) array, or a RowSparse) with the rows of ``row_ids`` of table ``key``.
        ``counts``: how often the batch used each id (added to the servers' counts; None: once each); ``peek``:
        read the rows as they are, counting nothing and storing no row (held rows, else initial rows).

        Many ids are pulled in pieces (``pull_piece_ids``), one after the other, so that no request or reply frame
        reaches the sockets' frame limit. Blocks until every server holding some of the rows answered each piece
        (at most the request timeout a piece).
        """
        self._check_open(pushing=False)
        if out is None or row_ids is None:
            raise ConfigError("kvstore row_sparse_pull needs out= and row_ids=")
        input_dim, dim = self._table_shape(key, "row_sparse_pull")
        ids = _ids(key, row_ids, input_dim)
        if counts is not None and peek:
            raise ConfigError(f"kvstore row_sparse_pull: table {key!r}: a peek counts nothing; give counts or peek")
        counts = None if counts is None else pull_counts(counts, ids.size, key)
        target = np.empty((ids.size, dim), np.float32) if isinstance(out, RowSparse) else out
        if tuple(target.shape) != (ids.size, dim):
            raise ShapeError(f"row_sparse_pull: table {key!r} gives {ids.size} rows of width {dim}, out has shape "
                             f"{tuple(target.shape)}")
        self._flush()
        piece = pull_piece_ids(self.worker.postoffice.max_message_bytes, dim)
        for start in range(0, ids.size, piece):
            self._pull_piece(key, ids[start:start + piece], target[start:start + piece], dim,
                             None if counts is None else counts[start:start + piece], peek)
        if isinstance(out, RowSparse):
            out.ids, out.rows, out.shape = ids.view(np.int64), target, (input_dim, dim)
        return out

    def _pull_piece(self, key, ids, target, dim, counts=None, peek=False):
        """Fill ``target`` with the rows of ``ids`` (their uint32 ``counts`` or None): one PULL to each server
        holding some of them, then wait."""
        order, bounds = split_by_server(ids, self.num_servers)
        parts = {s: order[bounds[s]:bounds[s + 1]] for s in range(self.num_servers) if bounds[s + 1] > bounds[s]}
        if parts:
            arrays = {s: [ids[p]] + ([counts[p]] if counts is not None else []) for s, p in parts.items()}
            rid = self.worker.rows("PULL", key, arrays, peek=peek)
            for (_, positions), reply in zip(sorted(parts.items()), self.worker.wait(rid)):
                target[positions] = reply.arrays[0].reshape(-1, dim)

    def _push_rows(self, key, value):
        """Send a RowSparse gradient of table ``key``: one PUSH of rows to every server. Returns at once."""
        self._check_open()
        input_dim, dim = self._table_shape(key, "push")
        if not isinstance(value, RowSparse):
            raise ConfigError(f"kvstore push: table {key!r} takes RowSparse gradients, got {type(value).__name__}")
        if value.dim != dim:
            raise ShapeError(f"table {key!r} has rows of width {dim}, the gradient has width {value.dim}")
        merged = value.merged()
        ids = _ids(key, merged.ids, input_dim)
        grads = np.ascontiguousarray(merged.rows, dtype=np.float32)
        order, bounds = split_by_server(ids, self.num_servers)
        arrays = {}
        for s in range(self.num_servers):
            part = order[bounds[s]:bounds[s + 1]]
            if part.size or self.worker.sync:    # sync: every server counts this push as one of its rounds
                arrays[s] = [ids[part], grads[part].reshape(-1)]
        if not arrays:
            return
        staged = self._staged_rows()
        if key in staged:   # one queued push per table: an earlier one goes now
            self._flush_rows()
        staged[key] = arrays

    def _staged_rows(self):
        staged = self.__dict__.get("_queued_rows")
        if staged is None:
            staged = self.__dict__["_queued_rows"] = {}
        return staged

    def _flush_rows(self):
        """Send the queued row pushes each on its own (one PUSH of rows per table)."""
        staged = self._staged_rows()
        while staged:
            key, arrays = staged.popitem()
            self._pending_pushes.append(self.worker.rows("PUSH", key, arrays, new_round=bool(self.worker.rounds)))

    def pull_step(self, keys, out, rows):
        """Fill ``out`` with the weights of dense ``keys`` and, for each ``rows[table] = (row_ids, rows_out)`` or
        ``(row_ids, rows_out, counts)`` (how often the batch used each id: the servers count them), the rows of
        ``row_ids`` into ``rows_out``; the queued push of ``keys`` and of every table goes in the same
        requests: one PUSHPULL per server, one round (sync) covering the dense keys and every table.

        Without a queued push of exactly ``keys`` the pulls go as separate requests. Blocks until every server
        answered (at most the request timeout).
        """
        self._check_open(pushing=False)
        keys = list(keys)
        if self._deferred is None or len(set(keys)) != len(keys) or sorted(keys) != self._deferred.keys:
            for name, (ids, target, *counts) in rows.items():
                self.row_sparse_pull(name, out=target, row_ids=ids, counts=counts[0] if counts else None)
            self.pull(keys, out=out)
            return
        splits = {}   # checked before anything queued is taken: bad rows leave the queued pushes queued
        for name, (row_ids_, target, *counts) in rows.items():
            input_dim, dim = self._table_shape(name, "pull")
            splits[name] = self._split_pull(name, row_ids_, target, input_dim, dim, counts[0] if counts else None)
        staged, self._deferred = self._deferred, None
        pushes, self.__dict__["_queued_rows"] = self._staged_rows(), {}
        parts, places = {}, {}
        for name in dict.fromkeys(list(pushes) + list(rows)):
            dim = self._table_shape(name, "pull")[1]
            pulls = splits.get(name, {})
            pushed = pushes.get(name, {})
            for s in sorted(set(pulls) | set(pushed)):
                push_ids, grads = pushed.get(s, (None, None))
                pull_ids, positions, pull_counts_ = pulls.get(s, (None, None, None))
                parts.setdefault(s, []).append(protocol.TableStep(name, push_ids, grads, pull_ids, pull_counts_))
                if pull_ids is not None:
                    places.setdefault(s, []).append((rows[name][1], positions, dim))
        holders = set(self.worker.layout.servers_for(sorted(keys))) if keys else set()
        servers = [s for s in range(self.num_servers) if self.worker.sync or s in holders or s in parts]
        rid = self.worker.step(staged, keys, out, parts)
        self._wait_pushes()
        for s, reply in zip(servers, self.worker.wait(rid)):
            for (target, positions, dim), values in zip(places.get(s, []), reply.arrays[1:]):
                target[positions] = values.reshape(-1, dim)

    def _split_pull(self, name, row_ids, target, input_dim, dim, counts=None):
        """``{server: (uint64 ids, positions in target, uint32 counts or None)}`` of a pull of ``row_ids`` into
        ``target``."""
        ids = _ids(name, row_ids, input_dim)
        if tuple(target.shape) != (ids.size, dim):
            raise ShapeError(f"pull: table {name!r} gives {ids.size} rows of width {dim}, out has shape "
                             f"{tuple(target.shape)}")
        counts = None if counts is None else pull_counts(counts, ids.size, name)
        order, bounds = split_by_server(ids, self.num_servers)
        split = {}
        for s in range(self.num_servers):
            if bounds[s + 1] > bounds[s]:
                positions = order[bounds[s]:bounds[s + 1]]
                split[s] = (ids[positions], positions, None if counts is None else counts[positions])
        return split


def _ids(key, ids, input_dim):
    """``ids`` as uint64: CheckedIds as they are (a training batch's, checked where the batch entered), other ids
    checked here (DataError naming the table for float ids or ids outside a bounded table)."""
    ids_ = trusted(ids, input_dim)
    return row_ids(np.asarray(ids), key, input_dim) if ids_ is None else ids_


def pull_piece_ids(max_message_bytes, dim):
    """How many ids one piece of a pull may name: its largest frames (the ids, 8 bytes each, and a server's reply
    of ``dim`` float32 values a row, should every id of the piece be that server's) stay within half the frame
    limit, leaving the rest to headers.

    >>> pull_piece_ids(4 << 20, 16)
    32768
    """
    return max(1, (int(max_message_bytes) // 2) // max(4 * int(dim), 8))

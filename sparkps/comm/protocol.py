"""The data requests a worker sends a server, one small class each, with their encoding to and from the header.

Both sides import this module: the worker builds a request and sends ``request.meta()`` (plus its arrays);
the server turns a received Message back into the same class with :func:`parse_request`, which is the one
place a request is validated. A malformed request raises MalformedMessage naming the field at fault, and
the server answers it with an ERROR reply.

=============  ===============================================================  ======================
command        meta                                                              arrays
=============  ===============================================================  ======================
INIT           {"pieces": [[key, lo, hi]], "shapes": [[key, shape]],             [flat values] or []
               "sync": bool, "table": name?, "policy": {"name": n, ...}?}
PUSH           {"keys": [key, ...], "round": r (sync), "table": name?}          [flat gradient]
PULL           {"keys": [key, ...], "round": r (sync), "table": name?}          -> [flat weights]
PUSHPULL       PUSH and PULL of the same keys and round in one request          [flat gradient]
               (a step: also "tables": [[name, pushes, pulls, counted]], see    [.., row ids, grads]
               PushPull)
SET_OPTIMIZER  {"config": optimizer.to_config()}                                []
COMMAND        {"name": "set_lr", "lr": x} | {"name": "save"|"load"|"compact", "path": dir}  []
               | {"name": "write_tables", "path": dir} -> {"tables": {name: shard entry}}
               | {"name": "stats"} -> {"tables": row table stats, "policy": round policy counters}
LEAVE          {"round": last round pushed}                                      []
=============  ===============================================================  ======================

A PUSH/PUSHPULL whose header has ``"codec"`` (``{"type": "2bit", "threshold": t, "size": n}``) carries its
dense gradient encoded (:mod:`sparkps.comm.codec`; a step's first array, its rows as they are);
:func:`parse_request` decodes it. Policies with
``answers_round`` (``sync_replicas``) put ``"round"`` (the applied round) in a pull's reply, and
``"stale": true`` in the reply to a push they dropped.

``table`` names the server table a request is for (default ``"dense"``, see
:mod:`sparkps.server.tables`). Flat arrays are float32 (gradients may travel as float16).

Sparse rows (:mod:`sparkps.rows.ids`): an INIT with ``"kind": "sparse"`` and ``"options"`` (the table's
options, plus ``"shard": [server rank, server count]``) creates the table on that server; a PULL, PUSH or
PUSHPULL with ``"rows": true`` (and ``"keys": []``) names rows by id: arrays ``[ids]`` for a pull,
``[ids, grads]`` for a push, ids a uint64 (n,) array, grads float32 (n * dim values, or (n, dim)); a pull
answers rows float32 (n, dim). A training pull says how often its batch used each id: ``"counts": true`` and
arrays ``[ids, counts]``, counts a uint32 (n,) array (the table adds them to its occurrence counts; without them
each id counts once). A read that neither counts nor stores a row (``"peek": true``, arrays ``[ids]``; an
epoch end's validation rows) answers held rows and the initial rows of ids the table does not hold.

>>> from sparkps.comm.message import Message
>>> push = Push(keys=[0, 1], round=3)
>>> push.meta()
{'keys': [0, 1], 'round': 3}
>>> parse_request(Message("PUSH", meta=push.meta(), arrays=[np.zeros(4, np.float32)])).keys
[0, 1]
"""
from typing import NamedTuple

import numpy as np

from sparkps.comm.codec import decode_payload
from sparkps.errors import MalformedMessage

DEFAULT_TABLE = "dense"
FLOAT_DTYPES = (np.float32, np.float16)


def _int(meta, name, default=None, optional=False):
    value = meta.get(name, default)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedMessage("request field %r must be an int, got %r" % (name, value))
    return value


def _keys(meta):
    keys = meta.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0
                                             for k in keys):
        raise MalformedMessage("request field 'keys' must be a list of non-negative ints, got %r"
                               % (str(keys)[:80],))
    return keys


def _table(meta):
    table = meta.get("table", DEFAULT_TABLE)
    if not isinstance(table, str) or not table:
        raise MalformedMessage("request field 'table' must be a table name, got %r" % (table,))
    return table


def _values(msg, optional=False):
    """The one flat float array of a data request (None when ``optional`` and absent); a gradient sent
    through a codec (``"codec"`` in the header, :mod:`sparkps.comm.codec`) is decoded to float32 here."""
    if not msg.arrays and optional:
        return None
    if msg.meta.get("codec") is not None:
        return decode_payload(msg.meta["codec"], msg.arrays)
    if len(msg.arrays) != 1 or msg.arrays[0].dtype not in FLOAT_DTYPES:
        raise MalformedMessage("%s needs one float32 or float16 array, got %d array(s) of %s"
                               % (msg.cmd, len(msg.arrays), [str(a.dtype) for a in msg.arrays]))
    return msg.arrays[0].reshape(-1)


def _row_arrays(msg, with_grads):
    """``(ids, grads or None)`` of a row request: a uint64 ids frame, then for a push one float frame."""
    want = 2 if with_grads else 1
    arrays = msg.arrays
    if len(arrays) != want or arrays[0].dtype != np.uint64 or arrays[0].ndim != 1:
        raise MalformedMessage("%s of rows needs %s, got %d array(s) of %s"
                               % (msg.cmd, "a uint64 ids array and a float grads array" if with_grads
                                  else "one uint64 ids array", len(arrays), [str(a.dtype) for a in arrays]))
    if with_grads and arrays[1].dtype not in FLOAT_DTYPES:
        raise MalformedMessage("%s of rows: field 'grads' must be float32 or float16, got %s"
                               % (msg.cmd, arrays[1].dtype))
    return arrays[0], (arrays[1] if with_grads else None)


def _pull_counts(where, ids, counts):
    """``counts`` checked against the pulled ``ids``: a uint32 (n,) array as long as the ids, else
    MalformedMessage naming ``where``."""
    if counts.dtype != np.uint32 or counts.ndim != 1 or counts.size != ids.size:
        raise MalformedMessage("%s: field 'counts' must be a uint32 array of the %d pulled ids' counts, got %s %s"
                               % (where, ids.size, counts.dtype, counts.shape))
    return counts


def _flag(meta, name):
    value = meta.get(name, False)
    if not isinstance(value, bool):
        raise MalformedMessage("request field %r must be a bool, got %r" % (name, value))
    return value


def _is_rows(meta):
    rows = meta.get("rows", False)
    if not isinstance(rows, bool):
        raise MalformedMessage("request field 'rows' must be a bool, got %r" % (rows,))
    return rows


def _with_table(meta, table):
    if table != DEFAULT_TABLE:
        meta["table"] = table
    return meta


class Init(NamedTuple):
    """INIT: the pieces ``[[key, lo, hi]]`` of keys ``[[key, shape]]`` a server holds, and their values. With
    ``relay``, the keys of ``shapes`` are laid out anew: the server holds exactly the listed pieces of them (none
    when it is given none) and drops what else of them it held (:meth:`sparkps.comm.layout.KeyLayout.lay_whole`)."""
    pieces: list
    shapes: list
    sync: bool | None = None
    table: str = DEFAULT_TABLE
    values: np.ndarray | None = None
    kind: str | None = None        # the table kind when it differs from the table name ("sparse")
    options: dict | None = None    # the kind's table options (a sparse table's name, dim, optimizer, ...)
    policy: dict | None = None     # the round policy and its options: {"name": "sync_replicas", ...}
    relay: bool = False            # the keys of ``shapes`` are re-laid: these pieces replace the ones held

    def meta(self):
        meta = {"pieces": self.pieces, "shapes": self.shapes}
        if self.relay:
            meta["relay"] = True
        if self.sync is not None:
            meta["sync"] = bool(self.sync)
        if self.policy is not None:
            meta["policy"] = dict(self.policy)
        if self.kind is not None:
            meta["kind"] = self.kind
        if self.options is not None:
            meta["options"] = self.options
        return _with_table(meta, self.table)

    @classmethod
    def parse(cls, msg):
        meta = msg.meta
        pieces, shapes = meta.get("pieces"), meta.get("shapes")
        if not isinstance(pieces, list) or not all(
                isinstance(p, list) and len(p) == 3 and all(type(v) is int for v in p) for p in pieces):
            raise MalformedMessage("INIT field 'pieces' must be a list of [key, lo, hi] ints")
        if not isinstance(shapes, list) or not all(
                isinstance(s, list) and len(s) == 2 and type(s[0]) is int and isinstance(s[1], list)
                and all(type(d) is int and d >= 0 for d in s[1]) for s in shapes):
            raise MalformedMessage("INIT field 'shapes' must be a list of [key, [dims]]")
        sync = meta.get("sync")
        if sync is not None and not isinstance(sync, bool):
            raise MalformedMessage("INIT field 'sync' must be a bool, got %r" % (sync,))
        kind, options = meta.get("kind"), meta.get("options")
        if kind is not None and (not isinstance(kind, str) or not kind):
            raise MalformedMessage("INIT field 'kind' must be a table kind name, got %r" % (kind,))
        if options is not None and not isinstance(options, dict):
            raise MalformedMessage("INIT field 'options' must be a map, got %s" % type(options).__name__)
        policy = meta.get("policy")
        if policy is not None and (not isinstance(policy, dict) or not isinstance(policy.get("name"), str)):
            raise MalformedMessage("INIT field 'policy' must be a map with a 'name', got %r" % (policy,))
        relay = meta.get("relay", False)
        if not isinstance(relay, bool):
            raise MalformedMessage("INIT field 'relay' must be a bool, got %r" % (relay,))
        values = None if kind is not None else _values(msg, optional=True)
        return cls(pieces, shapes, sync, _table(meta), values, kind, options, policy, relay)


class Push(NamedTuple):
    """PUSH: a gradient for ``keys`` (summed over workers on the server), numbered ``round`` in sync mode."""
    keys: list
    round: int | None = None
    table: str = DEFAULT_TABLE
    ids: np.ndarray | None = None     # a push of rows: their uint64 ids (``values`` holds their grads)
    values: np.ndarray | None = None

    def meta(self):
        meta = {"keys": list(self.keys)}
        if self.round is not None:
            meta["round"] = int(self.round)
        if self.ids is not None:
            meta["rows"] = True
        return _with_table(meta, self.table)

    @classmethod
    def parse(cls, msg):
        meta = msg.meta
        if _is_rows(meta):
            ids, grads = _row_arrays(msg, with_grads=True)
            return cls([], _int(meta, "round", optional=True), _table(meta), ids=ids, values=grads)
        return cls(_keys(meta), _int(meta, "round", optional=True), _table(meta), values=_values(msg))


class Pull(NamedTuple):
    """PULL: the weights of ``keys`` after ``round`` (sync mode) was applied."""
    keys: list
    round: int | None = None
    table: str = DEFAULT_TABLE
    ids: np.ndarray | None = None     # a pull of rows: their uint64 ids
    counts: np.ndarray | None = None  # a training pull of rows: how often its batch used each id (uint32)
    peek: bool = False                # a read of rows that neither counts nor stores them

    def meta(self):
        meta = Push.meta(self)
        if self.counts is not None:
            meta["counts"] = True
        if self.peek:
            meta["peek"] = True
        return meta

    def arrays(self):
        """The frames of a pull of rows: ``[ids]``, or ``[ids, counts]``."""
        return [self.ids] + ([self.counts] if self.counts is not None else [])

    @classmethod
    def parse(cls, msg):
        meta = msg.meta
        if _is_rows(meta):
            counted, peek = _flag(meta, "counts"), _flag(meta, "peek")
            if counted and peek:
                raise MalformedMessage("PULL of rows: fields 'counts' and 'peek' exclude each other (a peek counts "
                                       "nothing)")
            arrays = msg.arrays
            if counted:
                if len(arrays) != 2 or arrays[0].dtype != np.uint64 or arrays[0].ndim != 1:
                    raise MalformedMessage("PULL of counted rows needs a uint64 ids array and a uint32 counts array, "
                                           "got %d array(s) of %s" % (len(arrays), [str(a.dtype) for a in arrays]))
                ids, counts = arrays[0], _pull_counts("PULL of rows", arrays[0], arrays[1])
            else:
                ids, counts = _row_arrays(msg, False)[0], None
            return cls([], _int(meta, "round", optional=True), _table(meta), ids, counts, peek)
        return cls(_keys(meta), _int(meta, "round", optional=True), _table(meta))


class TableStep(NamedTuple):
    """One sparse table's part of a step: the rows it pushes (``push_ids``, ``grads``) and pulls (``pull_ids``,
    with ``pull_counts``: how often the batch used each id, uint32, or None: once each); either side may be None."""
    name: str
    push_ids: np.ndarray | None = None
    grads: np.ndarray | None = None
    pull_ids: np.ndarray | None = None
    pull_counts: np.ndarray | None = None

    def arrays(self):
        pushed = [self.push_ids, self.grads] if self.push_ids is not None else []
        pulled = [self.pull_ids] + ([self.pull_counts] if self.pull_counts is not None else []) \
            if self.pull_ids is not None else []
        return pushed + pulled

    def counted(self):
        """True when the pull carries its ids' counts."""
        return self.pull_ids is not None and self.pull_counts is not None


class PushPull(NamedTuple):
    """PUSHPULL: a PUSH and a PULL of the same keys and round in one request.

    A *step* (``tables`` given) also carries rows of sparse tables: meta ``"tables": [[name, pushes, pulls,
    counted]]``, arrays ``[dense grads (may be empty, then keys == [])]`` then per table ``ids, grads`` if it
    pushes, ``ids`` if it pulls and the pulled ids' uint32 ``counts`` if it counts them. The dense push and every
    table push form one round; the reply is ``[dense weights]`` then the rows of each table that pulls, in order.
    """
    keys: list
    round: int | None = None
    table: str = DEFAULT_TABLE
    ids: np.ndarray | None = None
    values: np.ndarray | None = None
    tables: tuple | None = None    # a step: TableStep per sparse table

    def meta(self):
        meta = Push.meta(self)
        if self.tables is not None:
            meta["tables"] = [[t.name, t.push_ids is not None, t.pull_ids is not None, t.counted()]
                              for t in self.tables]
        return meta

    @classmethod
    def parse(cls, msg):
        if "tables" in msg.meta:
            return _parse_step(cls, msg)
        return cls(*Push.parse(msg))

    def as_push(self):
        return Push(*self[:5])

    def as_pull(self):
        return Pull(self.keys, self.round, self.table, self.ids)


def _parse_step(cls, msg):
    """A PUSHPULL step: the dense part and a TableStep per table (see PushPull)."""
    meta, arrays = msg.meta, msg.arrays
    tables = meta["tables"]
    if not isinstance(tables, list) or not all(
            isinstance(t, list) and len(t) == 4 and isinstance(t[0], str) and t[0]
            and all(type(flag) is bool for flag in t[1:]) and (t[2] or not t[3]) for t in tables):
        raise MalformedMessage("PUSHPULL field 'tables' must be a list of [table name, pushes, pulls, counted] "
                               "(counted only with pulls), got %r" % (str(tables)[:80],))
    want = 1 + sum(2 * push + pull + counted for _, push, pull, counted in tables)
    encoded = meta.get("codec") is not None
    if len(arrays) != want or not (encoded or arrays[0].dtype in FLOAT_DTYPES):
        raise MalformedMessage("PUSHPULL step over %d table(s) needs %d arrays (float dense grads first), got %d "
                               "of %s" % (len(tables), want, len(arrays), [str(a.dtype) for a in arrays]))
    keys = _keys(meta)
    dense = decode_payload(meta["codec"], arrays[:1]) if encoded else arrays[0].reshape(-1)
    if not keys and dense.size:
        raise MalformedMessage("PUSHPULL step: %d dense values but no 'keys'" % dense.size)
    steps, at = [], 1
    for name, push, pull, counted in tables:
        pulled = at + 2 * push
        ids_fields = ([("push ids", at)] if push else []) + ([("pull ids", pulled)] if pull else [])
        for field, index in ids_fields:
            if arrays[index].dtype != np.uint64 or arrays[index].ndim != 1:
                raise MalformedMessage("PUSHPULL step, table %r: field %r must be a uint64 (n,) array, got %s %s"
                                       % (name, field, arrays[index].dtype, arrays[index].shape))
        if push and arrays[at + 1].dtype not in FLOAT_DTYPES:
            raise MalformedMessage("PUSHPULL step, table %r: field 'grads' must be float32 or float16, got %s"
                                   % (name, arrays[at + 1].dtype))
        counts = _pull_counts("PUSHPULL step, table %r" % (name,), arrays[pulled], arrays[pulled + 1]) \
            if counted else None
        steps.append(TableStep(name, arrays[at] if push else None, arrays[at + 1] if push else None,
                               arrays[pulled] if pull else None, counts))
        at += 2 * push + pull + counted
    return cls(keys, _int(meta, "round", optional=True), DEFAULT_TABLE, None, dense, tuple(steps))


class SetOptimizer(NamedTuple):
    """SET_OPTIMIZER: the optimizer's JSON config (``optimizer.to_config()``); nothing is unpickled."""
    config: dict

    def meta(self):
        return {"config": self.config}

    @classmethod
    def parse(cls, msg):
        config = msg.meta.get("config")
        if not isinstance(config, dict):
            raise MalformedMessage("SET_OPTIMIZER field 'config' must be a map, got %s" % type(config).__name__)
        return cls(config)


class Command(NamedTuple):
    """COMMAND: ``set_lr`` (field ``lr``), ``save``, ``load`` or ``compact`` (field ``path``, a directory;
    ``compact`` merges the sparse tables' incremental saves there into one base; ``write_tables`` writes the
    server's shard of every sparse table there as a Parquet file, :mod:`sparkps.rows.shards`, leaving out the rows
    unseen for more than ``forget`` steps when given), ``stats`` (the
    statistics of the server's row tables: reply ``{"tables": {name: stats}}``), ``load_tables`` (no field: every
    sparse table takes the rows of its shard from the shard files of the model the server was started from,
    ``SPARKPS_START_TABLES``; a warm start, docs/warm_start.md)."""
    name: str
    lr: float | None = None
    path: str | None = None
    forget: int | None = None     # write_tables: leave out rows unseen for more than this many steps (None: none)

    NAMES = ("set_lr", "save", "load", "stats", "compact", "write_tables", "load_tables")

    def meta(self):
        meta = {"name": self.name}
        if self.lr is not None:
            meta["lr"] = float(self.lr)
        if self.path is not None:
            meta["path"] = str(self.path)
        if self.forget is not None:
            meta["forget"] = int(self.forget)
        return meta

    @classmethod
    def parse(cls, msg):
        meta = msg.meta
        name = meta.get("name")
        if name not in cls.NAMES:
            raise MalformedMessage("COMMAND field 'name' must be one of %s, got %r" % (list(cls.NAMES), name))
        if name == "set_lr":
            lr = meta.get("lr")
            if isinstance(lr, bool) or not isinstance(lr, (int, float)):
                raise MalformedMessage("COMMAND set_lr field 'lr' must be a number, got %r" % (lr,))
            return cls(name, lr=float(lr))
        if name in ("stats", "load_tables"):
            return cls(name)
        path = meta.get("path")
        if not isinstance(path, str) or not path:
            raise MalformedMessage("COMMAND %s field 'path' must be a directory, got %r" % (name, path))
        forget = meta.get("forget")
        if forget is not None and (name != "write_tables" or type(forget) is not int or forget < 1):
            raise MalformedMessage("COMMAND %s field 'forget' must be a whole number of steps >= 1 (write_tables "
                                   "only), got %r" % (name, forget))
        return cls(name, path=path, forget=forget)


class Leave(NamedTuple):
    """LEAVE: this worker pushes no more rounds (sync mode); ``round`` is the last one it pushed."""
    round: int = 0

    def meta(self):
        return {"round": int(self.round)}

    @classmethod
    def parse(cls, msg):
        return cls(_int(msg.meta, "round", default=0))


REQUESTS = {"INIT": Init, "PUSH": Push, "PULL": Pull, "PUSHPULL": PushPull, "SET_OPTIMIZER": SetOptimizer,
            "COMMAND": Command, "LEAVE": Leave}
COMMAND_OF = {cls: cmd for cmd, cls in REQUESTS.items()}


def parse_request(msg):
    """The request class instance ``msg`` carries; raises MalformedMessage naming the field at fault."""
    cls = REQUESTS.get(msg.cmd)
    if cls is None:
        raise MalformedMessage("a server does not serve %s requests" % msg.cmd)
    if not isinstance(msg.meta, dict):
        raise MalformedMessage("%s request meta is not a map" % msg.cmd)
    return cls.parse(msg)


def command_of(request):
    """The message command of a request instance (``Push(...)`` -> ``'PUSH'``)."""
    return COMMAND_OF[type(request)]

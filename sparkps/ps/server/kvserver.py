"""KVServer: the request handler of one server node (INIT, PUSH, PULL, PUSHPULL, optimizer, commands).

It runs on the node's handler thread (one request at a time), keeps weights and optimizer state in a
:class:`~sparkps.ps.server.store.ServerStore` and, in ``dist_sync`` mode, rounds in
:class:`~sparkps.ps.server.sync_round.SyncRounds`. A pull for a round not yet applied is parked with its
responder and answered when the round completes. Bad requests are answered with an ERROR naming what was
wrong; nothing a peer sends can stop the server.

Request meta:
    INIT        {"pieces": [[key, lo, hi]], "shapes": [[key, shape]], "sync": bool}, arrays [flat values]
    PUSH        {"keys": [...], "round": r (sync)}, arrays [flat gradient, float32 or float16]
    PULL        {"keys": [...], "round": r (sync)}  -> arrays [flat weights]
    PUSHPULL    PUSH and PULL of the same keys and round in one request
    SET_OPTIMIZER {"config": optimizer.to_config()}
    COMMAND     {"name": "set_lr", "lr": x} | {"name": "save"|"load", "path": dir}
    LEAVE       {} (sync mode: this worker pushes no more rounds)
"""
import collections
import logging

import numpy as np

from sparkps.ps.comm.buffers import BufferPool
from sparkps.errors import ConfigError, MalformedMessage
from sparkps.ps.server import checkpoint
from sparkps.ps.server.store import ServerStore
from sparkps.ps.server.sync_round import SyncRounds

log = logging.getLogger(__name__)


def _meta_int(meta, name, default=None):
    value = meta.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedMessage("request field %r must be an int, got %r" % (name, value))
    return value


def _meta_keys(meta):
    keys = meta.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
        raise MalformedMessage("request field 'keys' must be a list of ints, got %r" % (str(keys)[:80],))
    return keys


class KVServer:
    """Serves the key pieces of one server node; ``handle(msg, responder)`` is the node's handler.

    >>> # po = Postoffice('server', uri, secret); server = KVServer(po); po.start(server.handle)
    """

    def __init__(self, postoffice):
        self.postoffice = postoffice
        self.store = ServerStore()
        self.sync = None
        self.served = collections.Counter()  # requests served, by (command, sender node id)
        self._rounds = None
        self._buffers = BufferPool()
        self._handlers = {"INIT": self._init, "PUSH": self._push, "PULL": self._pull,
                          "PUSHPULL": self._pushpull, "SET_OPTIMIZER": self._set_optimizer,
                          "COMMAND": self._command, "LEAVE": self._leave}
        self._commands = {"set_lr": self._set_lr, "save": self._save, "load": self._load}

    @property
    def rounds(self):
        """The sync-round state (created on first use: the worker ids are known after start)."""
        if self._rounds is None:
            self._rounds = SyncRounds(self.postoffice.worker_ids)
        return self._rounds

    def handle(self, msg, responder):
        """Serve one request; raises (-> ERROR reply) on a malformed or impossible request."""
        handler = self._handlers.get(msg.cmd)
        if handler is None:
            raise MalformedMessage("a server does not serve %s requests" % msg.cmd)
        if not isinstance(msg.meta, dict):
            raise MalformedMessage("request meta is not a map")
        self.served[msg.cmd, msg.sender] += 1
        handler(msg, responder)

    # ---- data -------------------------------------------------------------------------------------
    def _init(self, msg, responder):
        meta = msg.meta
        pieces, shapes = meta.get("pieces"), meta.get("shapes")
        if not isinstance(pieces, list) or not isinstance(shapes, list):
            raise MalformedMessage("INIT needs 'pieces' and 'shapes' lists")
        values = self._one_array(msg, optional=True)
        held = [p for p in pieces if isinstance(p, list) and p and p[0] in self.store.slots]
        if held and len(held) == len(pieces):
            keys = [p[0] for p in pieces]
            if values is not None:
                self.store.assign(self.store.split(keys, values))
        else:
            self.store.init(pieces, shapes, values)
        if "sync" in meta:
            self.sync = bool(meta["sync"])
        responder.reply()

    def _one_array(self, msg, optional=False):
        if not msg.arrays and optional:
            return None
        if len(msg.arrays) != 1 or msg.arrays[0].dtype not in (np.float32, np.float16):
            raise MalformedMessage("%s needs one float32 or float16 array, got %d arrays"
                                   % (msg.cmd, len(msg.arrays)))
        return msg.arrays[0]

    def _received_grads(self, msg):
        keys = self.store.known(_meta_keys(msg.meta))
        grads = self.store.fused(keys, self._one_array(msg))
        if self.sync:
            _meta_int(msg.meta, "round")
        return keys, grads

    def _push(self, msg, responder, reply=True):
        keys, grads = self._received_grads(msg)
        if self.sync:
            self._apply_rounds(self.rounds.push(msg.sender, msg.meta["round"], grads))
        else:
            self.store.apply(grads)
        if reply:
            responder.reply()

    def _pull(self, msg, responder):
        keys = self.store.known(_meta_keys(msg.meta))
        round_ = _meta_int(msg.meta, "round", 0) if self.sync else 0
        if not self.sync or self.rounds.wait_pull(round_, (responder, keys)):
            self._answer_pull(responder, keys)

    def _pushpull(self, msg, responder):
        self._push(msg, responder, reply=False)
        self._pull(msg, responder)

    def _answer_pull(self, responder, keys):
        # The reply is sent without a copy and later rounds change the weights in place: send a snapshot,
        # in a buffer reused once its last reply went out (values the store never changes go as they are).
        values = self.store.gather(keys)
        if values.flags.writeable and keys:
            snapshot = self._buffers.take(values.size)
            snapshot[:] = values
            values = snapshot
        responder.reply(arrays=[values])

    def _apply_rounds(self, completed):
        for done in completed:
            self.store.apply(done.grads, scale=done.scale)
            for responder, keys in self.rounds.mark_applied(done.round):
                self._answer_pull(responder, keys)

    def _leave(self, msg, responder):
        if self.sync:
            self._apply_rounds(self.rounds.leave(msg.sender))
        responder.reply()

    # ---- optimizer and commands -------------------------------------------------------------------
    def _set_optimizer(self, msg, responder):
        self.store.set_optimizer(msg.meta.get("config"))
        responder.reply()

    def _command(self, msg, responder):
        name = msg.meta.get("name")
        if name not in self._commands:
            raise ConfigError("unknown server command %r (known: %s)" % (name, sorted(self._commands)))
        responder.reply(meta=self._commands[name](msg.meta) or {})

    def _set_lr(self, meta):
        lr = meta.get("lr")
        if isinstance(lr, bool) or not isinstance(lr, (int, float)):
            raise ConfigError("set_lr needs a number 'lr', got %r" % (lr,))
        self.store.set_learning_rate(lr)

    def _path(self, meta):
        path = meta.get("path")
        if not isinstance(path, str) or not path:
            raise ConfigError("save/load need a directory 'path', got %r" % (path,))
        return path

    def _save(self, meta):
        described = checkpoint.save_pieces(self._path(meta), self.store)
        config = self.store.optimizer.to_config() if self.store.optimizer is not None else None
        return {"pieces": described, "optimizer": config}

    def _load(self, meta):
        checkpoint.load_pieces(self._path(meta), self.store)

    def close(self, reason="the server stopped"):
        """Answer every parked pull with an ERROR (the server is going down)."""
        if self._rounds is not None:
            for responder, _ in self._rounds.parked():
                responder.error(reason)

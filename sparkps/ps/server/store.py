"""The weights one server holds and the optimizer it applies to them, per key piece; no I/O.

A server holds, for each key, one contiguous piece (an element range of the key's flattened value, see
:mod:`sparkps.ps.server.layout`). The pieces of one INIT message are views into one flat float32 buffer, so
pulling every parameter of a group answers with a single slice. The optimizer (built from its JSON config)
runs per piece with the key as MXNet's ``index``, so per-key state and update counts behave as in MXNet;
since every optimizer we ship is elementwise, running it on a piece equals running it on the whole key.

A gradient for every key of one group may come as one flat array under the id ``tuple(keys)`` (a *fused*
gradient, as a push of all parameters carries it). When the group's pieces are still adjacent and the
optimizer treats every key alike (same learning rate, weight decay and update count), it then runs once on
the whole flat buffer, with per-key states that are views of one flat state; otherwise the gradient is
split and applied key by key. Either way the result, the states and the update counts are the same.

>>> store = ServerStore()
>>> store.init([[0, 0, 3]], [[0, [3]]], np.zeros(3, np.float32))
>>> store.apply({0: np.ones(3, np.float32)})     # no optimizer: the value becomes the pushed sum
>>> store.gather([0]).tolist()
[1.0, 1.0, 1.0]
"""
from typing import NamedTuple

import numpy as np

from sparkps.errors import ConfigError, MalformedMessage

ELEMENTWISE = frozenset(("sgd", "nag", "adam", "adagrad", "rmsprop", "adadelta", "ftrl"))


class Slot(NamedTuple):
    """One key's piece on this server: elements ``[lo, hi)`` of a key of ``shape``, stored in ``weight``."""
    key: int
    lo: int
    hi: int
    shape: tuple
    weight: np.ndarray
    group: int
    offset: int


def optimizer_from_config(config):
    """Build an optimizer from its JSON config (imported lazily: the server needs it only on demand)."""
    from sparkps.train import optimizer
    if not isinstance(config, dict):
        raise ConfigError("optimizer config must be a dict, got %s" % type(config).__name__)
    return optimizer.from_config(config)


class ServerStore:
    """Key pieces, their weights and the optimizer state of one server.

    Not thread-safe: the server calls it from its receive thread only.
    """

    def __init__(self):
        self.slots = {}
        self.groups = []
        self.optimizer = None
        self.states = {}
        self._fused = {}  # tuple(keys) -> (flat state arrays, the per-key views handed to self.states)

    # ---- layout and weights -------------------------------------------------------------------------
    def init(self, pieces, shapes, values=None):
        """Add the pieces ``[[key, lo, hi], ...]`` of keys ``[[key, shape], ...]`` with initial ``values``.

        ``values`` is the flat concatenation of the pieces (zeros when None). Raises ConfigError when a key
        is already held or the sizes do not add up.
        """
        shapes = {int(k): tuple(int(d) for d in shape) for k, shape in shapes}
        total = sum(int(hi) - int(lo) for _, lo, hi in pieces)
        buffer = np.zeros(total, np.float32)
        if values is not None:
            values = np.asarray(values).reshape(-1)
            if values.size != total:
                raise ConfigError("INIT carries %d values for pieces of %d elements" % (values.size, total))
            buffer[:] = values
        group, offset, new = len(self.groups), 0, {}
        for key, lo, hi in pieces:
            key, lo, hi = int(key), int(lo), int(hi)
            if key in self.slots or key in new:
                raise ConfigError("kvstore key %d is already initialised on this server" % key)
            if key not in shapes or not 0 <= lo < hi <= int(np.prod(shapes[key], dtype=np.int64)):
                raise ConfigError("INIT piece [%d, %d) of key %d does not fit its shape %s"
                                  % (lo, hi, key, shapes.get(key)))
            new[key] = Slot(key, lo, hi, shapes[key], buffer[offset:offset + hi - lo], group, offset)
            offset += hi - lo
        self.groups.append(buffer)
        self.slots.update(new)

    def keys(self):
        """Sorted keys with a piece on this server."""
        return sorted(self.slots)

    def known(self, keys):
        """``keys`` (from a request) restricted to those held here, sorted; unknown keys are an error."""
        try:
            keys = sorted({int(k) for k in keys})
        except (TypeError, ValueError):
            raise MalformedMessage("request keys %r are not ints" % (keys,))
        return [k for k in keys if k in self.slots]

    def size_of(self, keys):
        """Number of elements a message for ``keys`` carries."""
        return sum(self.slots[k].hi - self.slots[k].lo for k in keys)

    def gather(self, keys):
        """The flat concatenation of the pieces of ``keys``; a view when they are adjacent in one buffer.

        A view of mutable weights is writeable: copy it before handing it to a zero-copy send. A read-only
        result is a value the store never changes (a received gradient kept as the weight, see ``apply``).
        """
        slots = [self.slots[k] for k in keys]
        if not slots:
            return np.zeros(0, np.float32)
        first, last = slots[0], slots[-1]
        if len(slots) == 1:
            return first.weight
        adjacent = all(a.group == b.group >= 0 and a.offset + a.hi - a.lo == b.offset
                       for a, b in zip(slots, slots[1:]))
        if adjacent:
            return self.groups[first.group][first.offset:last.offset + last.hi - last.lo]
        return np.concatenate([s.weight for s in slots])

    def snapshot(self, keys):
        """``gather(keys)`` as an array the store will not change later (copied only when needed)."""
        values = self.gather(keys)
        return np.array(values, copy=True) if values.flags.writeable and len(keys) > 0 else values

    def _writable(self, key):
        """The weight of ``key`` as a writeable array (a kept read-only gradient is copied first)."""
        slot = self.slots[key]
        if not slot.weight.flags.writeable:
            slot = self.slots[key] = slot._replace(weight=np.array(slot.weight, dtype=np.float32), group=-1)
        return slot.weight

    def fused(self, keys, flat):
        """``{tuple(keys): flat}`` when ``keys`` are every key held here (see ``apply``), else ``split``."""
        if len(keys) > 1 and keys == self.keys():
            flat = np.asarray(flat).reshape(-1)
            if flat.size != self.size_of(keys):
                raise MalformedMessage("message carries %d values but keys %s hold %d here"
                                       % (flat.size, keys, self.size_of(keys)))
            return {tuple(keys): flat}
        return self.split(keys, flat)

    def split(self, keys, flat):
        """Cut a received flat array into ``{key: piece}`` for ``keys``; raises MalformedMessage on a bad size."""
        flat = np.asarray(flat).reshape(-1)
        if flat.size != self.size_of(keys):
            raise MalformedMessage("message carries %d values but keys %s hold %d here"
                                   % (flat.size, keys, self.size_of(keys)))
        parts, offset = {}, 0
        for k in keys:
            n = self.slots[k].hi - self.slots[k].lo
            parts[k] = flat[offset:offset + n]
            offset += n
        return parts

    def assign(self, parts):
        """Overwrite the pieces ``{key: flat values}`` (INIT of existing keys, or loads)."""
        for k, values in parts.items():
            self._writable(k)[:] = values

    # ---- optimizer ----------------------------------------------------------------------------------
    def set_optimizer(self, config):
        """Use the optimizer described by ``config`` from now on; states restart from scratch."""
        self.optimizer = optimizer_from_config(config)
        self.states = {}
        self._fused = {}

    def set_learning_rate(self, lr):
        """Change the optimizer's learning rate; raises ConfigError when there is no optimizer."""
        if self.optimizer is None:
            raise ConfigError("set_lr: no optimizer was set on this server (call set_optimizer first)")
        self.optimizer.set_learning_rate(float(lr))

    def apply(self, grads, scale=1.0):
        """Apply gradients ``{key: flat float array}`` once, each multiplied by ``scale`` (takes ownership).

        A fused gradient ``{tuple(keys): flat}`` (see the module docstring) may stand for its keys. With an
        optimizer, runs ``optimizer.update(key, piece, grad, state)``; without one, the piece becomes the
        (scaled) gradient sum, as MXNet's server does without an updater.
        """
        grads = self._unfused(grads)
        for key in sorted(grads, key=lambda k: k if isinstance(k, int) else k[0]):
            grad = np.asarray(grads[key], dtype=np.float32)
            if scale != 1.0:
                grad = grad * np.float32(scale)
            if isinstance(key, tuple):
                self._apply_fused(key, grad)
            elif self.optimizer is None:
                # Keep the received (read-only) array as the new value: no copy, and a pull may send it
                # without one since nothing ever writes into it.
                self.slots[key] = self.slots[key]._replace(weight=grad.reshape(-1), group=-1)
            else:
                self._apply_key(key, grad)

    def _apply_key(self, key, grad):
        weight = self._writable(key)
        if key not in self.states:
            self.states[key] = self.optimizer.create_state(key, weight)
        self.optimizer.update(key, weight, grad, self.states[key])

    def _unfused(self, grads):
        """``grads`` with fused entries split into keys where they could overlap other entries."""
        if len(grads) == 1:
            return grads
        plain = {}
        for pid, grad in grads.items():
            parts = self.split(list(pid), grad) if isinstance(pid, tuple) else {pid: grad}
            for key, part in parts.items():
                plain[key] = part if key not in plain else np.add(plain[key], part, dtype=np.float32)
        return plain

    def _apply_fused(self, keys, grad):
        """Run the optimizer once on the flat weights of ``keys`` if it may; else key by key."""
        opt = self.optimizer
        weight = self.gather(list(keys)) if opt is not None else None
        if (opt is None or opt.name not in ELEMENTWISE or not weight.flags.writeable
                or weight.base is None or len({(opt.lr_mult.get(k, 1.0), opt.wd_mult.get(k, 1.0),
                                               opt.index_update_count.get(k)) for k in keys}) != 1):
            for key, part in self.split(list(keys), grad).items():
                self.apply({key: part})
            return
        state = self._fused_state(keys, weight)
        opt.update(keys[0], weight, grad, state)
        for key in keys[1:]:  # the counts every per-key update would have left
            opt.index_update_count[key] = opt.index_update_count[keys[0]]

    def _fused_state(self, keys, weight):
        """The flat optimizer state of ``keys``, whose per-key views are ``self.states[key]``."""
        fused = self._fused.get(keys)
        if fused is not None and all(self.states.get(k) is view for k, view in zip(keys, fused[1])):
            return fused[0]
        per_key = [self.state_of(k) for k in keys]
        if per_key[0] is None:
            flat = None
        else:
            flat = tuple(np.concatenate([s[i].reshape(-1) for s in per_key]) for i in range(len(per_key[0])))
        views, offset = [], 0
        for key in keys:
            n = self.slots[key].hi - self.slots[key].lo
            views.append(None if flat is None else tuple(a[offset:offset + n] for a in flat))
            offset += n
        if flat is not None:
            self.states.update(zip(keys, views))
        self._fused[keys] = (flat, views)
        return flat

    def state_of(self, key):
        """The optimizer state of ``key``'s piece, created on first use (None without an optimizer)."""
        if self.optimizer is None:
            return None
        if key not in self.states:
            self.states[key] = self.optimizer.create_state(key, self._writable(key))
        return self.states[key]

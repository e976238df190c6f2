"""The dense table: the pieces of dense parameters one server holds, their optimizer state and the fused update.

A server holds, for each key, one contiguous piece (an element range of the key's flattened value, see
:mod:`sparkps.comm.layout`). The pieces of one INIT request form a *group*: views into one flat float32 buffer, so
pulling every parameter of a group answers with a single slice. The optimizer (built from its JSON config)
runs per piece with the key as MXNet's ``index``, so per-key state and update counts behave as in MXNet; running it
on a piece equals running it on the whole key for an optimizer whose class says ``elementwise`` (every one but LAMB,
whose step scales by the norms of the whole weight).

A push arrives as a :class:`DenseGradient`: the flat gradient of some keys, in sorted key order. When those
keys lie end to end in one group, the optimizer is capable of ``'fused'`` (:mod:`sparkps.optimizer.abilities`) and
it treats every key alike (same learning rate, weight decay and update count), the update runs once on the flat
slice of the group, with per-key states that are views of one flat state; otherwise it runs key by key. Either
way the weights, states and update counts are the same.
Without an optimizer, the pushed (summed) gradient becomes the value, as MXNet's server without an updater.

No I/O except ``save``/``load`` (checkpoint files, :mod:`sparkps.server.tables.dense_pieces`). Not
thread-safe: the server calls it from its handler thread only.

>>> from sparkps.comm.protocol import Pull, Push
>>> table = DenseTable()
>>> table.add_group([[0, 0, 3]], [[0, [3]]], np.zeros(3, np.float32))
>>> table.apply(table.gradient(Push(keys=[0], values=np.ones(3, np.float32))))
>>> table.read(Pull(keys=[0])).tolist()
[1.0, 1.0, 1.0]
"""
from typing import NamedTuple

import numpy as np

from sparkps.errors import ConfigError, DataError, MalformedMessage
from sparkps.optimizer.abilities import FUSED
from sparkps.optimizer.finite import NonFinite, check_dense, first_nonfinite
from sparkps.server.tables import dense_pieces


class Slot(NamedTuple):
    """One key's piece on this server: elements ``[lo, hi)`` of a key of ``shape``, at ``offset`` of ``group``."""
    key: int
    lo: int
    hi: int
    shape: tuple
    group: int
    offset: int

    @property
    def size(self):
        return self.hi - self.lo


class DenseGradient:
    """A gradient of some keys of a dense table: their pieces' values, flat, in sorted key order.

    ``add`` sums two gradients (a sync round summing the workers' pushes): the first array is kept as received
    and copied only when a second one arrives.
    """
    __slots__ = ("keys", "sizes", "flat", "owned")

    def __init__(self, keys, sizes, flat, owned=False):
        self.keys, self.sizes, self.flat, self.owned = tuple(keys), tuple(sizes), flat, owned

    def parts(self):
        """``{key: flat piece}`` views of the gradient."""
        parts, offset = {}, 0
        for key, size in zip(self.keys, self.sizes):
            parts[key] = self.flat[offset:offset + size]
            offset += size
        return parts

    def add(self, other):
        """The sum of this gradient and ``other`` (may reuse this one's array once it owns it)."""
        if other.keys == self.keys:
            if self.owned:
                self.flat += other.flat
                return self
            return DenseGradient(self.keys, self.sizes, np.add(self.flat, other.flat, dtype=np.float32), True)
        sizes = dict(zip(self.keys, self.sizes))
        sizes.update(zip(other.keys, other.sizes))
        keys = sorted(sizes)
        summed = DenseGradient(keys, [sizes[k] for k in keys], np.zeros(sum(sizes.values()), np.float32), True)
        target = summed.parts()
        for grad in (self, other):
            for key, part in grad.parts().items():
                target[key] += part
        return summed


class DenseTable:
    """Key pieces, their weights and the optimizer state of one server (table kind ``'dense'``)."""
    kind = "dense"

    def __init__(self):
        self.slots = {}
        self.groups = []       # one flat float32 buffer per INIT
        self.group_keys = []   # the keys of each group, in buffer order
        self.optimizer = None
        self.states = {}
        self._fused = {}  # (group, start, stop) -> (flat state arrays, the per-key views handed to self.states)

    # ---- requests -----------------------------------------------------------------------------------
    def init(self, request):
        """INIT: add the request's pieces as a new group, or overwrite them when every one is held already. A
        ``relay`` INIT first drops the pieces held of the keys it names (they are laid out anew)."""
        if request.values is not None:
            self._refuse_nonfinite([p[0] for p in request.pieces], [p[2] - p[1] for p in request.pieces],
                                   request.values, "INIT: a non-finite initial value")
        if request.relay:
            self.drop([key for key, _ in request.shapes])
            if not request.pieces:
                return
        held = [p for p in request.pieces if p[0] in self.slots]
        if held and len(held) == len(request.pieces):
            if request.values is not None:
                self.assign(self.split([p[0] for p in request.pieces], request.values))
            return
        self.add_group(request.pieces, request.shapes, request.values)

    def gradient(self, request):
        """The DenseGradient a PUSH carries for the keys held here; raises MalformedMessage on a bad size and
        NonFinite (:mod:`sparkps.optimizer.finite`) naming the key on a NaN or infinity."""
        keys = self.known(request.keys)
        sizes = [self.slots[k].size for k in keys]
        flat = request.values.reshape(-1)
        if flat.size != sum(sizes):
            raise MalformedMessage("message carries %d values but keys %s hold %d here" % (flat.size, keys, sum(sizes)))
        check_dense(keys, sizes, flat)
        return DenseGradient(keys, sizes, flat)

    def read(self, request):
        """The weights a PULL asks for (a view the table may change later: copy it before a zero-copy send)."""
        return self.gather(self.known(request.keys))

    def save(self, directory):
        """Write the pieces into ``directory``; returns the reply fields ``pieces`` and ``optimizer``."""
        described = dense_pieces.save_pieces(directory, self)
        return {"pieces": described, "optimizer": self.optimizer.to_config() if self.optimizer else None}

    def load(self, directory, manifest=None):
        """Replace weights, optimizer and state with the checkpoint in ``directory``."""
        dense_pieces.load_pieces(directory, self, manifest)

    def compact(self, directory, manifest):
        """COMMAND compact: nothing to merge (every save writes whole pieces)."""
        return {}

    # ---- layout and weights -------------------------------------------------------------------------
    def add_group(self, pieces, shapes, values=None):
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
            new[key] = Slot(key, lo, hi, shapes[key], group, offset)
            offset += hi - lo
        self.groups.append(buffer)
        self.group_keys.append(tuple(new))
        self.slots.update(new)

    def drop(self, keys):
        """Forget the pieces of ``keys`` held here, with their state (a relay INIT lays them out anew; their
        group's buffer keeps the elements, unused)."""
        gone = {int(k) for k in keys} & set(self.slots)
        if not gone:
            return
        for key in gone:
            del self.slots[key]
            self.states.pop(key, None)
        self.group_keys = [tuple(k for k in keys_ if k not in gone) for keys_ in self.group_keys]
        self._fused = {}

    def keys(self):
        """Sorted keys with a piece on this server."""
        return sorted(self.slots)

    def known(self, keys):
        """``keys`` (from a request) restricted to those held here, sorted. A request naming keys of which this
        server holds none (a worker sends a request only to the servers holding a piece of its keys) is a DataError
        naming them: never an empty answer."""
        held = sorted({k for k in keys if k in self.slots})
        if keys and not held:
            shown = sorted(set(keys))
            raise DataError("this server holds no piece of key%s %s (it holds %s); INIT the key first"
                            % ("s" if len(shown) > 1 else "", _listed(shown), _listed(sorted(self.slots)) or "none"))
        return held

    def size_of(self, keys):
        """Number of elements a message for ``keys`` carries."""
        return sum(self.slots[k].size for k in keys)

    def weight(self, key):
        """The weights of ``key``'s piece: a flat view into its group's buffer."""
        slot = self.slots[key]
        return self.groups[slot.group][slot.offset:slot.offset + slot.size]

    def _run(self, keys):
        """``(group, start, stop)`` when the pieces of ``keys`` lie end to end, in order, in one group."""
        slots = [self.slots[k] for k in keys]
        if not slots or any(a.group != b.group or a.offset + a.size != b.offset for a, b in zip(slots, slots[1:])):
            return None
        return slots[0].group, slots[0].offset, slots[-1].offset + slots[-1].size

    def gather(self, keys):
        """The flat concatenation of the pieces of ``keys``; a view when they lie end to end in one group.

        A view of mutable weights is writeable: copy it before handing it to a zero-copy send. A read-only
        result is a value the table never changes (a received gradient kept as the weights, see ``apply``).
        """
        if not keys:
            return np.zeros(0, np.float32)
        run = self._run(keys)
        if run is not None:
            group, start, stop = run
            return self.groups[group][start:stop]
        return np.concatenate([self.weight(k) for k in keys])

    def split(self, keys, flat):
        """Cut a received flat array into ``{key: piece}`` for ``keys``; raises MalformedMessage on a bad size."""
        flat = np.asarray(flat).reshape(-1)
        if flat.size != self.size_of(keys):
            raise MalformedMessage("message carries %d values but keys %s hold %d here"
                                   % (flat.size, keys, self.size_of(keys)))
        return DenseGradient(keys, [self.slots[k].size for k in keys], flat).parts()

    def _writable(self, group):
        """The buffer of ``group``, copied first when it is a kept read-only gradient."""
        if not self.groups[group].flags.writeable:
            self.groups[group] = np.array(self.groups[group], dtype=np.float32)
        return self.groups[group]

    def assign(self, parts):
        """Overwrite the pieces ``{key: flat values}`` (INIT of existing keys, or loads)."""
        for key, values in parts.items():
            slot = self.slots[key]
            self._writable(slot.group)[slot.offset:slot.offset + slot.size] = values

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

    def apply(self, grad, scale=1.0):
        """Apply the DenseGradient ``grad`` once, multiplied by ``scale`` (takes ownership of its array).

        With an optimizer, runs ``optimizer.update(key, piece, grad, state)`` (once on a flat run when it
        may); without one, the pieces become the (scaled) gradient.
        """
        flat = np.asarray(grad.flat, dtype=np.float32).reshape(-1)
        if scale != 1.0:
            flat = flat * np.float32(scale)
        grad = DenseGradient(grad.keys, grad.sizes, flat)
        if self.optimizer is None:
            self._keep(grad)
        else:
            run = self._run(grad.keys)
            if run is not None and len(grad.keys) > 1 and self._fusable(grad.keys):
                self._apply_fused(run, grad.keys, flat)
            else:
                for key, part in grad.parts().items():
                    self._apply_key(key, part)
        self._refuse_nonfinite(grad.keys, grad.sizes, self.gather(grad.keys),
                               "the update made a weight non-finite")

    @staticmethod
    def _refuse_nonfinite(keys, sizes, flat, what):
        """NonFinite ``what (value) for key k (element i of its piece)`` at the first NaN or infinity of ``flat``
        (the values of ``keys``' pieces of ``sizes`` elements, in order)."""
        at = first_nonfinite(np.asarray(flat).reshape(-1))
        if at is None:
            return
        offset = 0
        for key, size in zip(keys, sizes):
            if at < offset + size:
                raise NonFinite("%s (%s) for key %s (element %d of its piece)"
                                % (what, np.asarray(flat).reshape(-1)[at], key, at - offset))
            offset += size

    def _keep(self, grad):
        """Without an optimizer the gradient is the new value; a whole group's keeps the received array
        (no copy, and a pull may send it without one since nothing ever writes into it)."""
        group = self.slots[grad.keys[0]].group if grad.keys else -1
        if grad.keys and grad.keys == self.group_keys[group] and self._run(grad.keys) is not None:
            self.groups[group] = grad.flat
            return
        self.assign(grad.parts())

    def _apply_key(self, key, grad):
        self.optimizer.update(key, self._writable_weight(key), grad, self.state_of(key))

    def _writable_weight(self, key):
        slot = self.slots[key]
        return self._writable(slot.group)[slot.offset:slot.offset + slot.size]

    def _fusable(self, keys):
        opt = self.optimizer
        return opt.is_capable(FUSED) and len({(opt.lr_mult.get(k, 1.0), opt.wd_mult.get(k, 1.0),
                                                 opt.index_update_count.get(k)) for k in keys}) == 1

    def _apply_fused(self, run, keys, grad):
        """Run the optimizer once on the flat weights of ``keys`` (a run of one group)."""
        group, start, stop = run
        weight = self._writable(group)[start:stop]
        state = self._fused_state(run, keys, weight)
        self.optimizer.update(keys[0], weight, grad, state)
        for key in keys[1:]:  # the counts every per-key update would have left
            self.optimizer.index_update_count[key] = self.optimizer.index_update_count[keys[0]]

    def _fused_state(self, run, keys, weight):
        """The flat optimizer state of the run ``keys``, whose per-key views are ``self.states[key]``."""
        fused = self._fused.get(run)
        if fused is not None and all(self.states.get(k) is view for k, view in zip(keys, fused[1])):
            return fused[0]
        per_key = [self.state_of(k) for k in keys]
        if per_key[0] is None:
            flat = None
        else:
            flat = tuple(np.concatenate([s[i].reshape(-1) for s in per_key]) for i in range(len(per_key[0])))
        views, offset = [], 0
        for key in keys:
            n = self.slots[key].size
            views.append(None if flat is None else tuple(a[offset:offset + n] for a in flat))
            offset += n
        if flat is not None:
            self.states.update(zip(keys, views))
        self._fused[run] = (flat, views)
        return flat

    def state_of(self, key):
        """The optimizer state of ``key``'s piece, created on first use (None without an optimizer)."""
        if self.optimizer is None:
            return None
        if key not in self.states:
            self.states[key] = self.optimizer.create_state(key, self._writable_weight(key))
        return self.states[key]


def optimizer_from_config(config):
    """Build an optimizer from its JSON config (imported lazily: the server needs it only on demand)."""
    from sparkps import optimizer
    if not isinstance(config, dict):
        raise ConfigError("optimizer config must be a dict, got %s" % type(config).__name__)
    return optimizer.from_config(config)


def _listed(keys, most=8):
    """``keys`` for a message: the first ``most`` and how many more."""
    shown = ", ".join(str(k) for k in keys[:most])
    return shown + (" and %d more" % (len(keys) - most) if len(keys) > most else "")

"""The one sparse embedding table: rows keyed by 64-bit ids, created on first pull, lazily updated.

A server holds its shard of a table as one (:mod:`sparkps.server.tables.sparse_served` adds the shard checks,
requests and checkpoint files); the local kvstore holds a whole table as one (``sparkps.kvstore.local_rows.RowTable``
is a thin adapter over it), and prediction reads one frozen (``frozen``: an unseen id reads the row it would be
created with, and is neither stored nor counted). The socket-free core of sparse training::

    table = SparseTable(TableConfig('user', dim=16, optimizer={'name': 'adagrad', 'params': {'learning_rate': 0.1}}))
    table = SparseTable('user', dim=16, optimizer=...)     # the same: TableConfig's fields given directly
    rows = table.pull(ids)              # (len(ids), 16): new ids get their (table, id)-seeded first value
    table.push(ids, grads)              # grads (len(ids), 16) summed per id, applied to those rows only
    table.tick()                        # one step later: expiry by ttl / decay runs every sweep_every
    table.stats()                       # {'rows', 'bytes', 'admitted', 'evicted', ...}

Its configuration is a :class:`~sparkps.rows.config.TableConfig`: ``input_dim`` bounds the ids
(``Embedding(input_dim=...)``); ``min_count`` admits an id as a row only once it was named that often (until then
it reads as zeros, is not stored and its gradients are dropped); ``ttl`` evicts rows unseen for more than that many
steps; ``decay`` + ``min_decayed`` evict rows whose decayed occurrence count fell under the threshold (both checked
every ``sweep_every`` steps, by default ttl/8, so a row goes at most ttl/8 steps late); ``capacity`` bounds the rows
this server holds and ``on_full`` says what happens at the bound: ``'evict'`` the least recently seen rows, or
``'fail'`` with an error. An occurrence is one naming of the id by a pull, or ``counts[i]`` of them: a training
pull says how often its batch used each id, so a table's counts are the ids' occurrences in the training data
(summed over the epochs); reads that are not training (validation rows, prediction) ``peek``. New rows take
their value from the one row initializer (:mod:`sparkps.rows.init`).

``pull`` and ``push`` check their ids (DataError naming the table and the field); the server's handlers, which
checked a request's ids already (:mod:`sparkps.server.tables.sparse_served`), call ``pull_checked`` and
``push_checked``. The occurrence counts (``store.seen``, decayed to ``store.last_seen``) are the table's own and
the one count of how often a pull named an id (:meth:`SparseTable.occurrences`). Not thread-safe: one thread.
"""
import numpy as np

from sparkps.errors import ConfigError, DataError
from sparkps.optimizer.rowwise import RowOptimizer
from sparkps.rows import admission
from sparkps.rows.config import TableConfig
from sparkps.rows.ids import row_ids, table_seed
from sparkps.rows.index import GrowingRowIndex
from sparkps.rows.init import RowInitializer
from sparkps.rows.store import RowStore, gather_rows, scatter_rows
from sparkps.rows.values import RowSparse, sum_rows

_DEFAULT_OPTIMIZER = {'name': 'sgd', 'params': {'learning_rate': 0.01}}


class SparseTable:
    """One table's rows in one process (a server's shard, or the local kvstore's whole table): the rows, their
    optimizer state and counters, the id index and admission; see the module docstring. ``kind`` is ``'sparse'``.

    ``own_optimizer``: the table keeps the optimizer its config names when the job's SET_OPTIMIZER arrives (a table
    may use a different optimizer from the dense parameters); without one it follows the job's. ``dtype``: of the
    rows and states (float32 unless given). ``frozen``: reads only (see the module docstring); a push is refused.
    """
    kind = 'sparse'

    def __init__(self, config, dim=None, *, dtype=np.float32, **fields):
        if not isinstance(config, TableConfig):
            config = TableConfig(config, dim=dim, **fields)
        if config.dim is None:
            raise ConfigError(f"table {config.name!r}: option 'dim' must be a positive integer, got None")
        self.config = config
        self.name, self.dim, self.input_dim = config.name, config.dim, config.input_dim
        self.seed = table_seed(self.name)
        self.init = RowInitializer.from_config(config.init)
        self.optimizer = RowOptimizer(config.optimizer or _DEFAULT_OPTIMIZER, table=self.name)
        self.min_count, self.ttl, self.capacity = config.min_count, config.ttl, config.capacity
        self.max_new_ids = config.max_new_ids
        self.sweep_every = config.sweep_every or max(1, (self.ttl or 1) // 8)
        self.decay, self.min_decayed, self.on_full = config.decay, config.min_decayed, config.on_full
        self.store = RowStore(self.dim, self.optimizer.num_states, dtype=dtype)
        self.index = GrowingRowIndex()
        self.sketch = admission.OccurrenceSketch() if self.min_count > 1 else None
        self.step = 0
        self.counters = {'admitted': 0, 'evicted_ttl': 0, 'evicted_decay': 0, 'evicted_lru': 0}
        self.removed = []          # ids evicted since the last save (for incremental checkpoints)
        self.own_optimizer = config.optimizer is not None
        self.frozen = False
        self._pulled = None        # (ids, slots) of the last pull that found or made every row: a step's push

    # ---- description --------------------------------------------------------------------------------
    def options(self):
        """The table's TableConfig as plain JSON, with the initializer, optimizer and sweep period it runs (what
        the manifest records and ``from_options`` takes)."""
        return self.config.replace(init=self.init.config(), optimizer=self.optimizer.config(),
                                   sweep_every=self.sweep_every).to_dict()

    @classmethod
    def from_options(cls, options):
        """Build an empty table from ``options()`` output (``TableConfig.to_dict``; unknown keys -> ConfigError
        naming them)."""
        return cls(TableConfig.from_dict(dict(options)))

    def stats(self):
        """``{'rows', 'bytes', 'admitted', 'evicted', 'evicted_ttl', 'evicted_decay', 'evicted_lru', 'step',
        'capacity'}`` for status reports (bytes: rows, state, counters, index and sketch)."""
        evicted = self.counters['evicted_ttl'] + self.counters['evicted_decay'] + self.counters['evicted_lru']
        size = self.store.nbytes + self.index.nbytes + (self.sketch.nbytes if self.sketch is not None else 0)
        return {'rows': self.store.rows, 'bytes': int(size), 'evicted': evicted, 'step': self.step,
                'capacity': self.capacity, **self.counters}

    # ---- pull -----------------------------------------------------------------------------------------
    def ids(self, ids):
        """``ids`` checked and taken as uint64 (DataError naming this table and 'ids')."""
        return row_ids(ids, self.name, self.input_dim)

    def pull(self, ids, counts=None):
        """Rows of ``ids`` (float32, (len(ids), dim)); creates admitted rows the first time they are named.

        Counts one occurrence per naming (or ``counts[i]``) and marks the rows seen at the current step.
        Raises DataError for bad ids and, with ``on_full='fail'``, when new rows do not fit the capacity.
        """
        return self.pull_checked(self.ids(ids), counts)

    def pull_checked(self, ids, counts=None, out=None):
        """``pull`` of ids already checked by :meth:`ids` (uint64); a ``frozen`` table reads them with :meth:`peek`.
        ``out``: a C-contiguous (len(ids), dim) array of the rows' dtype to read them into (returned)."""
        if self.frozen:
            return self._read_into(self.peek(ids), out)
        counts = None if counts is None else self._counts(counts, ids.size)
        if self.decay not in (None, 1.0):
            return self._read_into(self._pull_decayed(ids, _each(counts, ids.size)), out)
        store = self.store       # counts that do not decay add up in place: no unique over the whole batch
        slots = self.index.lookup(ids)
        held = slots >= 0
        if held.all():
            np.add.at(store.seen, slots, np.float32(1) if counts is None else counts.astype(np.float32))
            store.last_seen[slots] = self.step
            store.changed[slots] = True
            self._pulled = (ids.copy(), slots)
            return gather_rows(store.values, slots, out)
        counts = _each(counts, ids.size)
        new = ~held
        uniq, inverse = np.unique(ids[new], return_inverse=True)
        self._check_new(uniq.size)
        known = slots[held]
        np.add.at(store.seen, known, counts[held].astype(np.float32))
        store.last_seen[known] = self.step
        store.changed[known] = True
        occurrences = np.bincount(inverse.reshape(-1), weights=counts[new], minlength=uniq.size)
        slots[new] = self._admit(uniq, occurrences)[inverse.reshape(-1)]
        if self.sketch is None and self.capacity is None:      # every id now held, none evicted meanwhile
            self._pulled = (ids.copy(), slots)
        return self._rows_at(slots, out)

    def _check_new(self, count):
        """DataError naming the table and its cap when one pull names more than ``max_new_ids`` ids the table does
        not hold (checked before any row is made or counted)."""
        if count > self.max_new_ids:
            raise DataError(f"table {self.name!r}: one pull names {count} ids the table does not hold, above its cap "
                            f"of {self.max_new_ids} new ids per request (table option 'max_new_ids'); pull a "
                            f"batch's ids, or raise the option")

    @staticmethod
    def _read_into(rows, out):
        if out is None:
            return rows
        out[...] = rows
        return out

    def _slots(self, ids):
        """The slots of checked ``ids`` (-1: not held): those of the last pull when it named the same ids (the push
        of a step follows the pull of its rows), else an index lookup."""
        pulled = self._pulled
        if pulled is not None and pulled[0].size == ids.size and np.array_equal(pulled[0], ids):
            return pulled[1].copy()
        return self.index.lookup(ids)

    def _pull_decayed(self, ids, counts):
        uniq, inverse = np.unique(ids, return_inverse=True)
        occurrences = np.bincount(inverse.reshape(-1), weights=counts, minlength=uniq.size)
        slots = self.index.lookup(uniq)
        held = slots >= 0
        self._check_new(int((~held).sum()))
        self._see(slots[held], occurrences[held])
        new = ~held
        if new.any():
            slots[new] = self._admit(uniq[new], occurrences[new])
        return self._rows_at(slots)[inverse.reshape(-1)]

    def _rows_at(self, slots, out=None):
        """The rows at ``slots``, zeros where a slot is -1 (an id not admitted), into ``out`` when given."""
        present = slots >= 0
        if present.all():
            return gather_rows(self.store.values, slots, out)
        rows = np.zeros((slots.size, self.dim), self.store.values.dtype)
        rows[present] = self.store.values[slots[present]]
        return self._read_into(rows, out)

    def peek(self, ids, out=None):
        """The rows of checked ``ids`` (uint64) as they read now, changing nothing: a held row, else the row the id
        would be created with (its initializer's; never stored, never counted). Into ``out`` when given."""
        slots = self.index.lookup(ids)
        held = slots >= 0
        rows = np.empty((ids.size, self.dim), self.store.values.dtype)
        rows[held] = self.store.values[slots[held]]
        if not held.all():
            rows[~held] = self.init(self.seed, ids[~held], self.dim, rows.dtype)
        return self._read_into(rows, out)

    def hold(self, ids):
        """Slots of checked ``ids`` (uint64, may repeat; int32), creating the rows not held from the initializer
        without admission or counting (the local kvstore's rows, which a push or a read of a whole bounded table
        may name first)."""
        slots = self._slots(ids)
        new = slots < 0
        if new.any():
            uniq, inverse = np.unique(ids[new], return_inverse=True)
            slots[new] = self._create(uniq, np.zeros(uniq.size))[inverse.reshape(-1)]
        return slots

    def put_rows(self, ids, values):
        """Set the rows of distinct checked ``ids`` (uint64) to ``values`` ((n, dim)), creating those not held
        (state and counters zero); the rows of a local table's initial value, or a push without an optimizer."""
        scatter_rows(self.store.values, self.hold(ids), values)

    def occurrences(self):
        """``(ids uint64, counts float32)`` of every row held, ids ascending: how often pulls named each id (decayed
        to the row's last pull when the table decays counts). The one occurrence count of a table."""
        slots = self.store.live_slots()
        ids = self.store.ids[slots]
        order = np.argsort(ids)
        return ids[order], self.store.seen[slots][order]

    def _counts(self, counts, n):
        counts = np.asarray(counts)
        if counts.shape != (n,) or counts.dtype.kind not in 'iu' or (counts < 0).any():
            raise DataError(f"table {self.name!r}: field 'counts' must be {n} non-negative integers, got "
                            f"{counts.dtype} of shape {counts.shape}")
        return counts.astype(np.float64)

    def _see(self, slots, occurrences):
        store = self.store
        seen = admission.decayed(store.seen[slots], store.last_seen[slots], self.step, self.decay)
        store.seen[slots] = seen + occurrences
        store.last_seen[slots] = self.step
        store.changed[slots] = True        # its counters changed: an incremental save keeps them exact

    def _admit(self, ids, occurrences):
        """Create the rows of new ``ids`` that pass admission; returns their slots (-1: not admitted)."""
        slots = np.full(ids.size, -1, np.int32)
        admit = np.ones(ids.size, bool)
        if self.sketch is not None:
            self.sketch.add(ids, occurrences)
            seen = self.sketch.estimate(ids)
            admit = seen >= self.min_count
            occurrences = np.where(admit, seen, occurrences)
        if admit.any():
            slots[admit] = self._create(ids[admit], occurrences[admit])
        return slots

    def _create(self, ids, occurrences):
        """Rows for new distinct ``ids``, seen ``occurrences`` times, from the initializer; returns their slots."""
        count = ids.size
        self._make_room(count)
        made = self.store.allocate(count)
        store = self.store
        store.ids[made] = ids
        store.values[made] = self.init(self.seed, ids, self.dim, store.values.dtype)
        store.seen[made] = occurrences
        store.last_seen[made] = self.step
        store.changed[made] = True
        self.index.insert(ids, made)
        self.counters['admitted'] += count
        return made

    def _make_room(self, count):
        if self.capacity is None or self.store.rows + count <= self.capacity:
            return
        over = self.store.rows + count - self.capacity
        if self.on_full == 'fail':
            raise DataError(f"table {self.name!r}: field 'capacity' ({self.capacity} rows on this server) is "
                            f"full: {self.store.rows} rows held, {count} new ids named "
                            f"(on_full='fail'; raise capacity or choose on_full='evict')")
        live = self.store.live_slots()
        batch = max(over, self.capacity // 16)           # evict in batches: the scan runs rarely
        victims = live[admission.least_recent(self.store.last_seen[live], batch, self.step)]
        if victims.size < over:
            raise DataError(f"table {self.name!r}: field 'capacity' ({self.capacity} rows on this server) "
                            f"is smaller than the {count + self.store.rows - victims.size} rows in use at "
                            f"step {self.step}")
        self._evict(victims, 'evicted_lru')

    def _evict(self, slots, reason):
        self._pulled = None
        ids = self.store.ids[slots].copy()
        self.index.remove(ids)
        self.store.release(slots)
        self.removed.append(ids)
        self.counters[reason] += int(slots.size)

    # ---- push -----------------------------------------------------------------------------------------
    def push(self, ids, grads):
        """Apply ``grads`` ((len(ids), dim) float) to the rows of ``ids`` at once: summed per id, then one
        optimizer update per row. Rows not held (not admitted yet, or evicted) ignore their gradient."""
        self.push_checked(*self.checked_grads(self.ids(ids), grads))

    def push_checked(self, ids, grads, create=False):
        """``push`` of a gradient already checked by :meth:`checked_grads` (uint64 ids, float32 grads); with
        ``create``, rows not held are first made as :meth:`hold` makes them (the local kvstore's push) instead of
        ignoring their gradient. ConfigError for a ``frozen`` table."""
        if self.frozen:
            raise ConfigError(f"table {self.name!r} is read-only (a prediction's table); it takes no pushes")
        ids, grads = sum_rows(ids, grads)
        slots = self.hold(ids) if create else self._slots(ids)
        held = slots >= 0
        if not held.all():
            slots, grads = slots[held], grads[held]
        if not slots.size:
            return
        store = self.store
        weights = gather_rows(store.values, slots)
        states = [gather_rows(s, slots) for s in store.states]
        updates = store.updates[slots].astype(np.int64)
        self.optimizer.update(weights, grads, states, updates)
        scatter_rows(store.values, slots, weights)
        for target, state in zip(store.states, states):
            scatter_rows(target, slots, state)
        store.updates[slots] = updates
        store.changed[slots] = True

    def checked_grads(self, ids, grads):
        """``(ids, float32 grads)``: checked ``ids`` (uint64, from :meth:`ids`) and ``grads`` checked against them
        and ``dim``."""
        grads = np.asarray(grads)
        if grads.dtype.kind != 'f':
            raise DataError(f"table {self.name!r}: field 'grads' must be floats, got {grads.dtype}")
        if grads.ndim != 2 or grads.shape[1] != self.dim:
            raise DataError(f"table {self.name!r}: field 'grads' has shape {grads.shape}, rows of width "
                            f"dim={self.dim} expected")
        if grads.shape[0] != ids.size:
            raise DataError(f"table {self.name!r}: field 'grads' has {grads.shape[0]} rows for {ids.size} ids")
        return ids, grads.astype(np.float32, copy=False)

    def set_learning_rate(self, lr):
        """Set the table optimizer's base learning rate."""
        self.optimizer.set_learning_rate(lr)

    # ---- the server's table interface (sparkps.server.tables) ------------------------------------------
    @classmethod
    def from_init(cls, name, options):
        """Build the table an INIT describes (``options``: ``TableConfig.to_dict`` form; the name is INIT's
        ``table`` field). Unknown options -> ConfigError naming them."""
        if not isinstance(options, dict):
            raise DataError(f"table {name!r}: field 'options' of INIT must be a map, got {options!r}")
        return cls.from_options({**options, 'name': name})

    def read_rows(self, ids):
        """PULL: the rows of ``ids`` (float32, (n, dim)), created on first pull."""
        return self.pull(ids)

    def gradient_rows(self, ids, grads):
        """PUSH: check ``ids`` and ``grads`` (a flat array is taken as (n, dim)) into a RowSparse gradient."""
        return self.row_gradient(self.ids(ids), grads)

    def row_gradient(self, ids, grads):
        """:meth:`gradient_rows` of ids already checked by :meth:`ids`."""
        grads = np.asarray(grads)
        if grads.ndim == 1 and ids.size and grads.size == ids.size * self.dim:
            grads = grads.reshape(ids.size, self.dim)
        elif grads.ndim == 1 and grads.size == 0 and ids.size == 0:
            grads = grads.reshape(0, self.dim)
        ids, grads = self.checked_grads(ids, grads)
        return RowSparse(ids, grads, (self.input_dim, self.dim))

    def apply(self, update, scale=1.0):
        """Apply a (summed) RowSparse gradient once, times ``scale``, then advance the table's step."""
        grads = update.rows if scale == 1.0 else update.rows * np.float32(scale)
        self.push_checked(np.asarray(update.ids).view(np.uint64), grads)
        self.tick()

    def set_optimizer(self, config):
        """The job's optimizer config: taken unless the table has its own (states restart if taken), which then
        takes the job's gradient scaling (``rescale_grad``, and ``clip_gradient`` unless it declared one)."""
        if self.own_optimizer:
            self.optimizer.follow(config)
            return
        self.restart_optimizer(config)

    def restart_optimizer(self, optimizer):
        """Run ``optimizer`` (an Optimizer, its config or its name) from now on, every row's state and update
        count restarting from zero."""
        self.optimizer = RowOptimizer(optimizer, table=self.name)
        self.store.states = [np.zeros_like(self.store.values) for _ in range(self.optimizer.num_states)]
        self.store.updates[:] = 0

    # ---- time and expiry ----------------------------------------------------------------------------
    def tick(self, steps=1):
        """Advance the table's step by ``steps`` (the server calls it once per applied round or push);
        every ``sweep_every`` steps, expire rows. Returns how many rows the sweep evicted (0 if none ran)."""
        before = self.step
        self.step += int(steps)
        if self.step // self.sweep_every != before // self.sweep_every:
            return self.sweep()
        return 0

    def sweep(self):
        """Evict rows unseen for more than ``ttl`` steps, then rows whose decayed count is under
        ``min_decayed``; returns how many rows went."""
        if self.ttl is None and self.min_decayed is None:
            return 0
        live = self.store.live_slots()
        seen, last = self.store.seen[live], self.store.last_seen[live]
        stale = admission.expired(seen, last, self.step, ttl=self.ttl)
        faded = admission.expired(seen, last, self.step, decay=self.decay, min_decayed=self.min_decayed) & ~stale
        if stale.any():
            self._evict(live[stale], 'evicted_ttl')
        if faded.any():
            self._evict(live[faded], 'evicted_decay')
        return int(np.count_nonzero(stale) + np.count_nonzero(faded))

    # ---- checkpoints ------------------------------------------------------------------------------------
    def export_rows(self, changed_only=False):
        """Arrays of the rows held (or only those changed since ``mark_saved``): ``ids``, ``values``,
        ``state0``..., ``updates``, ``seen``, ``last_seen``, plus ``removed`` (ids evicted since the last
        save), ``step``, ``optimizer_updates`` and, with admission by count, the occurrence ``sketch``."""
        store = self.store
        if changed_only:
            slots = store.live_slots()
            slots = slots[store.changed[slots]]
        else:   # every slot in use: slices, so a full save copies nothing
            slots = slice(0, store.rows) if store.rows == store.high_water else store.live_slots()
        arrays = {'ids': store.ids[slots], 'values': store.values[slots], 'updates': store.updates[slots],
                  'seen': store.seen[slots], 'last_seen': store.last_seen[slots],
                  'removed': np.concatenate(self.removed) if self.removed else np.zeros(0, np.uint64),
                  'step': np.array(self.step, np.int64),
                  'optimizer_updates': np.array(self.optimizer.optimizer.num_update, np.int64)}
        for k, state in enumerate(store.states):
            arrays[f'state{k}'] = state[slots]
        if self.sketch is not None:
            arrays['sketch'] = self.sketch.counts
        return arrays

    def mark_saved(self):
        """Forget what changed: the next incremental save holds only rows changed after this call."""
        self.store.changed[:] = False
        self.removed = []

    def load_rows(self, arrays):
        """Insert or overwrite the rows in ``arrays`` (``export_rows`` form, ``removed`` ignored)."""
        self._pulled = None
        ids = np.asarray(arrays['ids'], np.uint64)
        missing = [f'state{k}' for k in range(len(self.store.states)) if f'state{k}' not in arrays]
        if missing or np.shape(arrays['values'])[1:] != (self.dim,):
            raise DataError(f"table {self.name!r}: checkpoint rows lack {missing or 'values of width dim'}")
        slots = self.index.lookup(ids)
        new = slots < 0
        if new.any():
            self.store.reserve(self.store.rows + int(np.count_nonzero(new)))
            slots[new] = self.store.allocate(int(np.count_nonzero(new)))
            self.index.insert(ids[new], slots[new])
        store = self.store
        if slots.size and slots[0] + slots.size - 1 == slots[-1] and (np.diff(slots) == 1).all():
            slots = slice(int(slots[0]), int(slots[-1]) + 1)       # a fresh table: copy, do not scatter
        store.ids[slots] = ids
        store.values[slots] = arrays['values']
        for k, state in enumerate(store.states):
            state[slots] = arrays[f'state{k}']
        for column in ('updates', 'seen', 'last_seen'):
            getattr(store, column)[slots] = arrays[column]
        store.changed[slots] = False

    def drop(self, ids):
        """Remove the rows of ``ids`` that are held (the next incremental save records them as removed);
        returns how many went."""
        self._pulled = None
        ids = np.asarray(ids, np.uint64)
        slots = self.index.lookup(ids)
        slots = slots[slots >= 0]
        gone = self.store.ids[slots].copy()
        self.index.remove(gone)
        self.store.release(slots)
        self.removed.append(gone)
        return int(slots.size)


def _each(counts, n):
    """Checked ``counts`` (float64), or one occurrence for each of ``n`` namings."""
    return np.ones(n) if counts is None else counts

"""DistKVStore: MXNet's KVStore interface over the parameter server (``dist_sync`` / ``dist_async``).

>>> # with sparkps.kvstore.create('dist_sync', scheduler_uri=uri, secret=secret) as kv:
>>> #     kv.init([0, 1], [w0, w1]); kv.set_optimizer(opt)
>>> #     kv.push([0, 1], [g0, g1]); kv.pull([0, 1], out=[w0, w1])
>>> #     kv.end_training()

Every blocking method waits at most the request timeout (``Timeouts.request``; barriers
``Timeouts.barrier``) and raises PeerTimeout / NodeDied / RemoteError naming the node at fault.

``dist_sync`` keeps explicit rounds: every ``push`` is a new round; a ``pull`` returns the weights after this
worker's last round was applied with every active worker's gradient. A worker that runs out of data calls
``end_training()``: it leaves the rounds (the others go on without waiting for it; the servers scale a
round's gradient sum by ``num_workers / contributors``, so the step stays the mean gradient) and waits
for every worker. All pushes of one step must cover the same keys on every worker.

Strategies (the servers' round policy, :mod:`sparkps.server.policy`, chosen by the type and its options;
the names and options are listed in :mod:`sparkps.kvstore.strategies`):

=======================  ==========================================  ===========================================
type                     options                                     rounds
=======================  ==========================================  ===========================================
``dist_sync``                                                        every active worker's gradient, summed
``dist_async``           ``max_staleness=s`` (Angel's SSP)           each push applied on arrival; with ``s`` a
                                                                     worker waits when > s rounds ahead
``dist_sync_replicas``   ``replicas_to_aggregate=N``,                the first N gradients of a round (their
                         ``total_num_replicas=M``                    mean); stale ones dropped and counted
``dist_model_average``   ``interval_steps=k``                        local steps; every k the weights' mean
``dist_easgd``           ``communication_period=τ``,                 local steps; every τ an elastic move
                         ``moving_rate=α``                           towards the center, which is the model
=======================  ==========================================  ===========================================

The last two train on the worker (:mod:`sparkps.worker.averaging`): ``set_optimizer`` keeps the
optimizer here and ``pushpull`` (or ``push`` then ``pull`` of the same keys) is a local step. An option the
type does not take is a ConfigError naming it. ``set_gradient_compression`` picks the codec of pushed
gradients (:mod:`sparkps.comm.codec`: ``fp16``, ``2bit`` with error feedback).
"""
import time

import numpy as np

from sparkps.comm.codec import create_codec
from sparkps.comm.postoffice import Postoffice
from sparkps.comm.settings import NodeSettings
from sparkps.comm.timeouts import Timeouts
from sparkps.errors import ClusterError, ConfigError
from sparkps.kvstore import register
from sparkps.kvstore.base import (
    CHECKPOINT,
    OPTIMIZER,
    PROGRESS,
    PULL_STEP,
    ROW_SPARSE,
    SYNC,
    TABLE_OPTIONS,
    KVStoreBase,
    key_kind,
    key_value_lists,
)
from sparkps.kvstore.strategies import DEVICE_NAMES, DIST_TYPES, STRATEGY_OPTIONS, STRATEGY_TABLE, check_strategy
from sparkps.param_group import ParameterGroup
from sparkps.rows.values import RowSparse
from sparkps.worker.averaging import LOCAL_TRAINING
from sparkps.worker.dist_rows import DistRowSparseKeys
from sparkps.worker.kvworker import KVWorker
from sparkps.worker.payloads import host_value
from sparkps.worker.server_commands import ServerCommands

# the strategies of the table, and MXNet's device-side names of the first two
SYNC_OF_TYPE = {name: STRATEGY_TABLE[DEVICE_NAMES.get(name, name)].sync for name in DIST_TYPES}
TYPES = tuple(SYNC_OF_TYPE)
STRATEGY_OPTIONS = dict(STRATEGY_OPTIONS, dist_async_device=("max_staleness",))


def round_policy(kvtype, options):
    """``(rounds mode, INIT policy or None)`` of a kvstore type and its strategy ``options``.

    ConfigError naming an option the type does not take.
    """
    unknown = sorted(set(options) - set(STRATEGY_OPTIONS.get(kvtype, ())))
    if unknown:
        known = ", ".join(STRATEGY_OPTIONS.get(kvtype, ())) or "none"
        raise ConfigError("kvstore %r has no option(s) %s (known: %s)" % (kvtype, ", ".join(unknown), known))
    if kvtype == "dist_sync_replicas":
        return "server", dict(options, name="sync_replicas")
    if kvtype in LOCAL_TRAINING:
        return LOCAL_TRAINING[kvtype].rounds, LOCAL_TRAINING[kvtype].server_policy
    if options.get("max_staleness") is not None:
        return "own", {"name": "ssp", "max_staleness": options["max_staleness"]}
    return ("own" if SYNC_OF_TYPE[kvtype] else None), None


class DistKVStore(ServerCommands, DistRowSparseKeys, KVStoreBase):
    """The worker's view of the parameter server, with MXNet's KVStore methods.

    Construct with ``DistKVStore.create`` (``sparkps.kvstore.create(type)``, for which the class registers itself under
    every dist type when the worker package is imported); the kvstore owns (and stops) the postoffice it started.
    Not meant to be shared by threads: one kvstore per worker. Capable of ``optimizer``, ``progress``,
    ``checkpoint`` and, for the sync types, ``sync``.
    """

    def __init__(self, kvtype, postoffice, compression=None, own_postoffice=True, progress_interval=1.0,
                 **strategy):
        if kvtype not in SYNC_OF_TYPE:
            raise ConfigError("unknown distributed kvstore type %r (known: %s)" % (kvtype, ", ".join(TYPES)))
        super().__init__(kvtype)
        sync = SYNC_OF_TYPE[kvtype]
        rounds, policy = round_policy(kvtype, strategy)
        self._local = LOCAL_TRAINING[kvtype](postoffice.num_workers, **strategy) if kvtype in LOCAL_TRAINING else None
        self._local_push = None
        # model averaging and EASGD train on the workers' own weights: no sparse tables (strategies.check_tables)
        rows = (ROW_SPARSE, TABLE_OPTIONS, PULL_STEP) if self._local is None else ()
        self.CAPABILITIES = frozenset((OPTIMIZER, PROGRESS, CHECKPOINT) + rows + ((SYNC,) if sync else ()))
        self.postoffice = postoffice
        self.worker = KVWorker(postoffice, sync=sync, compression=compression, rounds=rounds, policy=policy)
        self._own_postoffice = own_postoffice
        self._pending_pushes = []
        self._deferred = None
        self._left = self._closed = False
        self._resume_path = None
        self._start_tables = False       # a warm start: the servers load the tables after set_optimizer
        self._progress_interval = float(progress_interval)
        self._last_progress = float("-inf")
        self._key_kind = None  # 'int' or 'str' after the first call: MXNet refuses to mix them

    @classmethod
    def create(cls, kvtype, **options):
        """Register a worker node with the scheduler and return its DistKVStore: :func:`create_dist_kvstore`
        (the options and what it blocks on are its). The factory ``sparkps.kvstore.create`` calls."""
        return create_dist_kvstore(kvtype, **options)

    @property
    def rank(self):
        """This worker's rank, 0 .. num_workers - 1."""
        return self.postoffice.rank

    @property
    def num_workers(self):
        return self.postoffice.num_workers

    @property
    def num_servers(self):
        return self.postoffice.num_servers

    # ---- parameters ------------------------------------------------------------------------------
    def init(self, keys, values):
        """Declare ``keys``; rank 0's ``values`` become the initial weights. Collective.

        Blocks until every worker called init (a barrier, at most ``Timeouts.barrier`` s).
        """
        keys, values = key_value_lists(keys, values, "init")
        if any(isinstance(v, RowSparse) for v in values):  # sparse tables (ps/worker/row_tables.py), one INIT each
            for key, value in zip(keys, values):
                self._init_rows(key, value)
            return
        self._key_kind = key_kind(self._key_kind, keys, "init")  # dense keys only: tables go by name
        arrays = [host_value(v) for v in values]
        self.worker.declare({k: a.shape for k, a in zip(keys, arrays)})
        if self.rank == 0:
            self.worker.wait(self.worker.init(keys, arrays))
        self.barrier()

    def push(self, keys, values, priority=0):
        """Queue gradients for ``keys`` (a per-device list per key is summed). Returns at once.

        The values are copied now, straight into one payload per server. They travel with the next
        ``pull`` of the same keys as one PUSHPULL request per server (one round trip per step), or alone
        before any other call. Errors of a push surface at that call.
        """
        self._check_open()
        keys, values = key_value_lists(keys, values, "push")
        if any(isinstance(v, RowSparse) for v in values):  # row-sparse gradients of sparse tables
            for key, value in zip(keys, values):
                self._push_rows(key, value)
            return
        self._key_kind = key_kind(self._key_kind, keys, "push")
        if self._local is not None:  # a local step, taken by the next pull of these keys
            self._local_push = (keys, [host_value(v).copy() for v in values])
            return
        staged = self.worker.stage(keys, values)
        self._flush()
        self._deferred = staged

    def _flush(self):
        """Send a queued push on its own."""
        if self._deferred is not None:
            staged, self._deferred = self._deferred, None
            self._pending_pushes.append(self.worker.push_staged(staged))
        self._flush_rows()

    def pull(self, keys, out=None, priority=0):
        """Fill ``out`` with the weights of ``keys``; in sync mode those after this worker's last round.

        Blocks until every server involved answered (at most ``Timeouts.request`` s).
        """
        self._check_open(pushing=False)
        if out is None:
            raise ConfigError("pull needs the output arrays: kv.pull(keys, out=arrays)")
        self._key_kind = key_kind(self._key_kind, keys, "pull")
        keys, outs = key_value_lists(keys, out, "pull", "out arrays")
        if not isinstance(out, ParameterGroup):
            outs = [o[0] if isinstance(o, (list, tuple)) and len(o) == 1 else o for o in outs]
        if self._local_push is not None:
            (pushed, grads), self._local_push = self._local_push, None
            if pushed != keys:
                raise ConfigError("%s: a pull after a push must be of the pushed keys %s, got %s"
                                  % (self.type, pushed, keys))
            self._local.step(self.worker, keys, grads, outs)
            return
        if (self._deferred is not None and len(set(keys)) == len(keys)
                and sorted(keys) == self._deferred.keys):
            self._flush_rows()
            staged, self._deferred = self._deferred, None
            rid = self.worker.pushpull_staged(staged, keys, outs)
        else:
            self._flush()
            rid = self.worker.pull(keys, outs)
        self._wait_pushes()
        self.worker.wait(rid)

    def pushpull(self, keys, values, out=None, priority=0):
        """Push ``values`` and pull the updated weights into ``out``: one request per server."""
        self._check_open()
        given = keys
        self._key_kind = key_kind(self._key_kind, given, "pushpull")
        keys, values = key_value_lists(given, values, "pushpull")
        outs = values if out is None else key_value_lists(given, out, "pushpull", "out arrays")[1]
        if self._local is not None:
            self._local.step(self.worker, keys, [host_value(v) for v in values], outs)
            return
        self._wait_pushes()
        self.worker.wait(self.worker.pushpull(keys, values, outs))

    def _wait_pushes(self):
        self._flush()
        self._wait_sent()

    def _wait_sent(self):
        pending, self._pending_pushes = self._pending_pushes, []
        for rid in pending:
            self.worker.wait(rid)

    def _check_open(self, pushing=True):
        if self._closed:
            raise ClusterError("the kvstore of worker %s is closed" % self.rank)
        if self._left and pushing:
            raise ClusterError("worker %s already called end_training: it pushes no more"
                               % self.rank)

    def set_gradient_compression(self, compression_params):
        """Send later pushes through the codec ``compression_params`` (MXNet's ``{'type': '2bit',
        'threshold': t}`` or ``{'type': 'fp16'}``); ConfigError naming an unknown type or option."""
        check_strategy(self.type.replace("_device", ""), {}, compression_params)
        self._wait_pushes()
        self.worker.codec = create_codec(compression_params)
        self.worker.push_dtype = self.worker.codec.dtype

    @property
    def bytes_per_step(self):
        """Gradient bytes this worker sent per push so far (what the codec saves shows here)."""
        return self.worker.bytes_pushed / max(self.worker.pushes, 1)

    # ---- cluster ---------------------------------------------------------------------------------
    def barrier(self):
        """Block until every worker reached this barrier (at most ``Timeouts.barrier`` s)."""
        self._wait_pushes()
        self.postoffice.barrier("workers")

    def report_progress(self, epoch=None, nbatch=None, samples=None, metrics=None, force=False, stopped=False):
        """Tell the scheduler how far this worker is; sent at most once per second unless ``force``. ``stopped``:
        training ended early at this epoch (early stopping): the epochs left are not run."""
        now = time.monotonic()
        if not force and now - self._last_progress < self._progress_interval:
            return
        self._last_progress = now
        metrics = {str(k): float(np.asarray(v)) for k, v in (metrics or {}).items()}
        if self.worker.pushes:
            metrics["push_bytes_per_step"] = float(self.bytes_per_step)
        if self.worker.rounds == "server":
            metrics["stale_pushes"] = float(self.worker.stale_pushes)
        progress = {"epoch": epoch, "nbatch": nbatch, "samples": samples, "metrics": metrics, "time": time.time(),
                    "counters": self.worker.counters()}
        if stopped:
            progress["stopped"] = True
        tables = self._progress_tables()   # rank 0 adds the sparse tables' statistics
        if tables:
            progress["tables"] = tables
        self.postoffice.report_progress(progress)

    def end_training(self):
        """This worker pushes no more: leave the sync rounds, then wait for every worker.

        Afterwards ``pull`` returns the final weights. Blocks at most the request timeout for the
        servers and ``Timeouts.barrier`` for the other workers.
        """
        if self._left:
            return
        self._wait_pushes()
        if self._local is not None:
            self._local.finish(self.worker)
        self._leave_rounds()
        self.postoffice.barrier("workers")
        self._report_counters()

    def _report_counters(self):
        """The final request counts, before this worker finishes: its own steps and requests, and from rank 0 (every
        worker's steps are served once all passed the barrier) every server's. Never blocks but for rank 0's one
        stats request."""
        counters = {"counters": self.worker.counters()}
        if self.rank == 0:
            counters["server_counters"] = {str(s): c for s, c in enumerate(self.server_requests())}
        self.postoffice.report_progress(counters)

    def _leave_rounds(self):
        if self.worker.rounds and not self._left:
            self.worker.wait(self.worker.leave())
        self._left = True

    def close(self):
        """Finish this worker and stop its node (idempotent). Blocks at most the request timeout."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.postoffice.failure is None:
                self._wait_pushes()
                self._leave_rounds()
                if self._own_postoffice:
                    self.postoffice.finish()
        finally:
            if self._own_postoffice:
                self.postoffice.stop()



def create_dist_kvstore(kvtype, scheduler_uri=None, secret=None, rank=None, timeouts=None, compression=None,
                        transport="tcp", host="127.0.0.1", zmq_context=None, postoffice=None, curve=False,
                        max_message_bytes=None, **strategy):
    """Register a worker node with the scheduler and return its DistKVStore.

    ``strategy``: the type's options (``replicas_to_aggregate``, ``max_staleness``, ...); checked before
    anything starts. Missing ``scheduler_uri``/``secret``/``rank`` come from ``SPARKPS_SCHEDULER_URI``/
    ``SPARKPS_SECRET``/``SPARKPS_RANK``; ``max_message_bytes`` the size limit of the worker's sockets (default
    ``SPARKPS_MAX_MESSAGE_BYTES`` or the header's limit, ~4 MiB). Blocks until every node registered (at most
    ``timeouts.register`` s). A started ``postoffice`` may be given instead (it is not stopped by ``close``).
    """
    if kvtype not in TYPES:
        raise ConfigError("unknown distributed kvstore type %r (known: %s)" % (kvtype, ", ".join(TYPES)))
    round_policy(kvtype, strategy)  # bad options fail here, before this worker registers
    check_strategy(kvtype.replace("_device", ""), {}, compression)
    if kvtype in LOCAL_TRAINING:
        LOCAL_TRAINING[kvtype](1, **strategy)
    create_codec(compression)
    if postoffice is not None:
        return DistKVStore(kvtype, postoffice, compression, own_postoffice=False, **strategy)
    scheduler_uri, secret, rank = NodeSettings.resolve(scheduler_uri, secret, rank)
    if isinstance(timeouts, dict):
        timeouts = Timeouts(**timeouts)
    postoffice = Postoffice("worker", scheduler_uri, secret, rank=rank, host=host, transport=transport,
                            zmq_context=zmq_context, timeouts=timeouts, curve=curve,
                            max_message_bytes=max_message_bytes)
    postoffice.start()
    try:
        return DistKVStore(kvtype, postoffice, compression, **strategy)
    except BaseException:
        postoffice.stop()
        raise


for _type in TYPES:
    register(_type, DistKVStore.create)

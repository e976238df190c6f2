"""Every per-row and per-message constant of the sizing model, each with the code it comes from.

``tests/plan/test_constants.py`` checks each against the code it names (the dtypes of the arrays, the optimizers'
state counts, the index's bucket and load, the sketch's shape, the codecs' sizes, a step's header frame), so a
change there fails a test here instead of silently skewing the model.

This module imports from sparkps only the optimizers' declarations (:mod:`sparkps.optimizer.abilities`): the state
counts are the classes' own, so a newly registered optimizer with a per-row form is one the model sizes.
"""
from collections.abc import Mapping

from sparkps.optimizer import OPTIMIZERS, create
from sparkps.optimizer.abilities import ROW_WISE

# ---- a sparse row on a server (sparkps/rows/store.py) -------------------------------------------
FLOAT_BYTES = 4                 # values and each optimizer state: float32, dim wide (RowStore.values / states)
ROW_COLUMN_BYTES = {            # RowStore's per-slot columns, _DTYPES in rows/store.py
    'ids': 8,                   # uint64
    'updates': 4,               # uint32
    'seen': 4,                  # float32
    'last_seen': 4,             # int32
    'changed': 1,               # bool
}
CHUNK_ROWS = 1024               # RowStore(chunk_rows=1024): capacity grows by max(chunk, capacity // 8)
GROWTH_DIVISOR = 8

# ---- optimizer state per row (sparkps/optimizer/rowwise.py: RowOptimizer.num_states, the optimizer's num_states) --
# the planner's named settings of an optimizer whose state count its hyper-parameters change
STATE_VARIANTS = {'sgd_momentum': ('sgd', {'momentum': 0.9}), 'rmsprop_centered': ('rmsprop', {'centered': True})}


class OptimizerStates(Mapping):
    """``{optimizer name: state arrays per row}`` of every registered optimizer whose class declares a per-row form
    (``'row_wise'``), read from the registry when asked (one registered later is included), and of the
    STATE_VARIANTS. Never blocks."""

    def __getitem__(self, name):
        if name in STATE_VARIANTS:
            base, params = STATE_VARIANTS[name]
            return create(base, **params).num_states()
        cls = OPTIMIZERS.get(name)
        if cls is None or not cls.declares(ROW_WISE):
            raise KeyError(name)
        return cls.STATES

    def __iter__(self):
        return iter([n for n, cls in OPTIMIZERS.items() if cls.declares(ROW_WISE)] + list(STATE_VARIANTS))

    def __len__(self):
        return sum(1 for _ in self)


STATES = OptimizerStates()

# ---- the id -> slot index (sparkps/rows/index.py: HashRowIndex) ---------------------------------
INDEX_BUCKET_BYTES = 12         # uint64 key + int32 slot per bucket
INDEX_MAX_LOAD = 0.7            # _MAX_LOAD: buckets double once more than 70 % are used
INDEX_MIN_BUCKETS = 2048        # HashRowIndex() = capacity 1024 -> 1 << ceil(log2(1024 / 0.7))
# a table's index is a GrowingRowIndex: sorted arrays (uint64 id + int32 slot) until SWITCH_AT ids, then a
# HashRowIndex(2 * ids held) (rows/index.py GrowingRowIndex.insert), which doubles past INDEX_MAX_LOAD from there
INDEX_SWITCH_AT = 1 << 18       # row_index.SWITCH_AT
SORTED_INDEX_ID_BYTES = 8 + 4   # SortedRowIndex: uint64 id + int32 slot per id
INDEX_SWITCH_GROWTH = 2         # HashRowIndex(2 * held_ids.size) at the switch

# ---- a server process's fixed memory (measured: RSS of `python -m sparkps.server`, docs/scale.md) -------------
SERVER_PROCESS_BYTES = 35 << 20     # the process with its modules imported, before any table
INDEX_KERNELS_BYTES = 123 << 20     # what loading the compiled index probes (numba, rows/kernels.py) adds, once a
                                    # table's index passes INDEX_SWITCH_AT ids
FIRST_TABLE_BYTES = 9 << 18        # 2.25 MiB: what a process's first table adds beside its arrays, whatever its
                                    # rows (measured as RSS growth minus SparseTable.stats()['bytes'] at 20k-260k
                                    # rows, sgd and adagrad: 2.2-2.3 MB): ~1.7 MB of shared-library code its numpy
                                    # paths touch for the first time (file-backed pages, smaps Shared_Clean) and
                                    # ~0.6 MB of heap the allocator keeps around the arrays
SHARD_WRITE_BYTES = 120 << 20      # what COMMAND write_tables adds at a fit's end (rows/shards.write_shard): pyarrow
                                    # and its Parquet library loaded (~47 MB of code, file-backed) and the writer's
                                    # buffers of one row group (rows/shards.ROW_GROUP_ROWS); measured as the servers'
                                    # RSS step during the write in benchmarks/bench_big_table (117-122 MB at 500k rows
                                    # a table), whatever the rows
LINEAR_DIM = 1                      # a CTR model's first-order table (sparkps/ctr/features.py: linear_table, width 1)
                                    # holds the same ids as its embedding table

# ---- admission by count (sparkps/rows/admission.py: OccurrenceSketch(width=1 << 18, depth=4)) ---------------
SKETCH_BYTES = 4 * (1 << 18) * 4    # depth x width uint32 counters, per table per server when min_count > 1

# ---- a dense element on a server (sparkps/server/tables/dense.py) ---------------------------------------------
# weights (float32) + optimizer state (float32 each, same counts as STATES) + under dist_sync the round's summed
# gradient (DenseGradient buffer, dense.py) until it is applied + the temporaries an update allocates while it
# runs (the elementwise optimizers compute two arrays of the piece's size, e.g. adam's g*g and its step: measured
# as RSS, the dense state peaks at weights + states + 2 such copies)
DENSE_SYNC_BUFFERS = 1
DENSE_UPDATE_SCRATCH = 2

# ---- the wire (sparkps/comm/message.py, sparkps/comm/protocol.py, sparkps/comm/codec) -------------------------
MAC_BYTES = 32                  # security.MAC_SIZE: the header frame starts with an HMAC-SHA256
STEP_HEADER_BYTES = 226         # MAC + msgpack header of a step PUSHPULL with 4 keys and one table (pushing,
                                # pulling and counting its pulled ids), from a node
                                # (its 16-byte session, the 16-byte job id, a sequence number of 128..255;
                                # one byte less below 128, one more from 256, three more from 65536:
                                # measured by encoding one,
                                # tests/plan/test_constants.py re-measures it)
REPLY_HEADER_BYTES = 158        # MAC + msgpack header of its reply with two arrays
ID_BYTES = 8                    # row ids travel as uint64 (protocol.TableStep: push ids, pull ids)
COUNT_BYTES = 4                 # a training pull's counts of its ids travel as uint32 (protocol.TableStep: pull counts)
CODEC_BITS = {'none': 32, 'fp16': 16, '2bit': 2}    # dense gradient bits per element (codec/__init__, twobit.py:
                                                    # 16 values per int32 word)
CODEC_HEADER_BYTES = {'none': 0, 'fp16': 17, '2bit': 44}   # what the codec's entry adds to a step's header
                                                           # ('codec' in meta: its type; 2bit: threshold, a size
                                                           # of 256..65535; tests/plan/test_constants.py measures)

# ---- a checkpoint row (sparkps/rows/table.py: SparseTable.export_rows) ------------------------------
CHECKPOINT_COLUMN_BYTES = 8 + 4 + 4 + 4     # ids, updates, seen, last_seen (+ values and states, float32)
# the dense pieces are saved with their optimizer state (dense_pieces.py: weights + one array per state)

# ---- the scheduler (sparkps/comm/timeouts.py, sparkps/worker/dist_kvstore.py) ---------------------------------
HEARTBEAT_INTERVAL_S = 1.0      # Timeouts.heartbeat_interval: every node sends one heartbeat this often
BARRIERS_AT_START = 2           # DistKVStore: after the dense init, after SET_OPTIMIZER
BARRIERS_PER_TABLE = 1          # DistKVStore._init_rows: one barrier per sparse table's INIT
BARRIERS_AT_END = 1             # DistKVStore.close: the workers' last barrier
PROGRESS_INTERVAL_S = 1.0       # DistKVStore(progress_interval=): a training worker reports progress at most this often
# a server reports its request counters every heartbeat interval while they change (server/runner.report_counters)

"""The sizing model: memory per server, bytes per step, scheduler load, checkpoints and the step time.

Every figure is a formula over the constants of :mod:`sparkps.plan.constants` (each names the code it comes from)
and the distinct ids of a batch (:mod:`sparkps.plan.zipf`). docs/scale.md writes the formulas out. Pure
arithmetic: no I/O, no sockets, nothing imported from the rest of sparkps.

A step of one worker is one PUSHPULL per server (``DistKVStore.pull_step``; under dist_sync every server gets
one, even with nothing to carry, as each counts a round): it carries the server's share of the dense gradient
(through the codec), the ids and gradients of the rows the previous batch pushed and the ids of the rows this
batch pulls; the reply carries the server's dense weights and the pulled rows. Ids are spread over the servers by
a hash (``sparkps.rows.ids.shard_of``), so each holds ``rows / servers`` rows and gets ``distinct / servers``
of a batch's ids.
"""
import math
from dataclasses import dataclass

from sparkps.plan import constants as C

KVSTORES = ('dist_sync', 'dist_async')


@dataclass(frozen=True)
class Workload:
    """What a job is: its cluster, table, batches and the machine's speeds (bits/s, bytes/s, seconds)."""
    workers: int
    servers: int
    rows: float                       # rows the sparse table holds (all servers together)
    dim: int = 16
    batch: int = 4096                 # samples per worker per step
    fields: int = 26                  # ids per sample
    zipf: float = 1.1                 # Zipf exponent of the id frequencies
    id_space: float = None            # distinct ids the data can name (default: rows)
    optimizer: str = 'adagrad'
    dense: float = 0                  # dense parameters (elements)
    codec: str = 'none'               # dense gradient codec: none, fp16, 2bit
    min_count: int = 1                # admission by count: > 1 adds a sketch per server
    kvstore: str = 'dist_sync'
    bandwidth: float = 10e9           # network bits/s of each node (full duplex)
    compute_per_sample: float = 20e-6     # seconds of forward+backward per sample on a worker
    server_row_seconds: float = 3.5e-6    # seconds a server spends per row pulled and pushed (docs/benchmarks.md,
                                          # section sparse: SparseTable.pull + push at ~283,000 rows/s)
    latency: float = 100e-6               # one request's round trip, seconds
    disk_bandwidth: float = 500e6         # bytes/s each server writes a checkpoint at
    heartbeat_interval: float = C.HEARTBEAT_INTERVAL_S
    server_memory: float = None           # bytes a server may use (None: not checked)
    row_arrival: float = None             # new rows a server's table gets at a time (None: a few per step; a load
                                          # or a first epoch that names many new ids at once: see store_capacity)
    linear: bool = False                  # a CTR model's first-order table (width 1, same ids) beside the rows
    write_tables: bool = False            # the fit ends with each server writing its shard (a Spark fit's does)

    def check(self):
        """Raise ValueError naming the first field out of range."""
        for name in ('workers', 'servers', 'dim', 'batch', 'fields'):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"plan: {name} must be at least 1, got {getattr(self, name)!r}")
        positive = ('rows', 'zipf', 'bandwidth', 'disk_bandwidth', 'heartbeat_interval')
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"plan: {name} must be positive, got {getattr(self, name)!r}")
        for name in ('dense', 'compute_per_sample', 'server_row_seconds', 'latency'):
            if not getattr(self, name) >= 0:
                raise ValueError(f"plan: {name} must not be negative, got {getattr(self, name)!r}")
        if self.id_space is not None and not self.id_space >= 1:
            raise ValueError(f"plan: id_space must be at least 1, got {self.id_space!r}")
        if self.optimizer not in C.STATES:
            raise ValueError(f"plan: optimizer must be one of {sorted(C.STATES)}, got {self.optimizer!r}")
        if self.codec not in C.CODEC_BITS:
            raise ValueError(f"plan: codec must be one of {sorted(C.CODEC_BITS)}, got {self.codec!r}")
        if self.kvstore not in KVSTORES:
            raise ValueError(f"plan: kvstore must be one of {KVSTORES}, got {self.kvstore!r}")
        return self


# ---- memory ---------------------------------------------------------------------------------------------------
def row_payload_bytes(dim, optimizer):
    """Bytes of one row's arrays: value + optimizer state (float32, dim wide each) + the per-row columns."""
    return C.FLOAT_BYTES * dim * (1 + C.STATES[optimizer]) + sum(C.ROW_COLUMN_BYTES.values())


def store_capacity(rows, arrival=None):
    """Slots a RowStore has allocated once ``rows`` rows arrived ``arrival`` new rows at a time (None: a few at a
    time, as training steps create them): when the rows in use outgrow the arrays, they grow to
    ``max(need, capacity + max(CHUNK_ROWS, capacity // 8))`` rounded up to whole chunks (RowStore._grow)."""
    capacity, top = 0, 0
    while top < rows:
        fresh = rows - top if arrival is None else min(int(arrival), rows - top)
        need = top + (1 if arrival is None else fresh)
        if need > capacity:
            step = max(C.CHUNK_ROWS, capacity // C.GROWTH_DIVISOR)
            capacity = -(-max(need, capacity + step) // C.CHUNK_ROWS) * C.CHUNK_ROWS
        top = capacity if arrival is None else top + fresh
    return capacity


def index_buckets(rows, start=C.INDEX_MIN_BUCKETS):
    """Buckets of a HashRowIndex built with ``start`` buckets holding ``rows`` ids: doubled while more than 70 %
    full."""
    buckets = start
    while rows > C.INDEX_MAX_LOAD * buckets:
        buckets *= 2
    return buckets


def hash_buckets(capacity):
    """Buckets of ``HashRowIndex(capacity)``: the power of two holding ``capacity`` ids at most 70 % full."""
    return 1 << max(4, math.ceil(math.log2(max(capacity, 1) / C.INDEX_MAX_LOAD)))


def index_bytes(rows):
    """Bytes of a sparse table's index (a GrowingRowIndex) holding ``rows`` ids: 12 per id while sorted, then the
    buckets of the HashRowIndex it switches to (built for twice the ids held at the switch, doubled past 70 %)."""
    if rows < C.INDEX_SWITCH_AT:
        return rows * C.SORTED_INDEX_ID_BYTES
    start = hash_buckets(C.INDEX_SWITCH_GROWTH * C.INDEX_SWITCH_AT)
    return index_buckets(rows, start) * C.INDEX_BUCKET_BYTES


def fixed_server_bytes(rows, write_tables=False):
    """A server process's memory beside its tables' arrays: the interpreter and modules, the code and heap its
    first table adds once it holds rows, the compiled index probes once a table holds ``rows`` >= the switch and,
    with ``write_tables``, what writing its shard at the fit's end adds (pyarrow and one row group)."""
    first = C.FIRST_TABLE_BYTES if rows >= 1 else 0
    return (C.SERVER_PROCESS_BYTES + first + (C.INDEX_KERNELS_BYTES if rows >= C.INDEX_SWITCH_AT else 0)
            + (C.SHARD_WRITE_BYTES if write_tables else 0))


def first_table_rss(rows, dim, optimizer, arrival=None):
    """Bytes a process's resident memory grows by while its first table takes ``rows`` rows (the compiled index
    probes already loaded): the table's arrays (:func:`table_bytes`) and the fixed ``FIRST_TABLE_BYTES``."""
    return table_bytes(rows, dim, optimizer, arrival=arrival)['total'] + C.FIRST_TABLE_BYTES


def table_bytes(rows, dim, optimizer, min_count=1, arrival=None):
    """``{'rows': .., 'index': .., 'sketch': .., 'total': ..}``: bytes of one server's share of a sparse table
    holding ``rows`` rows (what ``SparseTable.stats()['bytes']`` reports); ``arrival``: see :func:`store_capacity`."""
    rows = int(round(rows))
    store = store_capacity(rows, arrival) * row_payload_bytes(dim, optimizer)
    index = index_bytes(rows)
    sketch = C.SKETCH_BYTES if min_count > 1 else 0
    return {'rows': store, 'index': index, 'sketch': sketch, 'total': store + index + sketch}


def dense_bytes(elements, optimizer, sync):
    """Bytes of a server's dense share: weights + optimizer state (+ the round's summed gradient under sync) + the
    two temporaries an update allocates."""
    copies = 1 + C.STATES[optimizer] + (C.DENSE_SYNC_BUFFERS if sync else 0) + C.DENSE_UPDATE_SCRATCH
    return C.FLOAT_BYTES * elements * copies


# ---- traffic --------------------------------------------------------------------------------------------------
def codec_bytes(elements, codec):
    """Bytes of a dense gradient of ``elements`` values on the wire (2bit: 16 values per int32 word)."""
    if codec == '2bit':
        return 4 * -(-int(elements) // 16)
    return C.CODEC_BITS[codec] // 8 * elements


def step_request_bytes(dense_elements, unique_ids, dim, codec='none'):
    """Bytes of one step PUSHPULL to one server: header frame (with the codec's entry), dense gradient share,
    pushed ids + gradients, pulled ids and their counts (how often the batch used each)."""
    rows = unique_ids * (C.ID_BYTES + C.FLOAT_BYTES * dim) + unique_ids * (C.ID_BYTES + C.COUNT_BYTES)
    return C.STEP_HEADER_BYTES + C.CODEC_HEADER_BYTES[codec] + codec_bytes(dense_elements, codec) + rows


def step_reply_bytes(dense_elements, unique_ids, dim):
    """Bytes of its reply: header frame, dense weights share (float32), pulled rows (float32, dim wide)."""
    return C.REPLY_HEADER_BYTES + C.FLOAT_BYTES * dense_elements + C.FLOAT_BYTES * dim * unique_ids


def traffic(w, unique):
    """Per-step bytes ``{'worker_out', 'worker_in', 'server_in', 'server_out', 'requests_per_worker'}`` of
    workload ``w`` whose batches name ``unique`` distinct ids."""
    per_server_ids = unique / w.servers
    dense_share = w.dense / w.servers
    requests = w.servers      # one PUSHPULL per server per step (dist_async skips servers with nothing to carry)
    out = requests * step_request_bytes(dense_share, per_server_ids, w.dim, w.codec)
    back = requests * step_reply_bytes(dense_share, per_server_ids, w.dim)
    return {'worker_out': out, 'worker_in': back, 'server_in': w.workers * out / w.servers,
            'server_out': w.workers * back / w.servers, 'requests_per_worker': requests}


# ---- time -----------------------------------------------------------------------------------------------------
def step_times(w, unique, moved):
    """Seconds per step of each resource: compute, the worker's link, a server's link, a server's CPU."""
    return {'compute': w.batch * w.compute_per_sample,
            'worker link': max(moved['worker_out'], moved['worker_in']) * 8 / w.bandwidth,
            'server link': max(moved['server_in'], moved['server_out']) * 8 / w.bandwidth,
            'server cpu': w.workers * unique / w.servers * w.server_row_seconds}


def step_time(times, latency):
    """A synchronous step: compute, then the exchange, limited by its slowest resource, plus a round trip."""
    return times['compute'] + max(times['worker link'], times['server link'], times['server cpu']) + latency


def scheduler_load(w, tables=1):
    """Messages the scheduler receives: heartbeats per second, progress reports per second at most while training
    (each worker's progress, each server's request counters), barriers per job and per step."""
    nodes = w.workers + w.servers
    barriers = C.BARRIERS_AT_START + C.BARRIERS_PER_TABLE * tables + C.BARRIERS_AT_END
    return {'heartbeats_per_s': nodes / w.heartbeat_interval,
            'reports_per_s': w.workers / C.PROGRESS_INTERVAL_S + w.servers / w.heartbeat_interval,
            'barriers_per_job': barriers,
            'barrier_messages_per_job': 2 * barriers * w.workers, 'barriers_per_step': 0}


def checkpoint(w, rows_per_server):
    """Bytes one server writes for a full checkpoint and the seconds it takes (servers write in parallel)."""
    per_row = C.CHECKPOINT_COLUMN_BYTES + C.FLOAT_BYTES * w.dim * (1 + C.STATES[w.optimizer])
    dense = C.FLOAT_BYTES * w.dense / w.servers * (1 + C.STATES[w.optimizer])    # weights and their state
    size = rows_per_server * per_row + (C.SKETCH_BYTES if w.min_count > 1 else 0) + dense
    return {'server_bytes': size, 'total_bytes': size * w.servers, 'seconds': size / w.disk_bandwidth}

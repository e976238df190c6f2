"""Every constant of the sizing model equals what the code it names does."""
import numpy as np
import pytest

from sparkps.comm import protocol
from sparkps.comm.codec import create_codec
from sparkps.comm.message import MAC_SIZE, Message, encode
from sparkps.comm.timeouts import Timeouts
from sparkps.optimizer import create
from sparkps.optimizer.rowwise import RowOptimizer
from sparkps.plan import constants as C
from sparkps.rows import store as row_store
from sparkps.rows.admission import OccurrenceSketch
from sparkps.rows.index import HashRowIndex
from sparkps.rows.table import SparseTable


def test_row_columns_are_the_stores_dtypes():
    assert {c: np.dtype(t).itemsize for c, t in row_store._DTYPES.items()} == C.ROW_COLUMN_BYTES
    store = row_store.RowStore(dim=16, num_states=1)
    assert (store.chunk_rows, store.values.dtype.itemsize) == (C.CHUNK_ROWS, C.FLOAT_BYTES)


@pytest.mark.parametrize("name", ['sgd', 'nag', 'adagrad', 'adam', 'ftrl', 'rmsprop', 'adadelta'])
def test_state_counts_are_the_row_optimizers(name):
    assert RowOptimizer(name).num_states == C.STATES[name]


def test_state_counts_of_the_variants():
    assert RowOptimizer(create('sgd', momentum=0.9)).num_states == C.STATES['sgd_momentum']
    assert RowOptimizer(create('rmsprop', centered=True)).num_states == C.STATES['rmsprop_centered']


def test_index_buckets_and_sketch():
    index = HashRowIndex()
    assert index.nbytes == C.INDEX_MIN_BUCKETS * C.INDEX_BUCKET_BYTES
    from sparkps.plan import model
    from sparkps.rows import index as row_index
    assert row_index.SWITCH_AT == C.INDEX_SWITCH_AT
    switched = HashRowIndex(C.INDEX_SWITCH_GROWTH * C.INDEX_SWITCH_AT)    # what GrowingRowIndex builds at the switch
    assert switched.nbytes == model.index_bytes(C.INDEX_SWITCH_AT)
    sorted_index = row_index.SortedRowIndex()
    sorted_index.insert(np.arange(1000, dtype=np.uint64), np.arange(1000, dtype=np.int32))
    assert sorted_index.nbytes == model.index_bytes(1000)
    assert OccurrenceSketch().nbytes == C.SKETCH_BYTES
    table = SparseTable('t', dim=4, min_count=2)
    assert table.stats()['bytes'] - SparseTable('u', dim=4).stats()['bytes'] == C.SKETCH_BYTES


def test_header_frames_and_mac():
    assert MAC_SIZE == C.MAC_BYTES
    step = protocol.TableStep('embed', np.zeros(100, np.uint64), np.zeros(1600, np.float32), np.zeros(100, np.uint64),
                              np.ones(100, np.uint32))
    meta = protocol.PushPull([0, 1, 2, 3], 17, tables=(step,)).meta()
    arrays = [np.zeros(10, np.float32)] + step.arrays()   # array sizes of 128..65535: 2 more bytes each
    request = Message('PUSHPULL', sender=9, rid=1234, meta=meta, arrays=arrays)
    reply = Message('PUSHPULL', sender=9, rid=1234, reply=True, arrays=arrays[:2])
    for message in (request, reply):        # as a node sends it: its session, a sequence number of 128..255, the job id
        message.session, message.seq, message.job = bytes(16), 200, bytes(16)
    assert len(encode(request, b'k')[0]) == C.STEP_HEADER_BYTES
    assert len(encode(reply, b'k')[0]) == C.REPLY_HEADER_BYTES


@pytest.mark.parametrize("codec", ['none', 'fp16', '2bit'])
def test_codec_header_bytes(codec):
    """What a codec's header entry adds to a step's header frame, measured through the codec itself."""
    from sparkps.comm.codec import create_codec
    step = protocol.TableStep('embed', np.zeros(100, np.uint64), np.zeros(1600, np.float32), np.zeros(100, np.uint64),
                              np.ones(100, np.uint32))
    meta = protocol.PushPull([0, 1, 2, 3], 17, tables=(step,)).meta()
    plain = Message('PUSHPULL', sender=9, rid=1234, meta=dict(meta), arrays=[np.zeros(1000, np.float32)])
    _, header = create_codec(codec).encode(np.ones(1000, np.float32), slot=(0, (0,)))
    coded = Message('PUSHPULL', sender=9, rid=1234, meta={**meta, **({"codec": header} if header else {})},
                    arrays=[np.zeros(1000, np.float32)])
    for message in (plain, coded):
        message.session, message.seq, message.job = bytes(16), 200, bytes(16)
    assert len(encode(coded, b'k')[0]) - len(encode(plain, b'k')[0]) == C.CODEC_HEADER_BYTES[codec]


@pytest.mark.parametrize("codec", ['fp16', '2bit'])
def test_codec_bits(codec):
    words, _ = create_codec(codec).encode(np.ones(1600, np.float32), slot=0)
    assert sum(w.nbytes for w in words) * 8 == 1600 * C.CODEC_BITS[codec]


def test_checkpoint_columns_are_the_exported_ones():
    table = SparseTable('t', dim=4, optimizer={'name': 'adagrad', 'params': {}})
    table.pull(np.arange(10, dtype=np.uint64))
    arrays = table.export_rows()
    per_row = sum(arrays[k].nbytes for k in ('ids', 'updates', 'seen', 'last_seen')) / 10
    assert per_row == C.CHECKPOINT_COLUMN_BYTES
    assert sum(arrays[k].nbytes for k in ('values', 'state0')) / 10 == 2 * 4 * C.FLOAT_BYTES


def test_heartbeat_interval_is_the_default():
    assert Timeouts().heartbeat_interval == C.HEARTBEAT_INTERVAL_S


def test_progress_interval_is_the_default():
    import inspect

    from sparkps.worker.dist_kvstore import DistKVStore
    assert inspect.signature(DistKVStore).parameters['progress_interval'].default == C.PROGRESS_INTERVAL_S


def test_a_first_tables_resident_memory_is_its_arrays_and_the_fixed_first_table_bytes():
    """A fresh process builds a 100,000-row sgd table (where the fixed part is a fifth of the arrays) with freed
    large arrays returned at once; its RSS growth is the plan's ``first_table_rss`` within bench_scale's goal."""
    import json
    import subprocess
    import sys

    from benchmarks import report
    from benchmarks.bench_scale import GOAL
    code = ("import json; from benchmarks.bench_scale import measure_memory; "
            "print(json.dumps(measure_memory(100000, 'sgd')))")
    out = subprocess.run([sys.executable, '-c', code], env=dict(report.child_env(), MALLOC_MMAP_THRESHOLD_='131072'),
                         cwd=report.ROOT, check=True, capture_output=True, text=True, timeout=300).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result['off'] == 0.0                       # the arrays are table_bytes exactly
    assert abs(result['off_rss']) <= GOAL, result

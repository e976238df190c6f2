"""Typed Arrow columns to a task's arrays (sparkps.spark.common.arrow_inputs, typed_inputs), the task's result in
chunks (result_chunks) and the scheduler placement decision: no Spark needed."""
import numpy as np
import pyarrow as pa
import pytest

from sparkps.errors import ClusterError, ConfigError, DataError
from sparkps.spark.common.arrow_inputs import FeatureReader, TypedReader, list_values, read_blocks
from sparkps.spark.common.batches import iter_batches
from sparkps.spark.common.result_chunks import join_results, result_batches
from sparkps.spark.common.typed_inputs import TypedInputs
from sparkps.spark.driver.placement import check_placement, choose_placement, rdd_refused

EDGE_IDS = [2**53 + 1, -1, -(2**63), 2**63 - 1, 0, 2**62 + 12345]     # beyond float64's integers, negative


def test_64_bit_ids_cross_exactly_as_integers():
    cells = pa.array([EDGE_IDS[:3], EDGE_IDS[3:]], pa.list_(pa.int64()))
    ids = list_values(cells, 3, "ids", "ids")
    assert ids.dtype == np.int64 and ids.reshape(-1).tolist() == EDGE_IDS
    unsigned = pa.array([[2**64 - 1]], pa.list_(pa.uint64()))       # uint64 kept bit for bit
    assert list_values(unsigned, 1, "ids", "ids").view(np.uint64)[0, 0] == 2**64 - 1
    typed = TypedInputs([("ids", 3, "ids"), ("dense", 1, "float")])
    reader = TypedReader(typed, "click")
    batch = pa.RecordBatch.from_arrays([cells, pa.array([[0.5], [1.5]], pa.list_(pa.float32())),
                                        pa.array([0.0, 1.0], pa.float32())], names=["ids", "dense", "click"])
    X, y = reader.read(batch)
    inputs = typed.split(X)
    assert inputs["ids"].view(np.int64).reshape(-1).tolist() == EDGE_IDS
    assert inputs["dense"].tolist() == [[0.5], [1.5]] and y.tolist() == [0.0, 1.0]


def test_a_bad_id_is_one_error_naming_column_and_row():
    with pytest.raises(DataError, match=r"^column 'ids', row 7: an id is null$"):
        list_values(pa.array([[1, 2], [3, None]], pa.list_(pa.int64())), 2, "ids", "ids", start=6)
    with pytest.raises(DataError, match=r"^column 'ids', row 1: the cell is null$"):
        list_values(pa.array([[1, 2], None], pa.list_(pa.int64())), 2, "ids", "ids")
    with pytest.raises(DataError, match=r"^column 'ids', row 1: id 2.5 is not an integer"):
        list_values(pa.array([[1.0, 2.0], [2.5, 3.0]], pa.list_(pa.float64())), 2, "ids", "ids")
    with pytest.raises(DataError, match=r"^column 'ids', row 0: 1 values, expected 2$"):
        list_values(pa.array([[1], [3, 4]], pa.list_(pa.int64())), 2, "ids", "ids")
    with pytest.raises(DataError, match=r"column 'ids' must hold integer ids \(bigint\), got string"):
        list_values(pa.array([["a"]], pa.list_(pa.string())), 1, "ids", "ids")


def test_dense_batches_read_as_float32_blocks_and_typed_rows_batch_through_the_local_copy_code():
    batches = [pa.RecordBatch.from_arrays([pa.array([[1.0, 2.0]] * n, pa.list_(pa.float32())),
                                           pa.array([1.0] * n, pa.float32())], names=["f", "l"]) for n in (3, 0, 2)]
    blocks = list(read_blocks(FeatureReader(2, names=("f", "l", None)), batches))
    assert [b[0].shape for b in blocks] == [(3, 2), (2, 2)] and blocks[0][0].dtype == np.float32
    typed = TypedInputs([("ids", 1, "ids")])
    rows = typed.rows({"ids": np.array([[-5], [2**60]], np.int64)}).reshape(-1, 1)
    out = list(iter_batches(iter([(rows, np.zeros(2, np.float32))]), 4, 1, dtype=typed.dtype))
    assert typed.split(out[0][0])["ids"].view(np.int64).reshape(-1).tolist() == [-5, 2**60]


def test_a_result_larger_than_one_chunk_comes_back_whole():
    result = {"rank": 1, "params": np.arange(5000, dtype=np.float32).tobytes(), "history": [{"epoch": 0}]}
    pieces = list(result_batches(1, result, chunk_bytes=4096)) + list(result_batches(0, {"rank": 0}, 4096))
    assert len(pieces) > 5 and all(len(b.column(3)[0].as_py()) <= 4096 for b in pieces)
    rows = [tuple(b.column(j)[0].as_py() for j in range(4)) for b in pieces][::-1]      # any order
    back = join_results(rows)
    assert [r["rank"] for r in back] == [0, 1] and back[1]["params"] == result["params"]
    with pytest.raises(ClusterError, match=r"worker 1 returned 1 of the \d+ pieces of its result"):
        join_results(rows[-3:-2])


def test_the_scheduler_runs_where_every_task_can_reach_it():
    assert choose_placement("auto", connect=False, master="spark://h:7077") == "driver"
    assert choose_placement("auto", connect=True, master="local[2]", client_host="localhost") == "driver"
    assert choose_placement("auto", connect=True, master="local[2]", client_host="10.0.0.5") == "stage"
    assert choose_placement("auto", connect=True, master="spark://h:7077", client_host="localhost") == "stage"
    assert choose_placement("stage", connect=False, master="local[2]") == "stage"
    with pytest.raises(ConfigError, match=r"scheduler must be one of auto, driver, stage, got 'rank0'"):
        check_placement("rank0")


def test_an_rdd_on_a_connect_session_is_refused_saying_how_to_pass_a_dataframe():
    message = str(rdd_refused())
    assert message.startswith("a Spark Connect session has no RDDs") and "pass a DataFrame" in message
    assert "createDataFrame" in message


def test_a_scheduler_in_the_stage_that_a_worker_cannot_reach_fails_at_once_naming_its_address():
    import socket

    from sparkps.spark.task.barrier_task import WorkerFailed, check_reachable
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()                        # nothing listens there now
    with pytest.raises(WorkerFailed, match=r"^sparkps worker 1 failed: cannot reach the scheduler at "
                                           r"tcp://127\.0\.0\.1:%d \(in rank 0's task\)" % port):
        check_reachable("tcp://127.0.0.1:%d" % port, "worker 1", timeout=2)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(1)
    try:
        check_reachable("tcp://127.0.0.1:%d" % listening.getsockname()[1], "worker 1", timeout=2)
    finally:
        listening.close()

"""The parts of the join path that run in a Python worker, without Spark: each row's distinct ids taken out of a
batch by one sort (the same ids as a loop with ``np.unique`` per row), the network fed a batch's gathered rows
straight (``GatheredRows``: the probabilities of the inline model to 1e-6, for ids training saw and ids it never
saw, with no table store built and the network bound once), and a shard looked up by id (``ShardRows``: the rows of
the ids it holds; a shard holding another shard's ids is one DataError naming the table and the file).

Model: ``packed_fm`` (tests/packed_fm.py: an FM with two sparse tables, trained one epoch in one process)."""
import numpy as np
import pytest

from packed_fm import PACKED, TABLES, packed_fm
from sparkps.errors import DataError
from sparkps.model_files import params_to_bytes
from sparkps.rows.config import TableConfig
from sparkps.rows.gathered import GatheredRows
from sparkps.rows.shards import shard_files, write_shard
from sparkps.rows.values import RowSparse
from sparkps.spark.model.join_scoring import batch_ids, row_ids
from sparkps.spark.model.predictor import Predictor
from sparkps.spark.model.shard_lookup import ShardRows


@pytest.fixture(scope="module")
def trained():
    return packed_fm()


def test_each_rows_distinct_ids_are_those_of_a_loop_per_row():
    rng = np.random.default_rng(3)
    spec = TableConfig("t", dim=4, fields=("a", "tags"), padding_id=0)
    inputs = {"a": rng.integers(0, 5, 300).astype(np.uint64),
              "tags": rng.integers(0, 6, (300, 4)).astype(np.uint64)}
    inputs["tags"][7] = 0                                    # a row of padding only
    inputs["a"][9] = np.uint64(2**64 - 3)                    # an id above int64's range, by its bits
    offsets, ids = row_ids(inputs, spec)
    assert offsets.shape == (301,) and offsets[0] == 0 and ids.dtype == np.int64
    for row in range(300):
        block = np.concatenate([inputs["a"][row:row + 1], inputs["tags"][row]]).view(np.int64)
        expected = np.unique(block)
        expected = expected[expected != 0]
        np.testing.assert_array_equal(ids[offsets[row]:offsets[row + 1]], expected)
    np.testing.assert_array_equal(batch_ids(inputs, spec), np.unique(ids))
    empty = row_ids({"a": inputs["a"][:0], "tags": inputs["tags"][:0]}, spec)
    assert empty[0].tolist() == [0] and empty[1].size == 0


def test_gathered_rows_score_as_the_inline_model_with_no_table_store(trained):
    spark_model, X = trained
    unseen = PACKED.split(X[:30].copy())
    for name in unseen:
        if unseen[name].dtype == np.uint64:
            unseen[name] = unseen[name] + np.uint64(1 << 40)       # ids no table holds: their initial rows
    rows = np.concatenate([X[:50], PACKED.pack(unseen)])
    payload = spark_model.payload()
    inline = Predictor(payload["symbol"], payload["params"], spark_model.input_shape, 16, "ctr_label",
                       typed=spark_model.input_layout)
    expected = inline.predict(rows)
    dense = {k: v for k, v in spark_model.arg_params.items() if k not in TABLES}
    joined = Predictor(payload["symbol"], params_to_bytes(dense, spark_model.aux_params), spark_model.input_shape, 16,
                       "ctr_label", typed=spark_model.input_layout)
    from sparkps.symbol.ops.embedding import sparse_tables
    specs = sparse_tables(spark_model.symbol)
    for start in (0, 40):                        # two batches: the network is bound once, no store is ever built
        batch = rows[start:start + 40]
        inputs = PACKED.split(batch)
        gathered = {}
        for name in TABLES:
            table = spark_model.arg_params[name].merged()
            wanted = batch_ids(inputs, specs[name])
            keep = np.isin(table.ids.astype(np.int64), wanted)        # the rows a join finds for this batch only
            gathered[name] = RowSparse(table.ids[keep], table.rows[keep], table.shape)
        np.testing.assert_allclose(joined.predict_with_rows(batch, gathered), expected[start:start + 40], atol=1e-6)
    assert joined.table_stores_built == 0
    assert joined.model.table_stores_built == 0 and joined.model._pred_store is None


def test_gathered_rows_read_initial_rows_as_a_frozen_store_does():
    from sparkps import kvstore
    config = TableConfig("user", dim=3, init={"kind": "uniform", "scale": 0.5})
    held = RowSparse(np.array([4, 9], np.int64), np.arange(6, dtype=np.float32).reshape(2, 3), (None, 3))
    store = kvstore.create("local")
    store.init_table("user", held, config.options)
    store.freeze_tables()
    wanted = np.array([-5, 4, 7, 9, 2**40], np.int64)
    expected = np.empty((5, 3), np.float32)
    store.row_sparse_pull("user", out=expected, row_ids=wanted)
    out = np.empty((5, 3), np.float32)
    GatheredRows({"user": held}, {"user": config}).row_sparse_pull("user", out=out, row_ids=wanted)
    np.testing.assert_array_equal(out, expected)


def test_a_shard_is_looked_up_by_id_and_one_split_otherwise_is_named(tmp_path):
    from sparkps.rows.ids import shard_of
    ids = np.arange(1, 200, dtype=np.uint64) * np.uint64(7919)
    vectors = np.random.default_rng(0).normal(size=(ids.size, 4)).astype(np.float32)
    mine = shard_of(ids, 2) == 1
    write_shard(str(tmp_path), "t", 1, ids[mine], vectors[mine], np.zeros(mine.sum()), np.zeros(mine.sum()))
    write_shard(str(tmp_path), "t", 0, ids, vectors, np.zeros(ids.size), np.zeros(ids.size))    # every id
    manifest = {"tables": {"t": {"shards": [{"path": "t/server-00000.parquet"}, {"path": "t/server-00001.parquet"}]}}}
    first, second = shard_files(str(tmp_path), manifest, "t")
    rows = ShardRows.read(second, "t", 4, 1, 2)
    asked = np.concatenate([ids[mine][::-1], ids[~mine][:3]]).view(np.int64)
    held, found = rows.lookup(asked)
    assert held.tolist() == [True] * int(mine.sum()) + [False] * 3
    np.testing.assert_array_equal(found, vectors[mine][::-1])
    with pytest.raises(DataError, match=r"table 't'.*server-00000.parquet.*other shards"):
        ShardRows.read(first, "t", 4, 0, 2)

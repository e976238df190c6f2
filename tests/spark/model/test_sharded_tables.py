"""A model whose tables travelled inline, saved with its tables as shard files (``SparkModel.with_sharded_tables``,
format 4): the folder's manifest and shards hold every row once, split by server, with the training counts; the
model of that folder keeps only the dense parameters in memory, saves and loads as format 4; a missing or damaged
shard is one DataError naming the shard and the table, at load. No Spark session.

Model: ``packed_fm`` (tests/packed_fm.py: an FM with two sparse tables, trained one epoch in one process)."""
import json
import os

import numpy as np
import pytest

from packed_fm import TABLES, packed_fm
from sparkps.errors import DataError
from sparkps.rows.shards import iter_shard_rows, read_manifest
from sparkps.rows.values import RowSparse
from sparkps.spark.model.spark_model import SparkModel


@pytest.fixture(scope="module")
def trained():
    return packed_fm()


def test_the_shards_hold_every_row_once_and_the_model_keeps_the_dense_part(trained, tmp_path):
    spark_model, _ = trained
    spark_model.table_counts = {name: (spark_model.arg_params[name].ids[:3].astype(np.int64),
                                       np.array([5, 6, 7], np.int64)) for name in TABLES}
    sharded = spark_model.with_sharded_tables(str(tmp_path / "m"), num_shards=2)
    assert not any(isinstance(v, RowSparse) for v in sharded.arg_params.values())
    with open(tmp_path / "m" / "metadata.json", encoding="utf-8") as f:
        meta = json.load(f)
    assert meta["format"] == "sparkps.SparkModel/4" and meta["tables"] == "tables/manifest.json"
    manifest = read_manifest(str(tmp_path / "m" / "tables"))
    for name in TABLES:
        table = spark_model.arg_params[name].merged()
        entry = manifest["tables"][name]
        assert entry["rows"] == table.ids.size and [s["server"] for s in entry["shards"]] == [0, 1]
        assert entry["options"]["name"] == name and entry["dim"] == table.dim
        ids, rows, counts = (np.concatenate(p) for p in zip(*iter_shard_rows(str(tmp_path / "m" / "tables"),
                                                                             name, batch_rows=7)))
        order = np.argsort(ids.view(np.int64))
        np.testing.assert_array_equal(ids.view(np.int64)[order], np.sort(table.ids.astype(np.int64)))
        np.testing.assert_array_equal(rows[order], table.rows[np.argsort(table.ids.astype(np.int64))])
        assert sorted(counts[counts > 0].tolist()) == [5, 6, 7]
    loaded = SparkModel.load(str(tmp_path / "m"))
    assert loaded.table_manifest == sharded.table_manifest
    assert loaded.tables_folder == str(tmp_path / "m" / "tables")
    loaded.save(str(tmp_path / "copy"))
    again = SparkModel.load(str(tmp_path / "copy"))
    assert again.tables_folder == str(tmp_path / "copy" / "tables") and again.table_manifest == loaded.table_manifest


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_missing_or_damaged_shard_is_one_error_naming_it_and_its_table(trained, tmp_path, damage):
    spark_model, _ = trained
    spark_model.with_sharded_tables(str(tmp_path / "m"))
    shard = tmp_path / "m" / "tables" / TABLES[0] / "server-00001.parquet"
    if damage == "missing":
        os.remove(shard)
    else:
        shard.write_bytes(shard.read_bytes()[:-20])
    with pytest.raises(DataError, match=r"(?s)(%s.*server-00001\.parquet|server-00001\.parquet.*%s)"
                       % (TABLES[0], TABLES[0])):
        SparkModel.load(str(tmp_path / "m"))


def test_predict_numpy_reads_the_rows_of_its_ids_from_the_shards(trained, tmp_path):
    """On the driver, without Spark: the packed rows of training and rows of ids never seen score as inline."""
    spark_model, X = trained
    sharded = spark_model.with_sharded_tables(str(tmp_path / "m"))
    rows = np.concatenate([X[:30], X[:5] + 1.0])       # planes shifted: ids no table holds
    np.testing.assert_allclose(sharded.predict_numpy(rows), spark_model.predict_numpy(rows), atol=1e-6)

"""A model's table folder is exactly its manifest (docs/tables.md): the files it lists are the only ones read, by
load, scoring (the join), export, ``sparkps predict`` and a save's copy; what else lies in the folder (a Parquet file
planted beside the shards, the ``.tmp-*`` file a killed write leaves, a stray text file) is never read. A listed
path outside the folder (``..``, absolute, a symbolic link pointing out), a shard without its sha256, a table name
that is not an identifier, or a model whose metadata points its tables outside its folder is one DataError naming
the table or the file. A saved model's ``tables`` folder has the mode of the model's folder, also when it was a
fit's private staging folder.

Model: ``packed_fm`` (tests/packed_fm.py: an FM with two sparse tables, trained one epoch in one process)."""
import json
import os
import shutil
import stat
import tempfile

import numpy as np
import pytest

from packed_fm import TABLES, packed_fm
from sparkps.errors import DataError
from sparkps.rows import shards
from sparkps.spark.model.sharded_tables import write_table_shards
from sparkps.spark.model.spark_model import SparkModel


@pytest.fixture(scope="module")
def trained():
    return packed_fm()


def plant(folder, table):
    """Files no manifest lists beside ``table``'s shards: a shard-like Parquet file and a killed write's leftover,
    both holding the table's ids with rows of 5.0 (scored, they move every prediction), and a stray text file."""
    manifest = shards.read_manifest(folder)
    ids = np.concatenate([p[0] for p in shards.iter_shard_rows(folder, table)])
    dim = manifest["tables"][table]["dim"]
    rows = np.full((ids.size, dim), 5.0, np.float32)
    zeros = np.zeros(ids.size, np.int64)
    with tempfile.TemporaryDirectory() as scratch:
        written = shards.write_shard(scratch, table, 7, ids, rows, zeros, zeros)
        shutil.copyfile(os.path.join(scratch, written["path"]), os.path.join(folder, table, "server-00007.parquet"))
        shutil.copyfile(os.path.join(scratch, written["path"]),
                        os.path.join(folder, table, "server-00000.parquet.tmp-4242"))
    with open(os.path.join(folder, table, "notes.txt"), "w", encoding="utf-8") as f:
        f.write("not a shard\n")


def edit_manifest(folder, change):
    path = os.path.join(folder, shards.MANIFEST)
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    change(manifest)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f)


def test_files_the_manifest_does_not_list_are_never_read(trained, tmp_path):
    spark_model, X = trained
    sharded = spark_model.with_sharded_tables(str(tmp_path / "m"))
    expected = sharded.predict_numpy(X[:50])
    folder = str(tmp_path / "m" / "tables")
    for table in TABLES:
        plant(folder, table)
    loaded = SparkModel.load(str(tmp_path / "m"))
    np.testing.assert_allclose(loaded.predict_numpy(X[:50]), expected, atol=1e-6)
    rows = {t: sum(p[0].size for p in shards.iter_shard_rows(folder, t)) for t in TABLES}
    assert rows == {t: sharded.table_manifest[t]["rows"] for t in TABLES}
    loaded.save(str(tmp_path / "copy"))        # a save copies the manifest's files only
    copied = sorted(os.listdir(tmp_path / "copy" / "tables" / TABLES[0]))
    assert copied == ["server-00000.parquet", "server-00001.parquet"]


@pytest.mark.parametrize("path", ["../../elsewhere/server-00000.parquet", "/tmp/server-00000.parquet",
                                  "{table}/../../server-00000.parquet", ""])
def test_a_listed_path_outside_the_folder_is_refused_at_load(trained, tmp_path, path):
    spark_model, _ = trained
    spark_model.with_sharded_tables(str(tmp_path / "m"))
    folder = str(tmp_path / "m" / "tables")

    def point_out(manifest):
        manifest["tables"][TABLES[0]]["shards"][0]["path"] = path.format(table=TABLES[0])
    edit_manifest(folder, point_out)
    with pytest.raises(DataError, match=r"table '%s': the manifest of .*(not a path inside|not a file name)"
                       % TABLES[0]):
        SparkModel.load(str(tmp_path / "m"))


def test_a_symbolic_link_out_of_the_folder_is_refused(trained, tmp_path):
    spark_model, _ = trained
    spark_model.with_sharded_tables(str(tmp_path / "m"))
    folder = tmp_path / "m" / "tables"
    intact = tmp_path / "intact"          # an intact copy elsewhere, the tampered file in the folder
    shutil.copytree(folder / TABLES[0], intact)
    os.symlink(intact, folder / "outside")

    def through_link(manifest):
        manifest["tables"][TABLES[0]]["shards"][0]["path"] = "outside/server-00000.parquet"
    edit_manifest(str(folder), through_link)
    with pytest.raises(DataError, match=r"table '%s': .*'outside/server-00000.parquet'.*symbolic link" % TABLES[0]):
        SparkModel.load(str(tmp_path / "m"))


@pytest.mark.parametrize("digest", ["", None, "ab12"])
def test_a_shard_without_its_sha256_is_refused(trained, tmp_path, digest):
    spark_model, _ = trained
    spark_model.with_sharded_tables(str(tmp_path / "m"))

    def drop(manifest):
        shard = manifest["tables"][TABLES[1]]["shards"][1]
        if digest is None:
            del shard["sha256"]
        else:
            shard["sha256"] = digest
    edit_manifest(str(tmp_path / "m" / "tables"), drop)
    with pytest.raises(DataError, match=r"table '%s': .*server-00001.parquet' no sha256" % TABLES[1]):
        SparkModel.load(str(tmp_path / "m"))


def test_a_table_name_that_is_not_an_identifier_is_refused(trained, tmp_path):
    spark_model, _ = trained
    spark_model.with_sharded_tables(str(tmp_path / "m"))

    def rename(manifest):
        manifest["tables"]["../escaped"] = manifest["tables"].pop(TABLES[0])
    edit_manifest(str(tmp_path / "m" / "tables"), rename)
    with pytest.raises(DataError, match=r"table '\.\./escaped' is not a table name"):
        SparkModel.load(str(tmp_path / "m"))
    with pytest.raises(DataError, match=r"'\.\./x' is not a table name"):
        shards.write_shard(str(tmp_path / "w"), "../x", 0, np.arange(2, dtype=np.uint64),
                           np.zeros((2, 1), np.float32), np.zeros(2), np.zeros(2, np.int64))


def test_metadata_pointing_the_tables_out_of_the_model_folder_is_refused(trained, tmp_path):
    spark_model, _ = trained
    spark_model.with_sharded_tables(str(tmp_path / "m"))
    shutil.copytree(tmp_path / "m", tmp_path / "other")
    with open(tmp_path / "m" / "metadata.json", encoding="utf-8") as f:
        meta = json.load(f)
    meta["tables"] = "../other/tables/manifest.json"
    with open(tmp_path / "m" / "metadata.json", "w", encoding="utf-8") as f:
        json.dump(meta, f)
    with pytest.raises(DataError, match=r"metadata.json: \"tables\" names '\.\./other/tables/manifest.json', which "
                                        r"is not a path inside the model's folder"):
        SparkModel.load(str(tmp_path / "m"))


def test_a_saved_models_tables_have_the_mode_of_the_model(trained, tmp_path):
    """The servers write into a private staging folder (``tempfile.mkdtemp``: 0700); moved into a saved model, it
    is as readable as the rest of the model."""
    spark_model, _ = trained
    staging = tempfile.mkdtemp(prefix="sparkps-tables-")
    assert stat.S_IMODE(os.stat(staging).st_mode) == 0o700
    manifest = write_table_shards(staging, spark_model.symbol, spark_model.arg_params)
    dense = {k: v for k, v in spark_model.arg_params.items() if k not in manifest}
    model = SparkModel(spark_model.symbol_json, dense, spark_model.aux_params, spark_model.input_shape,
                       spark_model.label_name, input_layout=spark_model.input_layout)
    model.own_staged_tables(staging, manifest)
    model.save(str(tmp_path / "m"))
    mode = stat.S_IMODE(os.stat(tmp_path / "m").st_mode)
    assert not os.path.exists(staging)
    for folder in (tmp_path / "m" / "tables", tmp_path / "m" / "tables" / TABLES[0]):
        assert stat.S_IMODE(os.stat(folder).st_mode) == mode, oct(os.stat(folder).st_mode)


@pytest.mark.spark
def test_transform_joins_the_listed_shards_only(spark, trained, tmp_path):
    """Scoring by join: a Parquet file planted beside the shards, a killed write's leftover and a stray text file
    change nothing (before: the join read the whole folder, the planted rows moved the probabilities, and the text
    file failed the job with a raw Py4JJavaError)."""
    from pyspark.ml.linalg import Vectors
    spark_model, X = trained
    sharded = spark_model.with_sharded_tables(str(tmp_path / "m"))
    frame = spark.createDataFrame([(i, Vectors.dense(row.tolist())) for i, row in enumerate(X[:60])],
                                  ["i", "features"]).repartition(2)

    def probabilities(model):
        rows = model.transform(frame).select("i", "probability").collect()
        return np.array([r.probability.toArray() for r in sorted(rows, key=lambda r: r.i)])
    expected = probabilities(sharded)
    for table in TABLES:
        plant(str(tmp_path / "m" / "tables"), table)
    np.testing.assert_allclose(probabilities(SparkModel.load(str(tmp_path / "m"))), expected, atol=1e-6)

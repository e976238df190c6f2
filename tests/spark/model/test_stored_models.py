"""Models on the store Spark is configured for: Hadoop's ``viewfs://`` mounted onto a local folder (a URI Python's
``open()`` cannot read), set in a SparkSession's own configuration. CTR models (their tables inline, or the
servers' shard files) and a SparkModel by itself are saved, loaded and scored through ``viewfs://`` only, on
``local[2]`` and on ``local-cluster`` executors, by a program of its own (stored_models_run.py) run in an empty
working directory, which stays empty. Plus the files layer (sparkps.spark.model.storage) on the suite's session."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from spark_env import ROOT, spark_env
from sparkps.errors import ConfigError, DataError

# each master's run is a program of its own (a JVM, two fits): minutes on a loaded 2-core machine
pytestmark = [pytest.mark.spark, pytest.mark.timeout(1500)]

RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stored_models_run.py")


@pytest.fixture(scope="module", params=["local[2]", "local-cluster[2,1,1024]"])
def stored(request, tmp_path_factory):
    """(mount folder, what stored_models_run.py saw) for one master."""
    root = tmp_path_factory.mktemp("stored")
    mount, cwd = root / "mount", root / "cwd"
    mount.mkdir()
    cwd.mkdir()
    env = dict(spark_env(), PYTHONPATH=ROOT, PYSPARK_SUBMIT_ARGS="--conf spark.ui.enabled=false "
               "--conf spark.sql.shuffle.partitions=2 --conf spark.ui.showConsoleProgress=false pyspark-shell")
    done = subprocess.run([sys.executable, RUN, str(mount), request.param], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=1400)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, "stored_models_run.py printed no result: %s" % done.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert "failed" not in result, result.get("failed")
    return str(mount), result


def test_spark_writes_parquet_through_the_mount(stored):
    assert stored[1]["spark_check"]


def test_the_viewfs_example_of_docs_spark_md_saves_the_model_into_the_mounted_folder(stored):
    assert stored[1]["docs_check"]       # stored_models_run.py runs the python block of docs/spark.md
    assert {"weights/metadata.json", "weights/tables/manifest.json"} <= set(stored[1]["docs_files"])


def test_a_model_with_shard_files_saves_loads_and_scores_through_viewfs(stored):
    mount, seen = stored
    files = seen["sharded_files"]
    assert any(name.startswith("weights/model-") and name.endswith(".params") for name in files)
    for name in ("weights/metadata.json", "weights/model-symbol.json", "weights/tables/manifest.json",
                 "weights/tables/embedding_weight/server-00000.parquet",
                 "weights/tables/embedding_weight/server-00001.parquet"):
        assert name in files
    assert any(name.startswith("metadata/part-") for name in files)         # pyspark.ml's metadata, beside them
    manifest = json.load(open(os.path.join(mount, "ctr-sharded", "weights", "tables", "manifest.json")))
    listed = {shard["path"] for entry in manifest["tables"].values() for shard in entry["shards"]}
    assert {n[len("weights/tables/"):] for n in files if n.endswith(".parquet")} == listed
    assert seen["sharded_tables_folder"] == "viewfs://cluster/models/ctr-sharded/weights/tables"
    np.testing.assert_allclose(seen["sharded_after"], seen["sharded_before"], atol=1e-6)
    np.testing.assert_allclose(seen["sharded_copy_after"], seen["sharded_before"], atol=1e-6)


def test_a_stored_model_exports_its_tables_to_the_store(stored):
    import pyarrow.parquet as pq
    mount, seen = stored
    manifest = seen["export_manifest"]
    assert {"manifest.json", "featurization.json"} | {t["file"] for t in manifest["tables"].values()} \
        == set(seen["export_files"])
    assert json.load(open(os.path.join(mount, "export", "manifest.json"))) == manifest
    for entry in manifest["tables"].values():
        assert entry["rows"] > 0 and pq.read_metadata(os.path.join(mount, "export", entry["file"])).num_rows \
            == entry["rows"]


def test_a_checkpoint_on_the_store_loads_by_its_prefix_and_epoch(stored):
    names, saved = stored[1]["checkpoint_params"]
    assert names == saved and names


def test_saving_over_a_stored_model_needs_overwrite(stored):
    assert seen_error(stored, "sharded_again").startswith("ConfigError: viewfs://cluster/models/ctr-sharded already "
                                                          "exists: save with write().overwrite()")


def test_a_model_with_inline_tables_saves_loads_and_scores_through_viewfs(stored):
    files = stored[1]["inline_files"]
    assert {"weights/metadata.json", "weights/model-0001.params", "weights/table-counts.npz"} <= set(files)
    np.testing.assert_allclose(stored[1]["inline_after"], stored[1]["inline_before"], atol=1e-6)


def test_a_spark_model_saves_and_loads_through_viewfs(stored):
    seen = stored[1]
    assert {"metadata.json", "model-symbol.json", "tables/manifest.json"} <= set(seen["spark_model_files"])
    assert seen["spark_model_saved_path"] == "viewfs://cluster/models/spark-model"
    assert seen["spark_model_epoch"][0] == seen["spark_model_epoch"][1]


def test_a_store_no_file_system_serves_is_one_error_before_anything_is_written(stored):
    error = seen_error(stored, "unknown_scheme")
    assert error.startswith("ConfigError: nosuchfs://bucket/models/m: no Hadoop file system of this Spark session "
                            "reaches it")
    assert "spark.hadoop.fs.nosuchfs.impl" in error
    assert not [n for n in os.listdir(stored[0]) if "nosuchfs" in n]


def test_a_missing_stored_model_is_named(stored):
    assert "viewfs://cluster/models/no-such-model" in seen_error(stored, "missing_model")
    assert seen_error(stored, "missing_weights") == ("ConfigError: viewfs://cluster/models/spark-check is not a "
                                                     "saved SparkModel: metadata.json is missing")


def test_nothing_is_written_under_the_working_directory(stored):
    assert stored[1]["cwd_files"] == []


def seen_error(stored, key):
    error = stored[1][key]
    assert error is not None, "%s raised nothing" % key
    return error


def test_hadoop_files_read_write_list_copy_and_delete_by_uri(spark, viewfs, tmp_path_factory):
    from sparkps.spark.model.storage import HadoopFiles, files_for
    files = files_for("viewfs://unit/data/a", spark)
    assert isinstance(files, HadoopFiles) and not files.python_reads
    data = bytes(range(256)) * 40000                      # above one chunk: read back in pieces
    files.write_bytes("viewfs://unit/data/a/blob", data)
    assert open(os.path.join(viewfs, "a", "blob"), "rb").read() == data
    assert files.read_bytes("viewfs://unit/data/a/blob") == data
    assert files.size("viewfs://unit/data/a/blob") == len(data)
    with files.open_input("viewfs://unit/data/a/blob") as f:
        f.seek(len(data) - 10)
        assert f.read() == data[-10:]
        f.seek(5)
        assert f.read(3) == data[5:8]
    local = tmp_path_factory.mktemp("local")
    (local / "x.txt").write_text("x")
    files.put_file(str(local / "x.txt"), "viewfs://unit/data/a/sub/x.txt")
    files.copy_file("viewfs://unit/data/a/sub/x.txt", "viewfs://unit/data/b/y.txt")
    files.get_file("viewfs://unit/data/b/y.txt", str(local / "y.txt"))
    assert (local / "y.txt").read_text() == "x"
    assert files.listdir("viewfs://unit/data/a") == ["blob", "sub"] and files.isdir("viewfs://unit/data/a/sub")
    assert files.qualified("viewfs://unit/data/a") == "viewfs://unit/data/a"
    files.delete("viewfs://unit/data/a")
    assert not files.exists("viewfs://unit/data/a") and not os.path.exists(os.path.join(viewfs, "a"))
    with pytest.raises(OSError, match="cannot open viewfs://unit/data/none"):
        files.open_input("viewfs://unit/data/none")


def test_local_paths_and_file_uris_use_python_file_io(spark, tmp_path):
    from sparkps.spark.model.storage import LocalFiles, files_for, strip_file_scheme
    for path in (str(tmp_path), "file://" + str(tmp_path), "file:" + str(tmp_path), "relative/folder"):
        assert isinstance(files_for(path, spark), LocalFiles)
    assert strip_file_scheme("file:///a/b") == "/a/b" == strip_file_scheme("file:/a/b")
    assert strip_file_scheme("file://host/a/b") == "/a/b" and strip_file_scheme("/a/b") == "/a/b"


def test_a_uri_without_a_spark_session_is_one_error(monkeypatch):
    from sparkps.spark.model import storage
    monkeypatch.setattr(storage, "_active_session", lambda: None)
    with pytest.raises(ConfigError, match=r"hdfs://nn/models/m: a hdfs:// path is read and written through Spark's "
                                          r"Hadoop file systems, and no SparkSession is active"):
        storage.files_for("hdfs://nn/models/m")
    assert isinstance(storage.files_for("/tmp/m"), storage.LocalFiles)


def test_a_damaged_shard_on_the_store_is_named(spark, viewfs, tmp_path_factory):
    from sparkps.rows.shards import check_shards, read_manifest, write_manifest, write_shard
    from sparkps.spark.model.storage import files_for
    folder = os.path.join(viewfs, "tables")
    entry = write_shard(folder, "t", 0, np.arange(5, dtype=np.uint64), np.ones((5, 2), np.float32),
                        np.ones(5, np.int64), np.zeros(5, np.int64))
    write_manifest(folder, {"t": {"dim": 2, "dtype": "float32", "rows": 5, "options": {}, "shards": [entry]}})
    files = files_for("viewfs://unit/data/tables", spark)
    manifest = read_manifest("viewfs://unit/data/tables", files)
    check_shards("viewfs://unit/data/tables", manifest, files)
    with open(os.path.join(folder, entry["path"]), "r+b") as f:
        f.seek(4)
        f.write(b"\0\0")
    with pytest.raises(DataError, match=r"table 't': shard viewfs://unit/data/tables/t/server-00000.parquet is "
                                        r"damaged"):
        check_shards("viewfs://unit/data/tables", manifest, files)


def test_a_uri_model_dir_stages_the_tables_here_on_one_machine_and_is_one_error_elsewhere(spark, monkeypatch,
                                                                                          tmp_path):
    import tempfile

    from sparkps.spark.driver.table_staging import remove, staging_folder
    from sparkps.spark.model.spark_model import MODEL_DIR_CONF
    monkeypatch.chdir(tmp_path)
    spark.conf.set(MODEL_DIR_CONF, "viewfs://cluster/models")
    try:
        folder = staging_folder(spark, "local-cluster[2,1,1024]")
        assert os.path.dirname(folder) == tempfile.gettempdir() and os.listdir(folder) == []
        remove(folder)
        with pytest.raises(ConfigError, match=r"spark.sparkps.modelDir=viewfs://cluster/models is a store's URI, "
                                              r"which they cannot write: set it to a folder every node mounts"):
            staging_folder(spark, "spark://master:7077")
    finally:
        spark.conf.unset(MODEL_DIR_CONF)
    assert os.listdir(tmp_path) == []

"""The jobs' paths as Spark URIs: jobs/train_ctr.py run once with ``--train``, ``--test``, ``--output`` and
``--checkpoint-dir`` all on Hadoop's ``viewfs://`` mounted onto a local folder (a URI Python's ``open()`` cannot
read), in an empty working directory that stays empty; plus the pieces the job uses (an input read on the driver,
an output folder's checks, a checkpoint folder mirrored to the store) on the suite's session."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from spark_env import ROOT, spark_env
from sparkps.ctr.synthetic import planted_ctr, write_criteo_tsv
from sparkps.errors import ConfigError, DataError

# the job is a program of its own (its JVM, a fit): minutes on a loaded 2-core machine
pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]
JOB = os.path.join(ROOT, "jobs", "train_ctr.py")
STORE = "viewfs://cluster/store"


@pytest.fixture(scope="module")
def job_run(tmp_path_factory):
    """(mount folder, working directory, the finished process) of one train_ctr run on the store, over a
    non-empty --output replaced with --overwrite."""
    root = tmp_path_factory.mktemp("store-job")
    mount, cwd = root / "mount", root / "cwd"
    (mount / "data").mkdir(parents=True)
    (mount / "out").mkdir()
    (mount / "out" / "old-run.txt").write_text("a previous output")
    cwd.mkdir()
    data = planted_ctr(2400, vocab=20, zipf=1.3, linear_scale=0.5, fm_scale=0.0, deep_scale=0.0, seed=3)
    for name, part in (("train.tsv", slice(0, 1800)), ("test.tsv", slice(1800, None))):
        write_criteo_tsv(type(data)(*[x[part] if hasattr(x, "shape") else x for x in data]), str(mount / "data" / name))
    env = dict(spark_env(), PYTHONPATH=ROOT, PYSPARK_SUBMIT_ARGS="--conf spark.ui.enabled=false "
               "--conf spark.hadoop.fs.viewfs.mounttable.cluster.link./store=file://%s pyspark-shell" % mount)
    done = subprocess.run([sys.executable, JOB, "--train", STORE + "/data/train.tsv", "--test",
                           STORE + "/data/test.tsv", "--format", "criteo", "--model", "lr", "--epochs", "1",
                           "--batch-size", "128", "--validation-fraction", "0", "--master", "local[1]",
                           "--num-workers", "1", "--checkpoint-dir", STORE + "/checkpoints", "--output",
                           STORE + "/out", "--overwrite"],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=1100)
    return mount, cwd, done


def test_a_ctr_job_reads_writes_and_checkpoints_through_the_store(job_run):
    mount, cwd, done = job_run
    assert done.returncode == 0, done.stderr[-3000:]
    assert "test AUC" in done.stdout.strip().splitlines()[-1]
    out = mount / "out"
    assert not (out / "old-run.txt").exists()                     # --overwrite replaced the previous output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model_path"] == STORE + "/out/model" and summary["rows"] == 600
    assert (out / "ctr-curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "model" / "weights" / "metadata.json").is_file()
    assert any(n.startswith("part-") for n in os.listdir(out / "model" / "metadata"))
    checkpoint = mount / "checkpoints" / "epoch-0001"
    assert (checkpoint / "manifest.json").is_file() and len(os.listdir(checkpoint)) > 1
    assert os.listdir(cwd) == []                                  # nothing local named after the scheme


def test_the_jobs_model_on_the_store_loads_and_logs_to_mlflow(job_run, spark, tmp_path):
    mlflow = pytest.importorskip("mlflow")
    from sparkps.spark.ml.classifier import SparkpsCTRModel
    from sparkps.spark.ml.mlflow_flavor import log_model
    conf = spark._jsc.hadoopConfiguration()
    keys = {"fs.viewfs.mounttable.job.link./store": "file://%s" % job_run[0], "fs.viewfs.impl.disable.cache": "true"}
    for key, value in keys.items():
        conf.set(key, value)
    before = mlflow.get_tracking_uri()
    try:
        model = SparkpsCTRModel.load("viewfs://job/store/out/model")
        assert model.spark_model.saved_path == "viewfs://job/store/out/model/weights"
        mlflow.set_tracking_uri("sqlite:///%s" % (tmp_path / "mlflow.db"))
        experiment = mlflow.create_experiment("store", str(tmp_path / "artifacts"))
        with mlflow.start_run(experiment_id=experiment):
            info = log_model(model, "ctr")
        logged = mlflow.artifacts.download_artifacts(info.model_uri, dst_path=str(tmp_path / "logged"))
    finally:
        mlflow.set_tracking_uri(before)
        for key in keys:
            conf.unset(key)
    found = [os.path.relpath(os.path.join(root, n), logged) for root, _, names in os.walk(logged) for n in names]
    assert "MLmodel" in found
    assert [n for n in found if n.endswith("weights/metadata.json")] and \
        [n for n in found if n.endswith("weights/model-0001.params")], found


def test_an_input_read_on_the_driver_is_copied_from_the_store_and_named_by_its_uri(spark, viewfs):
    from sparkps.spark.submit.inputs import local_input
    (viewfs / "rows.ffm").write_text("1 0:a:1\n")
    with local_input(spark, "viewfs://unit/data/rows.ffm") as local:
        assert open(local).read() == "1 0:a:1\n"
        copy = local
    assert not os.path.exists(copy)                                # the temporary copy is gone
    with pytest.raises(DataError, match=r"^viewfs://unit/data/rows.ffm:1: bad$"):
        with local_input(spark, "viewfs://unit/data/rows.ffm") as local:
            raise DataError("%s:1: bad" % local)
    with pytest.raises(DataError, match=r"viewfs://unit/data/none.ffm: no such file or folder"):
        with local_input(spark, "viewfs://unit/data/none.ffm"):
            pass


def test_an_output_on_the_store_is_checked_and_written_through_spark(spark, viewfs):
    from sparkps.spark.submit.output import check_output_folder, prepare_store_output, staged_output, write_output_file
    target = "viewfs://unit/data/out"
    (viewfs / "out").mkdir()
    (viewfs / "out" / "x").write_text("x")
    check_output_folder(target, False)                           # no session yet: checked once one reaches it
    with staged_output(target) as folder:
        assert folder == target                                  # written in place: a store has no rename
    with pytest.raises(ConfigError, match=r"--output viewfs://unit/data/out exists and is not empty: pass "
                                          r"--overwrite"):
        prepare_store_output(spark, target, False)
    prepare_store_output(spark, target, True)
    assert os.listdir(viewfs / "out") == []
    write_output_file(target, "summary.json", '{"a": 1}', spark)
    assert json.loads((viewfs / "out" / "summary.json").read_text()) == {"a": 1}
    (viewfs / "file").write_text("x")
    with pytest.raises(ConfigError, match=r"--output viewfs://unit/data/file is a file, not a folder"):
        prepare_store_output(spark, "viewfs://unit/data/file", True)


def test_a_checkpoint_folder_on_the_store_is_mirrored_here_and_refused_across_machines(spark, viewfs):
    from sparkps.spark.driver.checkpoint_store import CheckpointFolder
    with CheckpointFolder("viewfs://unit/data/ckpt", spark, "local[2]") as folder:
        local = folder.local
        assert not local.startswith("viewfs") and os.listdir(local) == []
        # a restart's entry names the checkpoint as the store will
        assert folder.stored(os.path.join(local, "epoch-0001")) == "viewfs://unit/data/ckpt/epoch-0001"
        for name, complete in (("epoch-0001", True), ("step-00000007", False)):
            os.makedirs(os.path.join(local, name))
            np.save(os.path.join(local, name, "piece.npy"), np.arange(3))
            if complete:
                open(os.path.join(local, name, "manifest.json"), "w").write("{}")
    assert not os.path.exists(local)
    assert sorted(os.listdir(viewfs / "ckpt")) == ["epoch-0001"]           # an unfinished one is not copied
    assert sorted(n for n in os.listdir(viewfs / "ckpt" / "epoch-0001") if not n.endswith(".crc")) == \
        ["manifest.json", "piece.npy"]
    with CheckpointFolder("viewfs://unit/data/ckpt", spark, "local[2]", resume=True) as again:
        assert os.listdir(again.local) == ["epoch-0001"]                  # resume: the store's checkpoints here
    with pytest.raises(ConfigError, match=r"checkpoint_dir viewfs://unit/data/ckpt is a store's URI, and the servers "
                                          r"of a fit on master spark://m:7077 write"):
        CheckpointFolder("viewfs://unit/data/ckpt", spark, "spark://m:7077")
    mounted = CheckpointFolder("/a/b", spark, "spark://m:7077")
    assert mounted.local == "/a/b" and mounted.stored("/a/b/epoch-0001") == "/a/b/epoch-0001"

"""What a job needs from a cluster whose executors run on other machines, refused in one line: train_ctr without
spark.sparkps.modelDir (before Spark starts), an --output on the driver's disk that executors on other hosts would
write into, and too few task slots named by the job's flag."""
import os
import socket
import subprocess
import sys

import pytest

from sparkps.errors import ConfigError
from sparkps.spark.submit.cluster_checks import check_model_dir, output_refusal
from sparkps.spark.submit.failures import failure_line

JOB = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "jobs", "train_ctr.py"))


def test_train_ctr_on_a_cluster_needs_the_model_dir():
    with pytest.raises(ConfigError, match=r"^master spark://h:7077 runs executors on other machines, and "
                                          r"train_ctr's servers write the trained tables where the driver and every "
                                          r"executor read them: pass --conf spark.sparkps.modelDir=DIR"):
        check_model_dir("spark://h:7077", {}, "train_ctr")
    check_model_dir("spark://h:7077", {"spark.sparkps.modelDir": "/shared/models"}, "train_ctr")
    for master in ("local[2]", "local-cluster[2,1,1024]", "sc://h:15002"):
        check_model_dir(master, {}, "train_ctr")


def test_an_output_on_the_drivers_disk_is_refused_when_executors_run_elsewhere(tmp_path):
    out = str(tmp_path / "out")
    refusal = output_refusal(out, "spark://m:7077", "10.0.0.1", ["10.0.0.2", "10.0.0.3", "10.0.0.1"], None,
                             "train_classifier")
    assert refusal == ("train_classifier: --output %s is a folder on this machine (10.0.0.1), but executors on "
                       "10.0.0.2, 10.0.0.3 write into it (the predictions, the model's Spark metadata): give a folder "
                       "every node mounts at the same path, under spark.sparkps.modelDir, or a URI of shared "
                       "storage (hdfs://, s3a://...)" % out)
    # executors on the driver's machine (by name or by any loopback address), a folder under the shared model
    # folder, a URI, and masters whose executors all run here are fine
    assert output_refusal(out, "spark://m:7077", "127.0.0.1", ["127.0.0.1", "localhost"], None, "j") is None
    assert output_refusal(out, "spark://m:7077", "10.0.0.1", ["10.0.0.2"], str(tmp_path), "j") is None
    assert output_refusal("hdfs://nn/out", "spark://m:7077", "10.0.0.1", ["10.0.0.2"], None, "j") is None
    assert output_refusal("file:" + out, "spark://m:7077", "10.0.0.1", ["10.0.0.2"], None, "j") is not None
    assert output_refusal(out, "local-cluster[2,1,1024]", "10.0.0.1", ["10.0.0.2"], None, "j") is None


def test_too_few_slots_names_the_jobs_flag():
    cause = ConfigError("SparkTrainer needs 3 task slots for 3 workers but spark://m:7077 has 2: use num_workers <= "
                        "2 or more executor cores (spark.executor.cores / spark.executor.instances, or a larger "
                        "local[N])")
    line, code = failure_line(cause)
    assert "use --num-workers <= 2 or more executor cores" in line and code == 2


@pytest.mark.spark
def test_train_ctr_refuses_a_cluster_without_the_model_dir_before_spark_starts(tmp_path):
    """spark-submit to a standalone master (none listens: the refusal comes before any SparkContext connects)."""
    from spark_env import spark_env
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "train.tsv").write_text("1\t3\tab\n0\t4\tcd\n")
    submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    run = subprocess.run([submit, "--master", "spark://127.0.0.1:%d" % port, "--conf", "spark.ui.enabled=false",
                          JOB, "--train", str(tmp_path / "train.tsv"), "--test", str(tmp_path / "train.tsv"),
                          "--format", "criteo",
                          "--output", str(tmp_path / "out")],
                         env=spark_env(), capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert run.returncode == 2, run.stderr[-3000:]
    said = (run.stdout + run.stderr).splitlines()       # spark-submit merges the driver's stderr into its stdout
    assert [line for line in said if line.startswith("train_ctr:")] == [
        "train_ctr: master spark://127.0.0.1:%d runs executors on other machines, and train_ctr's servers write the "
        "trained tables where the driver and every executor read them: pass --conf spark.sparkps.modelDir=DIR, a "
        "folder of a file system every node mounts at the same path" % port]
    assert "cannot be reached" not in run.stderr and not os.path.exists(tmp_path / "out")


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def job_help(name):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", name), "--help"], capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, COLUMNS="200"))
    assert out.returncode == 0, out.stderr
    return " ".join(out.stdout.split())


def test_help_and_readme_say_what_a_cluster_needs():
    ctr, classifier = job_help("train_ctr.py"), job_help("train_classifier.py")
    assert "pass --conf spark.sparkps.modelDir=DIR to spark-submit" in ctr
    for text in (ctr, classifier):
        assert "on a cluster too few slots is refused" in text
        assert "on a cluster a folder every node mounts at the same path" in text
    with open(os.path.join(ROOT, "jobs", "README.md"), encoding="utf-8") as f:
        readme = " ".join(f.read().split())
    assert "--conf spark.sparkps.modelDir=/shared/sparkps-models jobs/train_ctr.py" in readme
    assert "the fit refuses in one line naming `--num-workers`" in readme
    assert "train with as many workers as there are slots" in readme        # on a local master only
    assert "a folder on the driver's own disk is refused in one line" in readme


def test_on_a_cluster_the_classifier_job_keeps_its_worker_count(monkeypatch):
    """Too few slots on a cluster is SparkTrainer's one-line refusal, not fewer workers (train_ctr does the same)."""
    import importlib.util

    import sparkps.spark.driver.placement as placement
    spec = importlib.util.spec_from_file_location("train_classifier", os.path.join(ROOT, "jobs",
                                                                                   "train_classifier.py"))
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    monkeypatch.setattr(placement, "cluster_facts", lambda spark: ("spark://m:7077", {"spark.cores.max": "1"}, 1))
    assert job.fit_workers(None, 3, 2) == (3, 2)
    monkeypatch.setattr(placement, "cluster_facts", lambda spark: ("local[2]", {}, 2))
    assert job.fit_workers(None, 3, 3) == (2, 2)

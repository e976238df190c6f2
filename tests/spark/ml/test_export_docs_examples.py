"""docs/export.md's Spark examples run as written on local[2], in a scratch folder: the Parquet export of a fitted
CTR model (its two folder roots, ``/shared/`` and ``/export/``, placed under the scratch folder), the ONNX file
scored by the reference scorer, the MLflow program (its own SQLite store in the scratch folder) and the autolog
line. ``train_df`` is made up here; the reference scorer is docs/export.md's own (tests/export runs it against
``transform``)."""
import numpy as np
import pytest

from tests.test_docs_examples import python_blocks, run

pytestmark = pytest.mark.spark


def placed(block, folder):
    """``block`` with its absolute folders under ``folder``."""
    return block.replace('"/shared/', '"%s/shared/' % folder).replace('"/export/', '"%s/export/' % folder)


def fresh_mlflow_process(monkeypatch):
    """mlflow's process-wide state as a new program starts with it: no active experiment (another test of this
    process may have set one, whose id the docs example's new store does not hold)."""
    from mlflow.tracking import fluent
    monkeypatch.setattr(fluent, "_active_experiment_id", None)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)


def test_the_export_docs_examples_export_score_and_log(spark, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("mlflow")
    import mlflow.pyspark.ml

    from sparkps.spark.ml import SparkpsCTRClassifier
    blocks = python_blocks("export.md")
    assert len(blocks) == 6 and "export_tables" in blocks[1] and "ReferenceScorer(" in blocks[3]
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(5)
    site, app, hour = rng.integers(0, 6, 400), rng.integers(0, 4, 400), rng.random(400) * 24
    label = (rng.random(400) < np.where(site < 3, 0.8, 0.1)).astype(float)
    rows = [(float(c), "s%d" % s, "a%d" % a, ",".join("t%d" % t for t in range(a % 3)), float(h))
            for c, s, a, h in zip(label, site, app, hour)]
    train_df = spark.createDataFrame(rows, ["label", "site", "app", "tags", "hour"]).repartition(2)

    namespace = {"SparkpsCTRClassifier": SparkpsCTRClassifier, "train_df": train_df}
    exec(compile(placed(blocks[1], tmp_path), "docs/export.md[1]", "exec"), namespace)
    assert (tmp_path / "export" / "ctr").is_dir() and (tmp_path / "export" / "ctr-delta").is_dir()
    run("export.md", 2, namespace)                                         # defines ReferenceScorer
    exec(compile(placed(blocks[3], tmp_path), "docs/export.md[3]", "exec"), namespace)
    clicks = namespace["clicks"]
    assert clicks.shape == (1,) and 0.0 < float(clicks[0]) < 1.0

    before = mlflow.get_tracking_uri()
    fresh_mlflow_process(monkeypatch)
    try:
        namespace = run("export.md", 4, {})
        p, same = namespace["p"], namespace["same"]
        expected = np.array([row[0].toArray()[1] for row in same.select("probability").collect()])
        np.testing.assert_allclose(p, expected, rtol=1e-5)
        run("export.md", 5, {"mlflow": mlflow})
    finally:
        mlflow.pyspark.ml.autolog(disable=True)
        mlflow.set_tracking_uri(before)

"""docs/ctr.md's fit -> save -> load -> evaluate example runs as written on local[2], in a scratch folder, on clicks
made up here (``train_df``, ``test_df``: a planted signal in ``site``; its model folder placed under the scratch
folder), and what it prints holds: a history per
epoch and a test AUC above chance."""
import numpy as np
import pytest

from tests.test_docs_examples import python_blocks

pytestmark = pytest.mark.spark


def clicks(spark, rows, seed):
    rng = np.random.default_rng(seed)
    site, app, hour = rng.integers(0, 8, rows), rng.integers(0, 5, rows), rng.random(rows) * 24
    click = (rng.random(rows) < np.where(site < 4, 0.7, 0.1)).astype(float)
    data = [(float(c), "s%d" % s, "a%d" % a, float(h)) for c, s, a, h in zip(click, site, app, hour)]
    return spark.createDataFrame(data, ["click", "site", "app", "hour"])


def test_the_ctr_fit_save_load_evaluate_example_runs(spark, tmp_path, monkeypatch, capsys):
    blocks = python_blocks("ctr.md")
    assert len(blocks) == 1 and "SparkpsCTRModel.load" in blocks[0]
    monkeypatch.chdir(tmp_path)
    namespace = {"train_df": clicks(spark, 1200, 1), "test_df": clicks(spark, 400, 2)}
    # the folder made absolute: the session's JVM resolves a relative path from the folder it started in
    block = blocks[0].replace('"models/ctr"', '"%s/models/ctr"' % tmp_path)
    assert block.count(str(tmp_path)) == 2
    exec(compile(block, "docs/ctr.md[0]", "exec"), namespace)
    assert (tmp_path / "models" / "ctr" / "metadata").is_dir()
    assert 0.6 < namespace["auc"] <= 1.0, namespace["auc"]
    assert "test AUC" in capsys.readouterr().out

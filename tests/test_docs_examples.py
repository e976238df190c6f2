"""Every ```python block of docs/ runs as written, its inputs made up here: the blocks without Spark run in this
file, the others in the test files RUN_ELSEWHERE names. API listings (signatures, not programs) are fenced ```text,
so a new ```python block is an example that some test must run (``test_every_python_block_of_the_docs_is_run``)."""
import glob
import os
import re

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
DOCS = os.path.join(ROOT, "docs")

RUN_HERE = {("sparse.md", 0), ("sparse.md", 1), ("sparse.md", 2), ("scale.md", 0), ("regularisation.md", 0),
            ("sparse_tables.md", 0), ("mxnet.md", 0), ("mxnet.md", 1), ("mxnet.md", 2)}
RUN_ELSEWHERE = {
    ("export.md", 0): "tests/onnx/test_onnx_export.py",
    ("export.md", 2): "tests/export/test_export_tables.py",
    ("sparse.md", 3): "tests/spark/driver/test_spark_docs_examples.py",
    ("export.md", 1): "tests/spark/ml/test_export_docs_examples.py",
    ("export.md", 3): "tests/spark/ml/test_export_docs_examples.py",
    ("export.md", 4): "tests/spark/ml/test_export_docs_examples.py",
    ("export.md", 5): "tests/spark/ml/test_export_docs_examples.py",
    ("ctr.md", 0): "tests/spark/ml/test_ctr_docs_example.py",
    ("spark.md", 0): "tests/spark/model/test_stored_models.py",
}


def python_blocks(name):
    """The ```python blocks of docs/``name``, as written."""
    with open(os.path.join(DOCS, name), encoding="utf-8") as handle:
        return re.findall(r"```python\n(.*?)```", handle.read(), re.S)


def run(name, index, namespace):
    """Run block ``index`` of docs/``name`` in ``namespace`` (updated in place); returns it."""
    exec(compile(python_blocks(name)[index], f"docs/{name}[{index}]", "exec"), namespace)
    return namespace


def test_every_python_block_of_the_docs_is_run():
    blocks = {(os.path.basename(path), i) for path in glob.glob(os.path.join(DOCS, "*.md"))
              for i in range(len(python_blocks(os.path.basename(path))))}
    assert blocks == RUN_HERE | set(RUN_ELSEWHERE), "a docs example no test runs, or a test of a block gone"
    for (name, _), test_file in RUN_ELSEWHERE.items():
        with open(os.path.join(ROOT, test_file), encoding="utf-8") as handle:
            assert name in handle.read(), f"{test_file} does not read docs/{name}"


def test_the_sparse_docs_examples_run(tmp_path, monkeypatch):
    blocks = python_blocks("sparse.md")
    assert len(blocks) == 4 and "SparkTrainer" in blocks[3]
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    namespace = {"user_ids": rng.integers(1, 50, (64, 3)).astype(np.int64),
                 "item_ids": rng.integers(1, 50, (64, 2)).astype(np.int64),
                 "labels": rng.integers(0, 2, 64).astype(np.float32)}
    for index in range(3):
        run("sparse.md", index, namespace)
    assert os.path.exists(tmp_path / "ctr-0005.params")
    assert namespace["rows"].shape == (3, 8)


def test_the_scale_docs_example_runs(capsys):
    namespace = run("scale.md", 0, {})
    assert namespace["e"].bottleneck in namespace["e"].table()
    assert "server memory" in capsys.readouterr().out


def test_the_regularisation_docs_example_runs():
    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.synthetic import planted_ctr
    from sparkps.nets import FeatureSpec, build
    from sparkps.nets.ctr_fit import fit_ctr
    data = planted_ctr(300, num_fields=3, num_numeric=0, vocab=10, seed=0)
    ids = hash_fields(data.fields, [data.categorical[:, j] for j in range(3)])
    spec = FeatureSpec(categorical=data.fields, numeric=[], embedding_dim=4, hidden_units=(8,))
    namespace = run("regularisation.md", 0, {"build": build, "fit_ctr": fit_ctr, "spec": spec,
                                             "inputs": spec.inputs(ids, None), "labels": data.labels})
    assert namespace["model"].arg_params


def test_the_sparse_tables_docs_example_runs():
    import json

    import sparkps.symbol as sym
    namespace = run("sparse_tables.md", 0, {"sym": sym})
    options = json.loads(namespace["weight"].attr("__table_options__"))
    assert options["on_full"] == "lru" and options["min_count"] == 2
    assert namespace["user"].list_arguments() == ["user_ids", "user_weight"]


def test_the_mxnet_docs_examples_run(tmp_path, monkeypatch):
    import sparkps
    from sparkps.spark import SparkModel
    from tests.mxnet_compat.test_from_mxnet import mxnet_checkpoint
    monkeypatch.chdir(tmp_path)
    assert run("mxnet.md", 0, {})["FeedForward"] is sparkps.FeedForward
    rng = np.random.default_rng(0)
    namespace = run("mxnet.md", 1, {"sparkps": sparkps, "w": rng.normal(size=(3, 4)).astype(np.float32),
                                    "ids": np.arange(5, dtype=np.int64)})
    np.testing.assert_array_equal(namespace["arrays"]["ids"], np.arange(5))
    mxnet_checkpoint(tmp_path, epoch=10, name="resnet")      # an MXNet checkpoint named as the example names it
    namespace = run("mxnet.md", 2, {"sparkps": sparkps, "SparkModel": SparkModel})
    assert set(namespace["arg_params"]) == set(namespace["model"].arg_params)
    assert namespace["spark_model"].input_shape == (3, 224, 224)

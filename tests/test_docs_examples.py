"""The Python examples of docs/sparse.md run as written (their inputs made up here); the Spark one is run by the
Spark suites' own fits, not here."""
import os
import re

import numpy as np

DOCS = os.path.join(os.path.dirname(__file__), os.pardir, "docs")


def python_blocks(name):
    with open(os.path.join(DOCS, name), encoding="utf-8") as handle:
        return re.findall(r"```python\n(.*?)```", handle.read(), re.S)


def test_the_sparse_docs_examples_run(tmp_path, monkeypatch):
    blocks = python_blocks("sparse.md")
    assert len(blocks) == 4 and "SparkTrainer" in blocks[3]
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    namespace = {"user_ids": rng.integers(1, 50, (64, 3)).astype(np.int64),
                 "item_ids": rng.integers(1, 50, (64, 2)).astype(np.int64),
                 "labels": rng.integers(0, 2, 64).astype(np.float32)}
    for block in blocks[:3]:
        exec(compile(block, "docs/sparse.md", "exec"), namespace)
    assert os.path.exists(tmp_path / "ctr-0005.params")
    assert namespace["rows"].shape == (3, 8)

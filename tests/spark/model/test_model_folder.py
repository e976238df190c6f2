"""The folder of a saved model has one home below SparkModel and the predictor (``model_folder``): the modules of
sparkps/spark/model import each other in one direction only (no circle, function-level imports counted), and a
Python worker reads a saved folder through it, 0.1.0's format included, predicting what 0.1.0 predicted.
Runs in this process, no Spark session."""
import ast
import json
import os
from pathlib import Path

import numpy as np

from sparkps.spark.model.model_folder import read_folder
from sparkps.spark.model.predictor import WORKER_PREDICTORS, predictor_for

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = "sparkps.spark.model"
RELEASE_0_1 = ROOT / "tests" / "data" / "release_0_1"


def package_imports():
    """{module of sparkps/spark/model: the modules of that folder it imports, at any depth of its code}."""
    folder = ROOT.joinpath(*PACKAGE.split("."))
    names = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    edges = {}
    for name in names:
        found = set()
        for node in ast.walk(ast.parse((folder / (name + ".py")).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
                found.update(alias.name for alias in node.names if alias.name in names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE + "."):
                found.add(node.module[len(PACKAGE) + 1:].split(".")[0])
            elif isinstance(node, ast.Import):
                found.update(a.name[len(PACKAGE) + 1:].split(".")[0] for a in node.names
                             if a.name.startswith(PACKAGE + "."))
        edges[name] = found - {name}
    return edges


def circles(edges):
    """[[module, ..., module]] for each circle a depth-first walk of ``edges`` meets."""
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    return found


def test_no_module_of_spark_model_imports_one_that_imports_it_back():
    edges = package_imports()
    assert "spark_model" not in edges["predictor"] and "model_folder" in edges["predictor"]
    assert "model_folder" in edges["spark_model"]
    assert circles(edges) == []


def test_the_circle_check_finds_a_planted_circle():
    assert circles({"predictor": {"spark_model"}, "spark_model": {"predictor", "model_folder"}}) == \
        [["predictor", "spark_model", "predictor"]]


def test_a_worker_reads_a_0_1_folder_and_predicts_as_0_1_did():
    with open(RELEASE_0_1 / "expected.json", encoding="utf-8") as handle:
        saved = json.load(handle)["spark_model"]
    path = str(RELEASE_0_1 / saved["path"])
    folder = read_folder("file:" + path)
    assert folder.path == os.path.abspath(path) and folder.meta["epoch"] == 1
    assert folder.meta["history"] == [{"epoch": 0, "accuracy": 0.5}] and folder.table_counts == {}
    source = {"id": "release-0.1-folder", "path": path, "batch_size": 7}
    assert WORKER_PREDICTORS.cached(source["id"]) is None
    predictor = predictor_for(source)
    assert predictor.batch_size == 7 and predictor.input_shape == (64,)
    np.testing.assert_allclose(predictor.predict(np.array(saved["inputs"], np.float32)), np.array(saved["outputs"]),
                               rtol=1e-5, atol=1e-7)
    assert predictor_for(source) is predictor

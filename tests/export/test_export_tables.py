"""SparkpsCTRModel.export_tables on a small DeepFM fit in a real local[2] Spark (numeric columns, a multi-valued
column, a checkpoint folder per epoch): the Parquet rows are the model's, the featurization reproduces its ids,
the reference scorer of docs/export.md (reference_scorer.py, the same text) reproduces ``transform`` to 1e-5 from
the export alone, a delta since a checkpoint rebuilds the model's rows, and bad targets are refused by name."""
import json
import pathlib
import shutil

import numpy as np
import pytest

from sparkps.ctr.synthetic import planted_ctr
from sparkps.errors import ConfigError, DataError

pytestmark = pytest.mark.spark
HERE = pathlib.Path(__file__).resolve().parent
DOCS = HERE.parents[1] / "docs" / "export.md"
COLUMNS = "click double, C1 string, C2 string, C3 string, tags string, I1 double, I2 double"


def frame(spark, rows, seed):
    data = planted_ctr(rows, num_fields=3, num_numeric=2, vocab=12, seed=seed)
    rng = np.random.default_rng(seed)
    records = []
    for y, cats, nums in zip(data.labels, data.categorical, data.numeric):
        tags = ",".join(rng.choice(["a", "b", "c", "d", "e"], rng.integers(0, 4), replace=False))
        records.append((float(y), *[str(c) for c in cats], tags or None,
                        *[None if np.isnan(x) else float(x) for x in nums]))
    return spark.createDataFrame(records, COLUMNS)


@pytest.fixture(scope="module")
def fitted(spark, tmp_path_factory):
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    model = SparkpsCTRClassifier(labelCol="click", categoricalCols=["C1", "C2", "C3"], numericCols=["I1", "I2"],
                                 multiValueCols=["tags"], model="deepfm", embeddingDim=4, hiddenUnits=[8],
                                 numEpochs=2, batchSize=64, numWorkers=2, numServers=1,
                                 validationFraction=0.0,        # the last epoch is the model (no best epoch kept)
                                 checkpointDir=str(checkpoints)).fit(frame(spark, 300, seed=3).repartition(2))
    return model, checkpoints


def test_rows_counts_manifest_and_featurization_are_the_models(fitted, tmp_path):
    from sparkps.ctr.hashing import hash_value
    model, _ = fitted
    manifest = model.export_tables(tmp_path / "rows")
    import pyarrow.parquet as pq
    spark_model = model.spark_model
    assert manifest["delta"] is False and manifest["model"] == "deepfm"
    assert set(manifest["tables"]) == {"embedding_weight", "linear_embedding_weight"}
    for name, entry in manifest["tables"].items():
        table = pq.read_table(tmp_path / "rows" / entry["file"])
        assert str(table.schema.field("id").type) == "int64"
        assert str(table.schema.field("vector").type) == "list<element: float>"
        expected = spark_model.arg_params[name]
        np.testing.assert_array_equal(table.column("id").to_numpy(), expected.ids)
        np.testing.assert_array_equal(np.array(table.column("vector").to_pylist(), np.float32), expected.rows)
        ids, counts = spark_model.table_counts[name]
        np.testing.assert_array_equal(table.column("count").to_numpy(), counts[np.searchsorted(ids, expected.ids)])
        assert entry["rows"] == expected.ids.size and entry["dim"] == expected.dim
    saved = json.loads((tmp_path / "rows" / "manifest.json").read_text())
    assert saved == json.loads(json.dumps(manifest))
    doc = json.loads((tmp_path / "rows" / "featurization.json").read_text())
    import reference_scorer
    for field, value in [("C1", "68fd1e64"), ("tags", 7), ("C2", None), ("C3", 2.5), ("C3", float("nan"))]:
        assert reference_scorer.feature_id(field, value, doc["hash"]["person"]) == hash_value(field, value)
    tags, = [f for f in doc["fields"] if f["name"] == "tags"]
    assert tags == {"name": "tags", "kind": "multi", "width": 3, "separator": ",", "pooling": "mean",
                    "onnx_inputs": {"embedding_weight": "embedding_weight:tags",
                                    "linear_embedding_weight": "linear_embedding_weight:tags"}}
    assert [c["name"] for c in doc["numeric"]["columns"]] == ["I1", "I2"] and doc["numeric"]["log"] is True


def test_the_reference_scorer_reproduces_transform(spark, fitted, tmp_path):
    pytest.importorskip("onnx")
    import reference_scorer

    from sparkps.onnx import export_model
    from sparkps.spark.ml.ctr_classifier import stats_from_json
    model, _ = fitted
    model.export_tables(tmp_path / "rows")
    spec = model.feature_spec(stats_from_json(model.getOrDefault("numericStats")))
    onnx_path = export_model(model.spark_model.symbol, (model.spark_model.arg_params, model.spark_model.aux_params),
                             spec.input_shapes(1), str(tmp_path / "ctr.onnx"), fields=spec)
    test = frame(spark, 40, seed=9)            # seed 9: values and tags the fit never saw, nulls
    unseen = spark.createDataFrame([(1.0, "new-site", None, "x", "a,,zz,b,c,d", float("nan"), -3.0),
                                    (0.0, None, "y", "z", "", 0.0, None)], COLUMNS)
    test = test.union(unseen)
    rows = model.transform(test).collect()
    records = [r.asDict() for r in rows]
    scores = reference_scorer.ReferenceScorer(str(tmp_path / "rows"), onnx_path).score(records)
    np.testing.assert_allclose(scores, [r.probability[1] for r in rows], atol=1e-5, rtol=0)


def test_the_scorer_in_the_docs_is_the_tested_one():
    text = DOCS.read_text(encoding="utf-8")
    code = (HERE / "reference_scorer.py").read_text(encoding="utf-8")
    assert "```python\n" + code + "```" in text


def replayed_with(checkpoint, folder, table):
    """The checkpoint's rows of ``table`` with the delta in ``folder`` applied."""
    import pyarrow.parquet as pq

    from sparkps.comm.manifest import read_manifest
    from sparkps.spark.model.export_delta import _replayed
    ids, values = _replayed(str(checkpoint), read_manifest(str(checkpoint))["tables"][table], table)
    rows = dict(zip(ids.tolist(), values))
    for gone in pq.read_table(folder / (table + ".removed.parquet")).column("id").to_pylist():
        del rows[gone]
    delta = pq.read_table(folder / (table + ".parquet"))
    rows.update(zip(delta.column("id").to_pylist(), np.array(delta.column("vector").to_pylist(), np.float32)))
    return rows


def test_a_delta_since_a_checkpoint_rebuilds_the_models_rows(fitted, tmp_path):
    model, checkpoints = fitted
    first = checkpoints / "epoch-0001"
    manifest = model.export_tables(tmp_path / "delta", since=first)
    assert manifest["delta"] is True and manifest["since"] == str(first)
    full = model.spark_model.arg_params
    for name in ("embedding_weight", "linear_embedding_weight"):
        rows = replayed_with(first, tmp_path / "delta", name)
        assert sorted(rows) == full[name].ids.tolist()
        np.testing.assert_array_equal(np.array([rows[i] for i in full[name].ids.tolist()]), full[name].rows)
        assert 0 < manifest["tables"][name]["rows"] <= full[name].ids.size      # an epoch of Adam moved rows
    last = model.export_tables(tmp_path / "none", since=checkpoints / "epoch-0002")
    assert {entry["rows"] for entry in last["tables"].values()} == {0}     # the fit ends on its last checkpoint
    for name in ("embedding_weight", "linear_embedding_weight"):
        rows = replayed_with(checkpoints / "epoch-0002", tmp_path / "none", name)
        np.testing.assert_array_equal(np.array([rows[i] for i in full[name].ids.tolist()]), full[name].rows)


def test_a_nonempty_target_and_another_models_checkpoint_are_refused(fitted, tmp_path):
    model, checkpoints = fitted
    target = tmp_path / "out"
    target.mkdir()
    (target / "keep.txt").write_text("x")
    with pytest.raises(ConfigError, match="export_tables: %s is not empty; pass overwrite=True" % target):
        model.export_tables(target)
    assert (target / "keep.txt").exists()
    model.export_tables(target, overwrite=True)
    assert not (target / "keep.txt").exists() and (target / "manifest.json").exists()

    other = tmp_path / "other"
    shutil.copytree(checkpoints / "epoch-0001", other)
    saved = json.loads((other / "manifest.json").read_text())
    saved["tables"]["embedding_weight"]["options"]["dim"] = 16
    (other / "manifest.json").write_text(json.dumps(saved))
    with pytest.raises(DataError, match=r"since=%s is a checkpoint of another model: it holds tables "
                       r"\{embedding_weight: dim 16, linear_embedding_weight: dim 1\}; the exported model has "
                       r"tables \{embedding_weight: dim 4, linear_embedding_weight: dim 1\}" % other):
        model.export_tables(tmp_path / "x", since=other)
    with pytest.raises(DataError, match=r"since=%s is not a checkpoint folder \(no manifest.json\); it holds the "
                       r"checkpoints \['epoch-0001', 'epoch-0002'\]" % checkpoints):
        model.export_tables(tmp_path / "y", since=checkpoints)


def sorted_rows(folder, name):
    import pyarrow.parquet as pq
    table = pq.read_table(folder / (name + ".parquet"))
    ids = table.column("id").to_numpy()
    order = np.argsort(ids)
    return ids[order], np.array(table.column("vector").to_pylist(), np.float32)[order], \
        table.column("count").to_numpy()[order]


def test_a_model_with_sharded_tables_exports_the_rows_of_its_inline_self(fitted, tmp_path, monkeypatch):
    """Its shards streamed a few rows at a time (full export and delta): the same rows, counts and removed ids."""
    import pyarrow.parquet as pq

    from sparkps.spark.model import export_tables
    model, checkpoints = fitted
    sharded = model.copy()
    sharded.spark_model = model.spark_model.with_sharded_tables(str(tmp_path / "sharded"))
    monkeypatch.setattr(export_tables, "SHARD_BATCH_ROWS", 7)
    for since, target in ((None, "rows"), (checkpoints / "epoch-0001", "delta")):
        inline = model.export_tables(tmp_path / ("inline-" + target), since=since)
        streamed = sharded.export_tables(tmp_path / ("sharded-" + target), since=since)
        assert streamed["tables"] == inline["tables"]
        for name in inline["tables"]:
            for mine, theirs in zip(sorted_rows(tmp_path / ("sharded-" + target), name),
                                    sorted_rows(tmp_path / ("inline-" + target), name)):
                np.testing.assert_array_equal(mine, theirs)
            if since is not None:
                removed = [sorted(pq.read_table(tmp_path / (kind + target) / (name + ".removed.parquet"))
                                  .column("id").to_pylist()) for kind in ("sharded-", "inline-")]
                assert removed[0] == removed[1]

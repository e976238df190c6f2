"""A fit's sparse tables come from the servers: they write their shards at the end of the fit and the driver gets
the manifest, never the rows. Tables up to ``inlineTablesMB`` come back inside the model (counts from the shards);
larger ones stay the servers' shard files in a staging folder the model owns (``save`` moves it into the model's
folder; it goes with the model otherwise), scored by join as the inline model scores."""
import gc
import os

import numpy as np
import pytest

from sparkps.errors import ConfigError
from sparkps.rows.values import RowSparse

pytestmark = pytest.mark.spark

COLUMNS = ["site", "app", "device"]


@pytest.fixture(scope="module")
def clicks(spark):
    rng = np.random.default_rng(3)
    rows = [(i, float(rng.random() < 0.3 + 0.4 * (i % 7 == 0)), "s%d" % rng.integers(60), "a%d" % rng.integers(40),
             "d%d" % (i % 9)) for i in range(1200)]
    return spark.createDataFrame(rows, ["i", "click"] + COLUMNS).repartition(2).cache()


def classifier(**kwargs):
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    settings = dict(labelCol="click", categoricalCols=COLUMNS, model="fm", embeddingDim=4, numEpochs=2,
                    batchSize=64, learningRate=0.05, numWorkers=2, numServers=2, validationFraction=0.0, seed=4)
    settings.update(kwargs)
    return SparkpsCTRClassifier(**settings)


def distinct_ids(frame, return_counts=False):
    """The sorted distinct hashed ids of ``frame``'s training columns (and how often the rows use each)."""
    from sparkps.ctr.hashing import hash_column
    cells = frame.select(*COLUMNS).collect()
    return np.unique(np.concatenate([hash_column(c, [r[c] for r in cells]) for c in COLUMNS]).view(np.int64),
                     return_counts=return_counts)


def probabilities(model, frame):
    """The click probability of each row, in the order of column ``i`` (the join path does not keep row order)."""
    rows = model.transform(frame).select("i", "probability").collect()
    return np.array([r.probability[1] for r in sorted(rows, key=lambda r: r.i)])


@pytest.fixture(scope="module")
def sharded(clicks):
    return classifier(inlineTablesMB=0.0).fit(clicks)


def test_a_fit_returns_the_manifest_of_the_servers_shards_and_no_row(clicks, sharded):
    spark_model = sharded.spark_model
    assert not [n for n, v in spark_model.arg_params.items() if isinstance(v, RowSparse)]    # dense only
    manifest = spark_model.table_manifest
    assert sorted(manifest) == ["embedding_weight", "linear_embedding_weight"]
    ids = distinct_ids(clicks)
    for entry in manifest.values():
        assert entry["rows"] == ids.size and [s["server"] for s in entry["shards"]] == [0, 1]
        assert all(s["sha256"] and s["rows"] > 0 for s in entry["shards"])
    assert os.path.basename(spark_model.tables_folder).startswith("sparkps-tables-")
    assert spark_model.table_counts == {}        # the counts are in the shards


def test_small_tables_come_back_inline_with_the_servers_counts_and_score_as_the_shards(clicks, sharded):
    inline = classifier().fit(clicks)           # the default inlineTablesMB: these tables are far below it
    spark_model = inline.spark_model
    assert spark_model.table_manifest is None
    ids, occurrences = distinct_ids(clicks, return_counts=True)
    for name in ("embedding_weight", "linear_embedding_weight"):
        table = spark_model.arg_params[name]
        np.testing.assert_array_equal(table.ids, ids)
        counted, counts = spark_model.table_counts[name]
        np.testing.assert_array_equal(counted, ids)
        np.testing.assert_array_equal(counts, 2 * occurrences)     # the id's occurrences, in each of the 2 epochs
    # dist_sync with the same seed trains the same rows: both paths give the same probabilities
    np.testing.assert_allclose(probabilities(inline, clicks), probabilities(sharded, clicks), atol=1e-5)


def test_save_moves_the_staged_tables_into_the_model_folder_and_the_staging_folder_goes_with_the_model(
        clicks, tmp_path):
    from sparkps.spark.ml.classifier import SparkpsCTRModel
    model = classifier(inlineTablesMB=0.0, numEpochs=1).fit(clicks)
    staged = model.spark_model.tables_folder
    assert os.path.isdir(staged)
    expected = probabilities(model, clicks)
    model.write().overwrite().save(str(tmp_path / "m"))
    assert not os.path.exists(staged)
    loaded = SparkpsCTRModel.load(str(tmp_path / "m"))
    np.testing.assert_allclose(probabilities(loaded, clicks), expected, atol=1e-6)

    unsaved = classifier(inlineTablesMB=0.0, numEpochs=1).fit(clicks)
    staged = unsaved.spark_model.tables_folder
    assert os.path.isdir(staged)
    del unsaved
    gc.collect()
    assert not os.path.exists(staged)


def test_a_negative_inline_size_is_one_config_error_naming_the_param(clicks):
    with pytest.raises(ConfigError, match="param inlineTablesMB must be >= 0"):
        classifier(inlineTablesMB=-1.0).fit(clicks)


def test_the_estimators_default_is_the_trainers():
    import inspect

    from sparkps.spark.driver.trainer import SparkTrainer
    from sparkps.spark.model.table_rows import INLINE_TABLE_BYTES
    default = inspect.signature(SparkTrainer).parameters["inline_table_bytes"].default
    assert default == INLINE_TABLE_BYTES == classifier().getOrDefault("inlineTablesMB") * 2**20

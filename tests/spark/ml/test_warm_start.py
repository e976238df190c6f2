"""A fit starts from a saved model (docs/warm_start.md): ``SparkpsCTRClassifier(initialModel=...)`` and
``SparkTrainer.fit(initial_model=...)`` load the dense weights and every table's rows (with their counts) into the
servers from the model's shard files, on any number of servers, and encode the input as the initial model did. A
model that does not fit is one error naming what differs, before anything is trained."""
import math
import os

import numpy as np
import pytest

from sparkps.errors import ConfigError, DataError

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]   # several fits a test on a loaded machine

COLUMNS = ["site", "app", "device"]


def day(spark, seed, rows=1600):
    """A planted click log: each site has its own click rate (0.05 or 0.6, the same every day), apps and devices add
    nothing."""
    rng = np.random.default_rng(seed)
    sites = rng.integers(80, size=rows)
    p = np.where(sites % 2 == 0, 0.05, 0.6)
    clicks = (rng.random(rows) < p).astype(float)
    data = [(i, float(clicks[i]), "s%d" % sites[i], "a%d" % rng.integers(30), "d%d" % rng.integers(5))
            for i in range(rows)]
    return spark.createDataFrame(data, ["i", "click"] + COLUMNS).repartition(2).cache()


def classifier(**kwargs):
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    settings = dict(labelCol="click", categoricalCols=COLUMNS, model="fm", embeddingDim=4, numEpochs=3,
                    batchSize=64, optimizer="adam", learningRate=0.05, numWorkers=2, numServers=2,
                    validationFraction=0.0, seed=4, embeddingL2=0.0)
    settings.update(kwargs)
    return SparkpsCTRClassifier(**settings)


def probabilities(model, frame):
    rows = model.transform(frame).select("i", "probability").collect()
    return np.array([r.probability[1] for r in sorted(rows, key=lambda r: r.i)])


def auc(model, frame):
    from sklearn.metrics import roc_auc_score
    labels = np.array([r.click for r in sorted(frame.select("i", "click").collect(), key=lambda r: r.i)])
    return roc_auc_score(labels, probabilities(model, frame))


@pytest.fixture(scope="module")
def today(spark):
    return day(spark, 1)


@pytest.fixture(scope="module")
def tomorrow(spark):
    return day(spark, 2)


@pytest.fixture(scope="module")
def sharded(today, tmp_path_factory):
    """Yesterday's model, its tables as the servers' shard files (2 servers), saved."""
    model = classifier(inlineTablesMB=0.0).fit(today)
    path = str(tmp_path_factory.mktemp("warm") / "sharded")
    model.write().save(path)
    return model, path


def test_a_warm_fit_from_a_saved_sharded_model_on_another_server_count_starts_at_its_weights(sharded, today):
    model, path = sharded
    assert model.spark_model.table_manifest       # shard files, written by 2 servers
    # a learning rate too small to move anything: the warm model scores as the initial one did
    warm = classifier(initialModel=path, numServers=1, numEpochs=1, learningRate=1e-9).fit(today)
    np.testing.assert_allclose(probabilities(warm, today), probabilities(model, today), atol=2e-4)
    # every row came back from the shard files (the warm model's tables are small: inline), and no other
    for name, entry in model.spark_model.table_manifest.items():
        assert warm.spark_model.arg_params[name].ids.size == entry["rows"]


def test_a_warm_fit_from_an_inline_fitted_model_starts_at_its_weights(today):
    model = classifier(numServers=1).fit(today)        # tables inline (SparkModel format 3)
    assert model.spark_model.table_manifest is None
    warm = classifier(initialModel=model, numServers=2, numEpochs=1, learningRate=1e-9).fit(today)
    np.testing.assert_allclose(probabilities(warm, today), probabilities(model, today), atol=2e-4)
    counted, counts = model.spark_model.table_counts["embedding_weight"]
    ids, warm_counts = warm.spark_model.table_counts["embedding_weight"]
    np.testing.assert_array_equal(ids, counted)
    np.testing.assert_array_equal(warm_counts, counts + counts // 3)    # 3 epochs, then one more of the same rows


def test_a_warm_fit_beats_a_cold_fit_of_the_same_budget_and_exports_its_delta(sharded, tomorrow, spark, tmp_path):
    model, path = sharded
    held_out = day(spark, 3, rows=1200)
    budget = dict(numEpochs=1, learningRate=0.002)
    cold = classifier(**budget).fit(tomorrow)
    warm = classifier(initialModel=path, **budget).fit(tomorrow)
    assert auc(warm, held_out) >= auc(cold, held_out) + 0.05
    # every id of yesterday kept (no forgetting asked), tomorrow's new ones added
    yesterday = rows_of(os.path.join(path, "weights", "tables"), "embedding_weight")
    ids = warm.tableIds["embedding_weight"]
    assert ids["kept"] == len(yesterday) and ids["dropped"] == 0
    assert ids["added"] == warm.spark_model.arg_params["embedding_weight"].ids.size - len(yesterday)
    # the day-over-day delta: yesterday's rows, overwritten by the delta's, less its removed ids, are today's
    manifest = warm.export_tables(str(tmp_path / "delta"), since=path)
    assert manifest["delta"] is True and manifest["tables"]["embedding_weight"]["removed"] == 0
    rebuilt = dict(yesterday)
    rebuilt.update(rows_of(str(tmp_path / "delta"), "embedding_weight", exported=True))
    today = warm.spark_model.arg_params["embedding_weight"]
    assert sorted(rebuilt) == sorted(today.ids.tolist())
    for i, row in zip(today.ids.tolist(), today.rows):
        np.testing.assert_array_equal(rebuilt[i], row)


def rows_of(folder, table, exported=False):
    """{id: row} of ``table``'s shard files in ``folder`` (or of its exported file)."""
    import pyarrow.parquet as pq

    from sparkps.rows.shards import iter_shard_rows
    if exported:
        data = pq.read_table(os.path.join(folder, table + ".parquet")).to_pydict()
        return {i: np.asarray(v, np.float32) for i, v in zip(data["id"], data["vector"])}
    return {int(i): v for ids, vectors, _ in iter_shard_rows(folder, table)
            for i, v in zip(ids.view(np.int64), vectors)}


def test_a_warm_fit_forgets_the_ids_it_did_not_see_when_asked(sharded, spark):
    _, path = sharded
    fewer = day(spark, 4).where("site < 's4'")       # the sites s4.., and some apps and devices, not seen today
    rows = fewer.count()
    steps = math.ceil(math.ceil(rows / 2) / 64)        # this fit's steps: rows dealt evenly to 2 workers, 64 a step
    warm = classifier(initialModel=path, numEpochs=1, forgetAfterSteps=steps).fit(fewer)
    from sparkps.ctr.hashing import hash_column
    cells = fewer.select(*COLUMNS).collect()
    seen = np.unique(np.concatenate([hash_column(c, [r[c] for r in cells]) for c in COLUMNS]).view(np.int64))
    table = warm.spark_model.arg_params["embedding_weight"]
    np.testing.assert_array_equal(np.sort(table.ids), seen)        # yesterday's ids unseen today are gone
    ids = warm.tableIds["embedding_weight"]
    assert ids["dropped"] > 0 and ids["kept"] + ids["added"] == seen.size


def test_a_warm_fit_inherits_the_featurization_and_refuses_another(sharded, today):
    _, path = sharded
    with pytest.raises(ConfigError, match=r"param embeddingDim is 8, but the initial model was trained with "
                                          r"embeddingDim=4"):
        classifier(initialModel=path, embeddingDim=8).fit(today)
    with pytest.raises(ConfigError, match=r"param model is 'deepfm'.*model='fm'"):
        classifier(initialModel=path, model="deepfm").fit(today)


def test_a_missing_column_is_named(sharded, today):
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    _, path = sharded
    with pytest.raises(DataError, match=r"no column\(s\) \['device'\]"):
        SparkpsCTRClassifier(labelCol="click", initialModel=path, numWorkers=2, numServers=1,
                             validationFraction=0.0).fit(today.drop("device"))


def test_a_path_that_is_not_a_model_is_named(tmp_path, today):
    with pytest.raises(ConfigError, match=r"param initialModel: .*%s" % tmp_path.name):
        classifier(initialModel=str(tmp_path / "nothing-here")).fit(today)
    (tmp_path / "plain").mkdir()
    with pytest.raises(ConfigError, match=r"param initialModel: .*holds no saved pyspark.ml model"):
        classifier(initialModel=str(tmp_path / "plain")).fit(today)


def test_a_missing_or_damaged_shard_is_named_and_nothing_is_written(sharded, today, tmp_path):
    import shutil
    _, path = sharded
    broken = str(tmp_path / "broken")
    shutil.copytree(path, broken)
    shard = os.path.join(broken, "weights", "tables", "embedding_weight", "server-00001.parquet")
    with open(shard, "r+b") as handle:
        handle.seek(40)
        handle.write(b"\0\0\0\0")
    output = tmp_path / "out"
    with pytest.raises(DataError, match=r"table 'embedding_weight': shard .*server-00001.parquet is damaged"):
        classifier(initialModel=broken).fit(today)
    os.remove(shard)
    with pytest.raises(DataError, match=r"table 'embedding_weight': shard .*server-00001.parquet is missing"):
        classifier(initialModel=broken).fit(today)
    assert not output.exists()


def test_an_estimator_holding_a_fitted_initial_model_saves_only_its_path(tmp_path, spark):
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRModel
    with pytest.raises(ConfigError, match=r"param initialModel holds a fitted SparkpsCTRModel, which the estimator's "
                                          r"saved params cannot hold"):
        classifier(initialModel=SparkpsCTRModel()).write().save(str(tmp_path / "estimator"))
    classifier(initialModel=str(tmp_path / "day1")).write().save(str(tmp_path / "estimator"))
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    loaded = SparkpsCTRClassifier.load(str(tmp_path / "estimator"))
    assert loaded.getOrDefault("initialModel") == str(tmp_path / "day1")
    with pytest.raises(ConfigError, match=r"param initialModel must be a fitted model or the path of a saved one"):
        classifier(initialModel=3)


def test_a_model_of_another_kind_is_named(tmp_path, today):
    import numpy as np

    from sparkps.spark import SparkModel, mlp_symbol
    from sparkps.spark.ml.classifier import SparkpsClassificationModel
    net = mlp_symbol([3, 2])
    arg_shapes, _, _ = net.infer_shape(data=(1, 3))
    params = {n: np.zeros(s, np.float32) for n, s in zip(net.list_arguments(), arg_shapes)
              if n not in ("data", "softmax_label")}
    mlp = SparkpsClassificationModel(SparkModel(net, params, input_shape=(3,)))
    with pytest.raises(ConfigError, match=r"param initialModel is a SparkpsClassificationModel; a SparkpsCTRClassifier "
                                          r"starts from a SparkpsCTRModel"):
        classifier(initialModel=mlp).fit(today)
    path = str(tmp_path / "mlp")
    mlp.write().save(path)
    with pytest.raises(ConfigError, match=r"param initialModel: .*holds a SparkpsClassificationModel, not a "
                                          r"SparkpsCTRModel"):
        classifier(initialModel=path).fit(today)

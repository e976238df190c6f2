"""SparkpsCTRClassifier on planted click data in a real local[2] Spark: hashing in the executors, a zoo
model trained by SparkTrainer (2 workers, 1 server), [1-p, p] probabilities that BinaryClassificationEvaluator
reads, a Pipeline saved and loaded, CrossValidator, and errors naming the column."""
import json

import numpy as np
import pytest

from sparkps.ctr.synthetic import planted_ctr
from sparkps.errors import ConfigError, DataError

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def clicks(spark):
    """Planted FM clicks: 4 categorical fields (strings; the last as integers), 6000 training rows."""
    data = planted_ctr(9000, num_fields=4, num_numeric=0, vocab=10, zipf=1.3, seed=5, deep_scale=0.0)
    rows = [(float(y), *[str(v) for v in cats[:3]], int(r[3]), float(p))
            for y, cats, r, p in zip(data.labels, data.categorical, data.ranks, data.probability)]
    frame = spark.createDataFrame(rows, ["click", "site", "app", "device", "hour", "truth"])
    return frame.limit(6000).repartition(2).cache(), spark.createDataFrame(rows[6000:], frame.columns).cache()


def classifier(**kwargs):
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    settings = dict(labelCol="click", categoricalCols=["site", "app", "device", "hour"], model="fm",
                    embeddingDim=4, numEpochs=4, batchSize=128, learningRate=0.05, numWorkers=2,
                    numServers=1, validationFraction=0.0)     # every row trains (early stopping: its own tests)
    settings.update(kwargs)
    return SparkpsCTRClassifier(**settings)


@pytest.fixture(scope="module")
def fitted(clicks):
    from pyspark.ml import Pipeline
    return Pipeline(stages=[classifier()]).fit(clicks[0])


def test_fit_transform_evaluate_save_load(clicks, fitted, tmp_path):
    from pyspark.ml import PipelineModel
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from sklearn.metrics import roc_auc_score
    train, test = clicks
    model = fitted
    scored = model.transform(test)
    rows = scored.select("click", "truth", "probability", "rawPrediction", "prediction").collect()
    p = np.array([r.probability[1] for r in rows])
    np.testing.assert_allclose([r.probability[0] for r in rows], 1 - p, atol=1e-6)
    assert [r.prediction for r in rows] == [float(x > 0.5) for x in p]
    labels = np.array([r.click for r in rows])
    auc = BinaryClassificationEvaluator(labelCol="click").evaluate(scored)
    assert auc == pytest.approx(roc_auc_score(labels, p), abs=1e-6)
    planted = roc_auc_score(labels, [r.truth for r in rows])
    assert auc > planted - 0.045, (auc, planted)      # 6000 rows: an FM trained locally lands ~0.03 below
    history = model.stages[-1].history
    assert len(history) == 4 and history[-1]["logloss"] < history[0]["logloss"]

    path = str(tmp_path / "ctr-pipeline")
    model.write().overwrite().save(path)
    again = PipelineModel.load(path).transform(test).select("probability").collect()
    np.testing.assert_allclose([r.probability[1] for r in again], p, rtol=1e-5, atol=1e-6)


def test_the_model_holds_every_training_id_and_shrinks_by_count(clicks, fitted, tmp_path):
    from sparkps.ctr.hashing import hash_column
    from sparkps.spark.ml.classifier import SparkpsCTRModel
    train, test = clicks
    model = fitted.stages[-1]
    spark_model = model.spark_model
    cells = train.select("site", "app", "device", "hour").collect()
    ids = np.concatenate([hash_column(name, [str(r[name]) if name != "hour" else r[name] for r in cells])
                          for name in ("site", "app", "device", "hour")]).view(np.int64)
    seen, occurrences = np.unique(ids, return_counts=True)
    table = spark_model.arg_params["embedding_weight"]
    # the rows the servers hold: those of every training id; and the servers' own count of each id: its
    # occurrences in the training rows, in each of the 4 epochs (the last batches' padding rows not counted)
    np.testing.assert_array_equal(table.ids, seen)
    np.testing.assert_array_equal(spark_model.table_counts["embedding_weight"][0], seen)
    counts = spark_model.table_counts["embedding_weight"][1]
    np.testing.assert_array_equal(counts, 4 * occurrences)
    threshold = int(np.median(counts)) + 1
    small = model.shrink(threshold)
    kept = seen[counts >= threshold]
    assert 0 < kept.size < seen.size
    np.testing.assert_array_equal(small.spark_model.arg_params["embedding_weight"].ids, kept)
    path = str(tmp_path / "small")
    small.write().overwrite().save(path)
    again = SparkpsCTRModel.load(path)
    np.testing.assert_array_equal(again.spark_model.arg_params["linear_embedding_weight"].ids, kept)
    np.testing.assert_array_equal(again.spark_model.table_counts["embedding_weight"][1], counts)
    p = np.array([r.probability[1] for r in again.transform(test).select("probability").collect()])
    assert np.all((p > 0) & (p < 1))
    with pytest.raises(ConfigError, match=r"above the broadcast limit of 0.0 MB .*embedding_weight: \d+ rows x 4.*"
                                          r"model.shrink\(min_seen\)"):
        model.copy({model.maxBroadcastMB: 1e-6}).transform(test).collect()


def test_cross_validator_picks_among_models(clicks):
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder
    train, _ = clicks
    clf = classifier(numEpochs=1)
    grid = ParamGridBuilder().addGrid(clf.model, ["lr", "fm"]).build()
    cv = CrossValidator(estimator=clf, estimatorParamMaps=grid, numFolds=2, seed=3,
                        evaluator=BinaryClassificationEvaluator(labelCol="click"))
    fitted = cv.fit(train.limit(2000))
    assert len(fitted.avgMetrics) == 2 and all(0.0 <= m <= 1.0 for m in fitted.avgMetrics)
    best = ["lr", "fm"][int(np.argmax(fitted.avgMetrics))]
    assert fitted.bestModel.getOrDefault("model") == best       # params travel through CrossValidator's copies


def test_bad_columns_are_named(clicks):
    train, _ = clicks
    with pytest.raises(DataError, match=r"no column\(s\) \['site_id'\]"):
        classifier(categoricalCols=["site_id"]).fit(train)
    with pytest.raises(DataError, match=r"multi-valued column 'truth' must be an array or a string"):
        classifier(multiValueCols=["truth"]).fit(train)
    with pytest.raises(ConfigError, match="unknown CTR model 'gbdt'"):
        classifier(model="gbdt").fit(train)


@pytest.fixture(scope="module")
def tagged(spark):
    """Planted clicks with two multi-valued columns: 'tags' an array of 1-4 of 30 tags (mean of their weights in the
    logit), 'genres' the same kind of values joined by '|' (numpy Generator seed 4)."""
    rng = np.random.default_rng(4)
    rows, w_site, w_tag, w_genre = 6000, rng.normal(0, 1, 10), rng.normal(0, 1.5, 30), rng.normal(0, 1.5, 12)
    out = []
    for _ in range(rows):
        site = int(rng.integers(0, 10))
        tags = rng.choice(30, size=int(rng.integers(1, 5)), replace=False)
        genres = rng.choice(12, size=int(rng.integers(0, 3)), replace=False)
        logit = w_site[site] + w_tag[tags].mean() + (w_genre[genres].mean() if genres.size else 0.0)
        click = float(rng.random() < 1 / (1 + np.exp(-logit)))
        out.append((click, "s%d" % site, ["t%d" % t for t in tags], "|".join("g%d" % g for g in genres)))
    return spark.createDataFrame(out, ["click", "site", "tags", "genres"]).repartition(2).cache()


def test_multi_valued_columns_and_exact_validation_metrics_each_epoch(tagged):
    from pyspark.ml.functions import vector_to_array
    from sklearn.metrics import roc_auc_score
    clf = classifier(categoricalCols=["site"], multiValueCols=["tags", "genres"], multiValueSeparator="|",
                     model="lr", numEpochs=2, validationFraction=0.25, earlyStoppingPatience=0, seed=3)
    model = clf.fit(tagged)
    assert json.loads(model.getOrDefault("numericStats"))["widths"] == {"tags": 4, "genres": 2}
    history = model.history
    assert len(history) == 2 and {"validation-auc", "validation-logloss", "validation-copc"} <= set(history[-1])
    from sparkps.spark.driver.input_rows import held_out
    validation = held_out(tagged, 0.25, seed=3)[1]    # the rows the estimator held out
    rows = model.transform(validation).select("click", vector_to_array("probability")[1].alias("p")).collect()
    labels, p = np.array([r.click for r in rows]), np.array([r.p for r in rows])
    # worker 0 scored every held-out row with the weights the servers hold after the last epoch: the final model's
    assert history[-1]["validation-auc"] == pytest.approx(roc_auc_score(labels, p), abs=1e-6)
    assert history[-1]["validation-copc"] == pytest.approx(labels.sum() / p.sum(), rel=1e-5)
    assert history[-1]["validation-auc"] > 0.75


def test_an_angel_network_trains_on_sparse_tables(clicks, tmp_path):
    """jobs/networks/deepfm.json with numfield 4 and a wide part on its own ftrl: hashed ids reduced to indexrange."""
    import pathlib

    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    config = json.loads((pathlib.Path(__file__).resolve().parents[3] / "jobs" / "networks" / "deepfm.json").read_text())
    config["data"].update(numfield=4, indexrange=4096)
    embedding = next(layer for layer in config["layers"] if layer["name"] == "embedding")
    embedding["outputdim"] = 4 * embedding["numfactors"]
    next(layer for layer in config["layers"] if layer["name"] == "wide")["optimizer"] = {"type": "ftrl"}
    path = tmp_path / "deepfm4.json"
    path.write_text(json.dumps(config))
    train, test = clicks
    model = classifier(network=str(path), model="", numEpochs=2).fit(train)
    tables = model.spark_model.arg_params
    assert tables["wide_weight"].shape == (4096, 1) and tables["embedding_weight"].ids.size <= 40
    assert BinaryClassificationEvaluator(labelCol="click").evaluate(model.transform(test)) > 0.65


def test_inputs_that_do_not_fit_the_network_are_refused_before_launch():
    import sparkps.nets as nets
    from sparkps.spark.common.typed_inputs import TypedInputs
    from sparkps.spark.driver.trainer import SparkTrainer
    spec = nets.FeatureSpec(categorical=["a", "b"], numeric=["x"])
    net, inputs = nets.build("fm", spec), TypedInputs(spec.input_parts())
    trainer = SparkTrainer(net, None, label_name="ctr_label", inputs=inputs)
    assert trainer.inputs is inputs and trainer.input_shape == (3,)
    wrong = TypedInputs([("ids", 2, "ids"), ("numbers", 1, "float")])
    with pytest.raises(ConfigError, match=r"inputs .* do not fit the network's arguments .*missing: \['numbers'\]"):
        SparkTrainer(net, None, label_name="ctr_label", inputs=wrong)
    with pytest.raises(ConfigError, match=r"needs input_shape \(e.g. \(784,\)\) or inputs"):
        SparkTrainer(net, None, label_name="ctr_label")
    with pytest.raises(DataError, match=r"input 'ids' must be \(2, 2\), got \(2, 3\)"):
        inputs.rows({"ids": np.zeros((2, 3), np.int64), "dense": np.zeros((2, 1), np.float32)})


def test_shrink_and_the_broadcast_limit_act_on_both_tables(clicks, fitted):
    """The FM's two tables (embedding_weight, linear_embedding_weight) both keep exactly the ids seen at least
    min_count times, with their trained rows; a limit between the two models' sizes refuses the full model (naming
    both tables) and lets the shrunk one through; test rows whose every id was kept score as with the full model,
    the others as if the dropped ids were unseen."""
    from sparkps.ctr.hashing import hash_column
    train, test = clicks
    model = fitted.stages[-1]
    full = model.spark_model
    seen, counts = full.table_counts["embedding_weight"]
    threshold = int(np.median(counts)) + 1
    kept = seen[counts >= threshold]
    small = model.shrink(threshold)
    for name in ("embedding_weight", "linear_embedding_weight"):
        table, whole = small.spark_model.arg_params[name], full.arg_params[name]
        np.testing.assert_array_equal(table.ids, kept)
        np.testing.assert_array_equal(table.rows, whole.rows[np.isin(whole.ids, kept)])
    full_mb, small_mb = (len(m.payload()["params"]) / 2**20 for m in (full, small.spark_model))
    assert small_mb < full_mb
    limit = (full_mb + small_mb) / 2
    with pytest.raises(ConfigError, match=r"embedding_weight: \d+ rows x 4, linear_embedding_weight: \d+ rows x 1"):
        model.copy({model.maxBroadcastMB: limit}).transform(test).collect()
    names = ["site", "app", "device", "hour"]
    rows = test.select(*names, "click").collect()
    ids = np.stack([hash_column(n, [r[n] if n == "hour" else str(r[n]) for r in rows]) for n in names], axis=1)
    all_kept = np.isin(ids.view(np.int64), kept).all(axis=1)
    assert 0 < all_kept.sum() < len(rows)
    p_full, p_small = (np.array([r.probability[1] for r in m.transform(test).select("probability").collect()])
                       for m in (model, small.copy({small.maxBroadcastMB: limit})))
    np.testing.assert_allclose(p_small[all_kept], p_full[all_kept], rtol=1e-5, atol=1e-7)
    assert np.abs(p_small[~all_kept] - p_full[~all_kept]).max() > 1e-4


def test_an_angel_networks_reg2_reaches_the_trainer(tmp_path):
    """A dense layer's reg2 (wd 1 with per-parameter wd_mult by name, a table layer's 0) goes with the estimator's
    optimizer settings, and SparkTrainer takes multipliers that name the network's parameters."""
    import pathlib

    from sparkps.ctr.features import FeatureSpec
    from sparkps.spark import SparkTrainer
    config = json.loads((pathlib.Path(__file__).resolve().parents[3] / "jobs" / "networks" / "deepfm.json").read_text())
    config["data"].update(numfield=4, indexrange=4096)
    embedding = next(layer for layer in config["layers"] if layer["name"] == "embedding")
    embedding["outputdim"] = 4 * embedding["numfactors"]
    next(layer for layer in config["layers"] if layer["name"] == "fclayer")["optimizer"] = {"type": "adam",
                                                                                         "reg2": 0.01}
    path = tmp_path / "deepfm-reg2.json"
    path.write_text(json.dumps(config))
    symbol, settings = classifier(network=str(path), model="").network_symbol(FeatureSpec(categorical=("a",)))
    args = settings["optimizer_args"]
    assert args["wd"] == 1.0 and args["wd_mult"]["fclayer_0_weight"] == 0.01 and args["wd_mult"]["wide_weight"] == 0
    trainer = SparkTrainer(symbol, (4,), optimizer="adam", optimizer_params=dict(args, learning_rate=0.01),
                           label_name="ctr_label", data_name="ids")
    assert trainer.optimizer_params["wd_mult"]["fclayer_0_weight"] == 0.01
    with pytest.raises(ConfigError, match="names parameter 'no_such_weight'"):
        SparkTrainer(symbol, (4,), optimizer="adam", optimizer_params={"wd_mult": {"no_such_weight": 0.5}},
                     label_name="ctr_label", data_name="ids")

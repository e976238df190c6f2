"""SparkpsCTRClassifier on planted click data in a real local[2] Spark: hashing in the executors, a zoo
model trained by SparkTrainer (2 workers, 1 server), [1-p, p] probabilities that BinaryClassificationEvaluator
reads, a Pipeline saved and loaded, CrossValidator, and errors naming the column."""
import numpy as np
import pytest

from sparkps.errors import ConfigError, DataError
from sparkps.train.io.synthetic_ctr import planted_ctr

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
    from sparkps.spark.ml import SparkpsCTRClassifier
    settings = dict(labelCol="click", categoricalCols=["site", "app", "device", "hour"], model="fm",
                    embeddingDim=4, numEpochs=4, batchSize=128, learningRate=0.05, numWorkers=2,
                    numServers=1)
    settings.update(kwargs)
    return SparkpsCTRClassifier(**settings)


def test_fit_transform_evaluate_save_load(clicks, tmp_path):
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from sklearn.metrics import roc_auc_score
    train, test = clicks
    model = Pipeline(stages=[classifier()]).fit(train)
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

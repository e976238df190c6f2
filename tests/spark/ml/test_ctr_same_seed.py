"""The same seed gives the same model: two fits of SparkpsCTRClassifier (dist_sync, 2 workers) with the same seed hold
out the same rows, deal and order the same rows to each worker and draw the same Dropout masks, so they end with the
same validation AUC and the same weights; another seed holds out other rows."""
import numpy as np
import pytest

from sparkps.ctr.synthetic import planted_ctr

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def clicks(spark):
    """2400 planted clicks in 3 partitions (the fit deals them to 2 workers: a shuffle)."""
    data = planted_ctr(2400, num_fields=4, num_numeric=1, vocab=20, zipf=1.2, seed=11, deep_scale=0.5)
    rows = [(float(y), *[str(v) for v in cats], float(x[0]))
            for y, cats, x in zip(data.labels, data.categorical, data.numeric)]
    return spark.createDataFrame(rows, ["click", "a", "b", "c", "d", "x"]).repartition(3)


def fit(frame, seed):
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    model = SparkpsCTRClassifier(labelCol="click", categoricalCols=["a", "b", "c", "d"], numericCols=["x"],
                                 model="deepfm", embeddingDim=4, hiddenUnits=[16], dropout=0.5, numEpochs=2,
                                 batchSize=64, learningRate=0.01, validationFraction=0.2, earlyStoppingPatience=0,
                                 kvstore="dist_sync", numWorkers=2, numServers=1, seed=seed).fit(frame)
    return model.history[-1]["validation-auc"], model.spark_model.arg_params


def values(param):
    return np.asarray(getattr(param, "rows", param))


def test_two_fits_with_the_same_seed_give_the_same_auc_and_weights(clicks):
    auc, params = fit(clicks, 7)
    again_auc, again = fit(clicks, 7)
    assert again_auc == auc
    assert sorted(again) == sorted(params)
    for name, value in params.items():
        np.testing.assert_array_equal(values(again[name]), values(value), err_msg=name)
        if hasattr(value, "ids"):
            np.testing.assert_array_equal(again[name].ids, value.ids, err_msg=name)
    other_auc, other = fit(clicks, 8)
    assert other_auc != auc
    assert not np.array_equal(values(other["embedding_weight"]), values(params["embedding_weight"]))

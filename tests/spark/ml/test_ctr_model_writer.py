"""SparkpsCTRModel's pyspark.ml writer: the metadata counts epochs from 1 (as the jobs' summaries), a save over an
existing path without overwrite() is one error naming the path, and write().overwrite().save() replaces it with a
model that loads back predicting the same."""
import numpy as np
import pytest

from sparkps.ctr.synthetic import planted_ctr
from sparkps.errors import ConfigError

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def small_fit(spark):
    """An FM of 2 epochs on 600 planted clicks (3 string fields), and the frame."""
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier
    data = planted_ctr(600, num_fields=3, num_numeric=0, vocab=8, zipf=1.2, seed=3, deep_scale=0.0)
    rows = [(float(y), *[str(v) for v in cats]) for y, cats in zip(data.labels, data.categorical)]
    frame = spark.createDataFrame(rows, ["click", "a", "b", "c"]).repartition(2).cache()
    model = SparkpsCTRClassifier(labelCol="click", categoricalCols=["a", "b", "c"], model="fm", embeddingDim=4,
                                 numEpochs=2, batchSize=64, learningRate=0.05, numWorkers=2, numServers=1).fit(frame)
    return model, frame


def probabilities(model, frame):
    return np.array([r.probability[1] for r in model.transform(frame).select("probability").collect()])


def test_the_saved_metadata_counts_epochs_from_1(small_fit, tmp_path, spark):
    from pyspark.ml.util import DefaultParamsReader
    model, _ = small_fit
    path = str(tmp_path / "model")
    model.write().save(path)
    metadata = DefaultParamsReader.loadMetadata(path, spark.sparkContext)
    assert metadata["epochs"] == 2
    assert [entry["epoch"] for entry in metadata["history"]] == [1, 2]
    assert [entry["logloss"] for entry in metadata["history"]] == [entry["logloss"] for entry in model.history]


def test_save_over_a_path_needs_overwrite_which_replaces_it(small_fit, tmp_path):
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRModel
    model, frame = small_fit
    path = str(tmp_path / "ctr-model")
    model.write().save(path)
    smaller = model.shrink(10**9)           # every row dropped: other predictions
    with pytest.raises(ConfigError, match="%s already exists: save with write\\(\\).overwrite\\(\\)" % path):
        smaller.write().save(path)
    np.testing.assert_allclose(probabilities(SparkpsCTRModel.load(path), frame), probabilities(model, frame),
                               rtol=1e-5, atol=1e-6)          # the refused save left the model as it was
    smaller.write().overwrite().save(path)
    expected = probabilities(smaller, frame)
    assert np.abs(expected - probabilities(model, frame)).max() > 1e-3
    np.testing.assert_allclose(probabilities(SparkpsCTRModel.load(path), frame), expected, rtol=1e-5, atol=1e-6)

"""Prediction and persistence on a Spark Connect session (no SparkContext, no sc.broadcast): a model made and saved
on the classic local[2] session loads on Connect and scores the same, and back; the CTR model scores its raw
columns on Connect; a Pipeline with a sparkps stage saves and loads there.

Models: an MLP on scikit-learn's digits trained ten epochs in this process (FeedForward), and ``packed_fm``
(tests/packed_fm.py: an FM with two sparse tables over three hashed fields, its SparkModel saved with a packed
input layout as models of earlier versions were).
"""
import numpy as np
import pytest

from connect_session import classic_mode
from packed_fm import packed_fm

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def digits_model(digits):
    """A SparkpsClassificationModel of an MLP [64, 16, 10] trained ten epochs on the digits in this process."""
    from sparkps.nets.mlp import mlp_symbol
    from sparkps.spark.ml import SparkpsClassificationModel
    from sparkps.spark.model.spark_model import SparkModel
    from sparkps.train.feedforward import FeedForward
    X, y = digits[0], digits[1]
    net = mlp_symbol([64, 16, 10])
    ff = FeedForward(net, num_epoch=10, optimizer="sgd", learning_rate=0.1, momentum=0.9, numpy_batch_size=32, seed=0)
    ff.fit(X, y)
    model = SparkpsClassificationModel(SparkModel(net, ff.arg_params, ff.aux_params, input_shape=(64,)))
    model._set(layers=[64, 16, 10])
    return model


def digits_frame(session, X):
    from pyspark.ml.linalg import Vectors
    return session.createDataFrame([(i, Vectors.dense(row.tolist())) for i, row in enumerate(X)], ["id", "features"])


def probabilities(scored):
    rows = sorted(scored.select("id", "probability", "prediction").collect(), key=lambda r: r.id)
    return np.array([r.probability.toArray() for r in rows]), np.array([r.prediction for r in rows])


def test_a_model_saved_on_classic_scores_the_same_on_connect_and_back(classic, connect, digits, digits_model,
                                                                      tmp_path):
    from sparkps.spark.ml import SparkpsClassificationModel
    X_test = digits[2][:120]
    expected = digits_model.spark_model.predict_numpy(X_test)
    with classic_mode():
        digits_model.write().overwrite().save(str(tmp_path / "classic"))
        on_classic, _ = probabilities(digits_model.transform(digits_frame(classic, X_test)))
    loaded = SparkpsClassificationModel.load(str(tmp_path / "classic"))
    on_connect, predicted = probabilities(loaded.transform(digits_frame(connect, X_test)))
    np.testing.assert_allclose(on_connect, expected, atol=1e-6)
    np.testing.assert_allclose(on_classic, expected, atol=1e-6)
    np.testing.assert_array_equal(predicted, expected.argmax(axis=1))
    assert (predicted == digits[3][:120]).mean() > 0.8           # a trained model, not noise
    loaded.write().overwrite().save(str(tmp_path / "connect"))   # written on Connect (the metadata by the server)
    loaded.write().overwrite().save(str(tmp_path / "connect"))   # overwrite() with no JVM on this side
    with classic_mode():
        again = SparkpsClassificationModel.load(str(tmp_path / "connect"))
        back, _ = probabilities(again.transform(digits_frame(classic, X_test)))
    np.testing.assert_allclose(back, expected, atol=1e-6)
    with pytest.raises(Exception, match="already exists"):
        loaded.write().save(str(tmp_path / "connect"))


def test_a_model_above_the_inline_size_is_read_from_its_folder(connect, digits, digits_model, tmp_path):
    """A model larger than what ships inside the UDF is read by the Python workers from the folder it was saved in
    (here: forced with inline_bytes=0); an unsaved one on a local master from a temporary folder."""
    from sparkps.spark.ml import SparkpsClassificationModel
    X_test = digits[2][:40]
    expected = digits_model.spark_model.predict_numpy(X_test)
    digits_model.write().overwrite().save(str(tmp_path / "m"))
    loaded = SparkpsClassificationModel.load(str(tmp_path / "m"))
    loaded.spark_model.inline_bytes = 0
    source = loaded.spark_model.source(connect)
    assert source["path"] == str(tmp_path / "m" / "weights") and "params" not in source
    np.testing.assert_allclose(probabilities(loaded.transform(digits_frame(connect, X_test)))[0], expected,
                               atol=1e-6)
    unsaved = digits_model.copy()
    unsaved.spark_model = _fresh(digits_model.spark_model)
    unsaved.spark_model.inline_bytes = 0
    np.testing.assert_allclose(probabilities(unsaved.transform(digits_frame(connect, X_test)))[0], expected,
                               atol=1e-6)
    assert unsaved.spark_model.saved_path and unsaved.spark_model.saved_path.startswith("/")


def _fresh(spark_model):
    """A copy of ``spark_model`` that was never saved."""
    from sparkps.spark.model.spark_model import SparkModel
    return SparkModel(spark_model.symbol_json, spark_model.arg_params, spark_model.aux_params,
                      input_shape=spark_model.input_shape)


@pytest.fixture(scope="module")
def ctr_model():
    """(SparkpsCTRModel over string columns a, b, c around ``packed_fm``, its packed rows, the column values)."""
    from sparkps.ctr.numeric import NumericStats
    from sparkps.ctr.synthetic import planted_ctr
    from sparkps.spark.ml import SparkpsCTRModel
    from sparkps.spark.ml.ctr_classifier import stats_to_json
    spark_model, packed = packed_fm()
    data = planted_ctr(1500, num_fields=3, num_numeric=0, vocab=40, zipf=1.3, seed=1, deep_scale=0.0)
    model = SparkpsCTRModel(spark_model)
    stats = NumericStats([], [], [], [])
    stats.widths = {}
    model._set(categoricalCols=["a", "b", "c"], model="fm", embeddingDim=4, numericStats=stats_to_json(stats))
    return model, packed, [[str(v) for v in row] for row in data.ranks[:300].tolist()]


def click_probabilities(model, session, cells):
    frame = session.createDataFrame([(i, *row) for i, row in enumerate(cells)], ["id", "a", "b", "c"])
    rows = sorted(model.transform(frame).select("id", "probability", "rawPrediction", "prediction").collect(),
                  key=lambda r: r.id)
    return np.array([r.probability[1] for r in rows]), rows


def test_the_ctr_model_scores_typed_columns_on_connect_as_its_packed_rows(classic, connect, ctr_model, tmp_path):
    """The CTR model reads its columns' ids straight from Arrow (no float planes) on both session kinds, and a model
    whose saved metadata names the packed layout of earlier versions predicts exactly what its packed rows give."""
    from sparkps.spark.ml import SparkpsCTRModel
    model, packed, cells = ctr_model
    expected = model.spark_model.predict_numpy(packed[:len(cells)])[:, 0]
    p, rows = click_probabilities(model, connect, cells)
    np.testing.assert_allclose(p, expected, rtol=1e-5, atol=1e-7)
    logit = np.log(p / (1 - p))
    np.testing.assert_allclose([r.rawPrediction[1] for r in rows], logit, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal([r.prediction for r in rows], (p > 0.5).astype(float))
    with classic_mode():
        model.write().overwrite().save(str(tmp_path / "ctr"))
        p_classic, _ = click_probabilities(model, classic, cells)
    np.testing.assert_allclose(p_classic, expected, rtol=1e-5, atol=1e-7)
    loaded = SparkpsCTRModel.load(str(tmp_path / "ctr"))
    assert loaded.spark_model.input_layout is not None          # the saved metadata names the packed layout
    np.testing.assert_allclose(click_probabilities(loaded, connect, cells)[0], expected, rtol=1e-5, atol=1e-7)


def test_a_pipeline_with_a_sparkps_stage_saves_and_loads_on_connect(connect, ctr_model, tmp_path):
    from pyspark.ml import Pipeline, PipelineModel

    from sparkps.spark.ml import SparkpsCTRClassifier
    model, packed, cells = ctr_model
    expected = model.spark_model.predict_numpy(packed[:len(cells)])[:, 0]
    fitted = PipelineModel(stages=[model])
    fitted.write().overwrite().save(str(tmp_path / "fitted"))
    again = PipelineModel.load(str(tmp_path / "fitted"))
    np.testing.assert_allclose(click_probabilities(again, connect, cells)[0], expected, rtol=1e-5, atol=1e-7)
    estimator = SparkpsCTRClassifier(categoricalCols=["a", "b", "c"], model="fm", numEpochs=3,
                                     resourceProfile="task.cpus=1")
    Pipeline(stages=[estimator]).write().overwrite().save(str(tmp_path / "pipeline"))
    estimator.write().overwrite().save(str(tmp_path / "estimator"))
    estimator.write().overwrite().save(str(tmp_path / "estimator"))      # overwrite() needs no JVM here
    for stage in (Pipeline.load(str(tmp_path / "pipeline")).getStages()[0],
                  SparkpsCTRClassifier.load(str(tmp_path / "estimator"))):
        assert isinstance(stage, SparkpsCTRClassifier)
        assert stage.getOrDefault("numEpochs") == 3 and stage.getOrDefault("model") == "fm"
        assert stage.getResourceProfile() == "task.cpus=1"


def test_a_store_the_client_cannot_reach_is_one_error_before_anything_is_written(connect, ctr_model, tmp_path,
                                                                                 monkeypatch):
    import os

    from sparkps.errors import ConfigError
    model = ctr_model[0]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^viewfs://cluster/models/m: a Spark Connect session reads and writes a "
                                          r"model's files from this Python process, which cannot reach a viewfs:// "
                                          r"store \(no JVM here\)"):
        model.write().save("viewfs://cluster/models/m")
    assert os.listdir(tmp_path) == []

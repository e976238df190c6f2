"""How transform ships a model to the executors, without a SparkContext (``SparkModel.source``): inside the UDF when
small, else the folder of its saved files, read once per Python worker; no folder and no local master is one
ConfigError saying what to do. Runs in this process (the worker side is ``predictor_for``), no Spark session.

Model: ``packed_fm`` (tests/packed_fm.py: an FM with two sparse tables, trained one epoch in one process)."""
import numpy as np
import pytest

from packed_fm import PACKED, packed_fm
from sparkps.errors import ConfigError
from sparkps.spark.model.predictor import WORKER_PREDICTORS, predictor_for


@pytest.fixture(scope="module")
def trained():
    return packed_fm()


def test_a_small_model_travels_inside_the_udf(trained):
    spark_model, X = trained
    source = spark_model.source()
    assert source["params"] and source["id"] == spark_model.model_id
    np.testing.assert_allclose(predictor_for(source).predict(X[:50]), spark_model.predict_numpy(X[:50]), atol=1e-6)


def test_a_large_model_is_read_from_the_folder_it_was_saved_in(trained, tmp_path):
    from sparkps.spark.model.spark_model import SparkModel
    spark_model, X = trained
    spark_model.save(str(tmp_path / "m"))
    loaded = SparkModel.load("file:" + str(tmp_path / "m"))
    loaded.inline_bytes = 0
    source = loaded.source()
    assert source == {"id": loaded.model_id, "path": str(tmp_path / "m"), "batch_size": loaded.batch_size,
                      "input_shape": list(loaded.input_shape), "input_layout": loaded.input_layout.to_list()}
    assert WORKER_PREDICTORS.cached(loaded.model_id) is None
    np.testing.assert_allclose(predictor_for(source).predict(X[:50]), spark_model.predict_numpy(X[:50]), atol=1e-6)
    assert WORKER_PREDICTORS.cached(loaded.model_id) is not None       # read once, kept for later batches


def test_a_large_unsaved_model_off_a_local_master_says_where_to_put_it(trained):
    from sparkps.spark.model.spark_model import SparkModel
    spark_model, _ = trained
    fresh = SparkModel(spark_model.symbol_json, spark_model.arg_params, input_shape=spark_model.input_shape,
                       label_name="ctr_label", input_layout=spark_model.input_layout)
    fresh.inline_bytes = 0
    with pytest.raises(ConfigError, match=r"more than ships inside a Spark task .*\(model.save\(path\) .* "
                                          r"spark.sparkps.modelDir"):
        fresh.source()
    fresh.max_broadcast_bytes = 10
    with pytest.raises(ConfigError, match=r"above the broadcast limit .* embedding_weight"):
        fresh.source()


def test_a_model_of_either_input_shape_saved_and_loaded_scores_the_same(trained, tmp_path):
    """A CTR model saved before the typed layout (``input_shape`` the packed row's width) and one saved now (the
    typed row's values) load with their own ``input_shape`` and score packed rows, typed rows and named inputs
    alike."""
    from sparkps.spark.model.spark_model import SparkModel
    spark_model, X = trained
    typed = spark_model.input_layout
    now = SparkModel(spark_model.symbol_json, spark_model.arg_params, spark_model.aux_params,
                     input_shape=(typed.columns,), label_name="ctr_label", input_layout=typed)
    expected = spark_model.predict_numpy(X[:50])
    inputs = PACKED.split(X[:50])
    for model, folder in ((spark_model, "earlier"), (now, "now")):
        model.save(str(tmp_path / folder))
        loaded = SparkModel.load(str(tmp_path / folder))
        assert loaded.input_shape == model.input_shape and loaded.input_layout.to_list() == typed.to_list()
        np.testing.assert_allclose(loaded.predict_numpy(X[:50]), expected, atol=1e-6)
        np.testing.assert_allclose(loaded.predict_numpy(typed.rows(inputs)), expected, atol=1e-6)
        np.testing.assert_allclose(loaded.predict_numpy(inputs), expected, atol=1e-6)

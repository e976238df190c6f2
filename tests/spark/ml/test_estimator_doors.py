"""What a new user of the pyspark.ml estimators meets first: a count param out of range, a model saved where it
cannot be, a damaged params file, a folder loaded by the wrong class, a strategy the CTR model cannot train with.
Each is one error naming the thing at fault (the param the user set, the path, the file, the class that loads it),
before any Spark job where the settings alone are at fault."""
import os

import numpy as np
import pytest

from sparkps.errors import ConfigError, DataError

pytestmark = pytest.mark.spark


def ctr(**settings):
    from sparkps.spark.ml import SparkpsCTRClassifier
    base = dict(labelCol="click", categoricalCols=["site", "app"], model="lr", numEpochs=1, batchSize=8, numWorkers=1,
                numServers=1, validationFraction=0.0)
    return SparkpsCTRClassifier(**{**base, **settings})


def mlp(**settings):
    from sparkps.spark.ml import SparkpsClassifier
    return SparkpsClassifier(layers=[4, 3, 2], **settings)


@pytest.mark.parametrize("make", [ctr, mlp], ids=["ctr", "classifier"])
@pytest.mark.parametrize("settings, message", [
    (dict(numWorkers=0), "param numWorkers must be a whole number >= 1, got 0"),
    (dict(numWorkers=-2), "param numWorkers must be a whole number >= 1, got -2"),
    (dict(numServers=0), "param numServers must be a whole number >= 1, got 0"),
    (dict(numWorkers=2, numServers=3), "numServers=3 > numWorkers=2: each server starts beside one worker task, "
                                       "so use numServers <= numWorkers"),
    (dict(numEpochs=0), "param numEpochs must be a whole number >= 1, got 0"),
    (dict(batchSize=0), "param batchSize must be a whole number >= 1, got 0"),
])
def test_a_count_out_of_range_is_one_error_naming_the_param_before_any_spark_job(make, settings, message):
    with pytest.raises(ConfigError) as caught:
        make(**settings).fit(None)        # no data is read: the params fail first
    assert str(caught.value) == message


def test_an_unknown_strategy_of_the_ctr_estimator_lists_only_those_it_can_train_with():
    with pytest.raises(ConfigError) as caught:
        ctr(kvstore="dist_sink").fit(None)
    assert str(caught.value) == ("kvstore must be one of dist_sync, dist_async, dist_sync_replicas, got 'dist_sink' "
                                 "(dist_model_average and dist_easgd train on the workers' own weights and cannot "
                                 "train sparse tables)")
    with pytest.raises(ConfigError) as caught:
        mlp(kvstore="dist_sink").fit(None)
    assert "dist_model_average, dist_easgd, got 'dist_sink'" in str(caught.value)


@pytest.fixture(scope="module")
def ctr_model(spark):
    """A SparkpsCTRModel (lr, one epoch, its tables inline in the params file) fitted on 40 rows."""
    rows = [(float(i % 2), "s%d" % (i % 3), "a%d" % (i % 5)) for i in range(40)]
    return ctr().fit(spark.createDataFrame(rows, ["click", "site", "app"]))


@pytest.fixture(scope="module")
def mlp_model():
    """A SparkpsClassificationModel of an untrained MLP [4, 3, 2] (no fit needed to save and load one)."""
    from sparkps.nets.mlp import mlp_symbol
    from sparkps.spark.ml import SparkpsClassificationModel
    from sparkps.spark.model.spark_model import SparkModel
    from sparkps.train.feedforward import FeedForward
    net = mlp_symbol([4, 3, 2])
    ff = FeedForward(net, num_epoch=1, seed=0)
    ff.fit(np.random.default_rng(0).normal(size=(16, 4)).astype("float32"), np.arange(16) % 2)
    model = SparkpsClassificationModel(SparkModel(net, ff.arg_params, ff.aux_params, input_shape=(4,)))
    model._set(layers=[4, 3, 2])
    return model


@pytest.mark.parametrize("which", ["ctr", "classifier"])
def test_saving_where_nothing_can_be_written_is_one_line_naming_the_path(ctr_model, mlp_model, tmp_path, which):
    model = ctr_model if which == "ctr" else mlp_model
    with pytest.raises(ConfigError) as caught:
        model.write().overwrite().save("/proc/sparkps-model")
    assert str(caught.value) == "cannot save the model to /proc/sparkps-model: No such file or directory"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError) as caught:
        model.write().save(str(blocker / "model"))
    assert str(caught.value) == "cannot save the model to %s: Not a directory" % (blocker / "model")


def test_a_truncated_params_file_of_an_inline_model_is_named(ctr_model, tmp_path):
    from sparkps.spark.ml import SparkpsCTRModel
    path = str(tmp_path / "ctr")
    ctr_model.write().save(path)
    assert SparkpsCTRModel.load(path).spark_model.table_manifest is None       # the tables are inline
    params = [name for name in os.listdir(os.path.join(path, "weights")) if name.endswith(".params")]
    assert len(params) == 1
    damaged = os.path.join(path, "weights", params[0])
    data = open(damaged, "rb").read()
    with open(damaged, "wb") as handle:
        handle.write(data[:len(data) // 2])
    with pytest.raises(DataError) as caught:
        SparkpsCTRModel.load(path)
    assert str(caught.value).startswith("params file %s is damaged (truncated or overwritten): " % damaged)
    assert "\n" not in str(caught.value)


def test_a_folder_loaded_by_the_other_models_class_says_what_it_holds(ctr_model, mlp_model, tmp_path):
    from sparkps.spark.ml import SparkpsClassificationModel, SparkpsCTRModel
    ctr_path, mlp_path = str(tmp_path / "ctr"), str(tmp_path / "mlp")
    ctr_model.write().save(ctr_path)
    mlp_model.write().save(mlp_path)
    with pytest.raises(ConfigError) as caught:
        SparkpsClassificationModel.load(ctr_path)
    assert str(caught.value) == ("%s holds a SparkpsCTRModel, not a SparkpsClassificationModel: load it with "
                                 "SparkpsCTRModel.load(%r)" % (ctr_path, ctr_path))
    with pytest.raises(ConfigError) as caught:
        SparkpsCTRModel.load(mlp_path)
    assert str(caught.value) == ("%s holds a SparkpsClassificationModel, not a SparkpsCTRModel: load it with "
                                 "SparkpsClassificationModel.load(%r)" % (mlp_path, mlp_path))
    assert type(SparkpsCTRModel.load(ctr_path)) is SparkpsCTRModel        # each still loads its own
    assert type(SparkpsClassificationModel.load(mlp_path)) is SparkpsClassificationModel


def test_a_spark_model_folder_or_a_jobs_output_folder_is_named_for_what_it_is(mlp_model, tmp_path):
    """jobs/train_classifier.py writes OUTPUT/model as a SparkModel folder (metadata.json, no pyspark.ml
    metadata): loading either folder with a pyspark.ml model class says what it is, not PATH_NOT_FOUND."""
    from sparkps.spark.ml import SparkpsCTRModel
    output = tmp_path / "out"
    output.mkdir()
    mlp_model.spark_model.save(str(output / "model"))
    (output / "summary.json").write_text("{}")
    model = str(output / "model")
    with pytest.raises(ConfigError) as caught:
        SparkpsCTRModel.load(model)
    assert str(caught.value) == ("%s holds a SparkModel (the model jobs/train_classifier.py and SparkTrainer.fit "
                                 "save), not a pyspark.ml model: load it with sparkps.spark.SparkModel.load(%r)"
                                 % (model, model))
    with pytest.raises(ConfigError) as caught:
        SparkpsCTRModel.load(str(output))
    assert str(caught.value) == ("%s is a job's output folder, not a model: its model is %s (load it with "
                                 "SparkModel.load(%r))" % (output, model, model))
    with pytest.raises(ConfigError) as caught:
        SparkpsCTRModel.load(str(tmp_path / "nothing"))
    assert str(caught.value) == "%s: no such model folder" % (tmp_path / "nothing")

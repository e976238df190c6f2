"""Saved Spark models written by release 0.1.0 (``tests/data/release_0_1``, see its README) load with this code and
predict what 0.1.0 predicted: a ``SparkModel`` folder and fitted pyspark.ml Pipelines of ``SparkpsClassifier`` and
``SparkpsCTRClassifier``, whose stages record 0.1.0's class paths (``sparkps.spark.ml.*``, ``sparkps.spark.ctr.*``).
What this code saves carries format 2, and a newer format is a DataError naming the file and both versions."""
import glob
import json
import os
import shutil

import numpy as np
import pytest

from sparkps.errors import DataError
from sparkps.spark.model.spark_model import SparkModel

RELEASE_0_1 = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), 'data', 'release_0_1')


@pytest.fixture(scope='module')
def expected():
    with open(os.path.join(RELEASE_0_1, 'expected.json'), encoding='utf-8') as handle:
        recorded = json.load(handle)
    assert recorded['sparkps_version'] == '0.1.0'
    return recorded


def copy_of(name, tmp_path):
    """A copy of a 0.1.0 fixture folder (what a test saves or edits never touches the committed one)."""
    target = tmp_path / name
    shutil.copytree(os.path.join(RELEASE_0_1, name), target)
    return str(target)


def test_a_spark_model_of_0_1_predicts_as_0_1_did_and_saves_as_format_3(expected, tmp_path):
    saved = expected['spark_model']
    with open(os.path.join(RELEASE_0_1, saved['path'], 'metadata.json'), encoding='utf-8') as handle:
        assert json.load(handle)['format'] == 'sparkps.SparkModel/1'
    model = SparkModel.load(os.path.join(RELEASE_0_1, saved['path']))
    assert model.epoch == 1 and model.input_shape == (64,) and model.history == [{'epoch': 0, 'accuracy': 0.5}]
    inputs = np.array(saved['inputs'], np.float32)
    np.testing.assert_allclose(model.predict_numpy(inputs), np.array(saved['outputs']), rtol=1e-5, atol=1e-7)

    path = str(tmp_path / 'again')
    model.save(path)
    with open(os.path.join(path, 'metadata.json'), encoding='utf-8') as handle:
        saved_meta = json.load(handle)
    assert saved_meta['format'] == 'sparkps.SparkModel/3'
    assert saved_meta['history'] == [{'epoch': 1, 'accuracy': 0.5}]         # counted from 1 on disk
    assert SparkModel.load(path).history == model.history                     # and from 0 in memory again
    with np.load(os.path.join(path, 'model-0001.params'), allow_pickle=False) as archive:
        assert int(archive['meta:format']) == 2
    np.testing.assert_allclose(SparkModel.load(path).predict_numpy(inputs), np.array(saved['outputs']),
                               rtol=1e-5, atol=1e-7)


def test_a_spark_model_of_a_newer_or_foreign_format_names_its_metadata(tmp_path):
    path = copy_of('spark_model', tmp_path)
    meta_path = os.path.join(path, 'metadata.json')
    with open(meta_path, encoding='utf-8') as handle:
        meta = json.load(handle)
    for fmt, message in [('sparkps.SparkModel/5', r"SparkModel format 5 by a newer sparkps; .* formats 1 to 4"),
                         ('somebody.Else/1', "is not a sparkps SparkModel")]:
        with open(meta_path, 'w', encoding='utf-8') as handle:
            json.dump(dict(meta, format=fmt), handle)
        with pytest.raises(DataError, match=r"spark_model/metadata\.json: .*" + message):
            SparkModel.load(path)
    with open(meta_path, 'w', encoding='utf-8') as handle:       # format 3 counts epochs from 1
        json.dump(dict(meta, format='sparkps.SparkModel/3', history=[{'epoch': 0, 'accuracy': 0.5}]), handle)
    with pytest.raises(DataError, match=r"metadata\.json: every history entry needs an epoch counted from 1"):
        SparkModel.load(path)
    del meta['format']                                      # no format: version 1
    with open(meta_path, 'w', encoding='utf-8') as handle:
        json.dump(meta, handle)
    assert SparkModel.load(path).epoch == 1


def probability_rows(frame):
    rows = frame.select('probability', 'prediction').collect()
    return np.stack([r.probability.toArray() for r in rows]), [r.prediction for r in rows]


def stage_metadata(path):
    (meta_file,) = glob.glob(os.path.join(path, 'stages', '*', 'metadata', 'part-*'))
    with open(meta_file, encoding='utf-8') as handle:
        return meta_file, json.loads(handle.read())


@pytest.mark.spark
def test_a_classifier_pipeline_of_0_1_predicts_as_0_1_did(spark, expected, tmp_path):
    from pyspark.ml import PipelineModel
    from pyspark.ml.linalg import Vectors

    from sparkps.spark.ml import SparkpsClassificationModel
    saved = expected['classifier_pipeline']
    path = copy_of(saved['path'], tmp_path)
    assert stage_metadata(path)[1]['class'] == 'sparkps.spark.ml.SparkpsClassificationModel'
    assert 'sparkpsFormat' not in stage_metadata(path)[1]
    model = PipelineModel.load(path)
    stage = model.stages[-1]
    assert isinstance(stage, SparkpsClassificationModel) and stage.getOrDefault('layers') == [64, 16, 10]
    frame = spark.createDataFrame([(Vectors.dense(x),) for x in saved['inputs']], ['features'])
    probability, prediction = probability_rows(model.transform(frame))
    np.testing.assert_allclose(probability, np.array(saved['probability']), rtol=1e-5, atol=1e-7)
    assert prediction == saved['prediction']

    again = str(tmp_path / 'saved-again')                  # saved now: format 2, today's class path
    model.write().overwrite().save(again)
    meta_file, meta = stage_metadata(again)
    assert meta['sparkpsFormat'] == 2 and meta['class'] == 'sparkps.spark.ml.classifier.SparkpsClassificationModel'
    probability_again, _ = probability_rows(PipelineModel.load(again).transform(frame))
    np.testing.assert_allclose(probability_again, probability, rtol=1e-6, atol=1e-7)

    with open(meta_file, 'w', encoding='utf-8') as handle:     # a newer sparkps wrote it
        handle.write(json.dumps(dict(meta, sparkpsFormat=3)) + '\n')
    folder, name = os.path.split(meta_file)
    os.remove(os.path.join(folder, '.%s.crc' % name))          # Hadoop's checksum of the old text
    with pytest.raises(DataError, match=r"saved-again/stages/.*: .*model format 3 by a newer sparkps; .*"
                                        r"formats 1 to 2"):
        PipelineModel.load(again)


@pytest.mark.spark
def test_a_ctr_pipeline_of_0_1_predicts_as_0_1_did(spark, expected, tmp_path):
    from pyspark.ml import PipelineModel

    from sparkps.spark.ml import SparkpsCTRModel
    saved = expected['ctr_pipeline']
    path = copy_of(saved['path'], tmp_path)
    assert stage_metadata(path)[1]['class'] == 'sparkps.spark.ctr.SparkpsCTRModel'
    model = PipelineModel.load(path)
    stage = model.stages[-1]
    assert isinstance(stage, SparkpsCTRModel) and stage.spark_model.input_layout is not None
    assert stage.spark_model.table_counts, "0.1.0 saved how often each id was seen"
    frame = spark.createDataFrame([tuple(row) for row in saved['rows']], saved['columns'])
    probability, prediction = probability_rows(model.transform(frame))
    np.testing.assert_allclose(probability, np.array(saved['probability']), rtol=1e-5, atol=1e-7)
    assert prediction == saved['prediction']

    again = str(tmp_path / 'saved-again')
    model.write().overwrite().save(again)
    meta = stage_metadata(again)[1]
    assert meta['sparkpsFormat'] == 2 and meta['class'] == 'sparkps.spark.ml.ctr_classifier.SparkpsCTRModel'
    probability_again, _ = probability_rows(PipelineModel.load(again).transform(frame))
    np.testing.assert_allclose(probability_again, probability, rtol=1e-6, atol=1e-7)


@pytest.mark.spark
def test_pipelines_of_0_1_estimators_load_with_their_params(spark, tmp_path):
    """Unfitted Pipelines saved by 0.1.0 record ``sparkps.spark.ml.SparkpsClassifier`` and
    ``sparkps.spark.ctr.SparkpsCTRClassifier``: both load, with the Params 0.1.0 set."""
    from pyspark.ml import Pipeline

    from sparkps.spark.ml import SparkpsClassifier, SparkpsCTRClassifier
    path = copy_of('classifier_estimator_pipeline', tmp_path)
    assert stage_metadata(path)[1]['class'] == 'sparkps.spark.ml.SparkpsClassifier'
    (classifier,) = Pipeline.load(path).getStages()
    assert isinstance(classifier, SparkpsClassifier)
    assert classifier.getOrDefault('layers') == [64, 16, 10] and classifier.getOrDefault('numEpochs') == 1
    assert classifier.getOrDefault('seed') == 3

    path = copy_of('ctr_estimator_pipeline', tmp_path)
    assert stage_metadata(path)[1]['class'] == 'sparkps.spark.ctr.SparkpsCTRClassifier'
    (ctr,) = Pipeline.load(path).getStages()
    assert isinstance(ctr, SparkpsCTRClassifier)
    assert ctr.getOrDefault('categoricalCols') == ['site', 'app', 'hour'] and ctr.getOrDefault('model') == 'fm'
    assert ctr.getOrDefault('numericCols') == ['count'] and ctr.getOrDefault('labelCol') == 'click'

"""``sparkps plan`` sizes the optimizer the CTR estimator trains with (Adam: two state arrays per row) unless told
otherwise, and reads the optimizer and embedding width of a saved CTR model or estimator (``--model``)."""
import json

import pytest
from click.testing import CliRunner

from sparkps.nets.ctr_defaults import CTR_DEFAULTS
from sparkps.plan.command import plan

BASE = ['--workers', '4', '--servers', '2', '--rows', '10M', '--json']


def figures(*flags):
    result = CliRunner().invoke(plan, BASE + list(flags))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_default_optimizer_is_the_ctr_estimators():
    assert CTR_DEFAULTS["optimizer"] == "adam"
    default = figures()
    assert default['workload']['optimizer'] == 'adam'
    assert default == figures('--optimizer', 'adam')
    assert figures('--optimizer', 'adagrad')['workload']['optimizer'] == 'adagrad'
    assert '(default: --model\'s, else adam' in CliRunner().invoke(plan, ['--help']).output


def test_a_folder_without_a_saved_model_is_a_usage_error_naming_it(tmp_path):
    result = CliRunner().invoke(plan, BASE + ['--model', str(tmp_path)])
    assert result.exit_code == 2
    assert "--model %s holds no saved pyspark.ml model or estimator" % tmp_path in result.output


@pytest.mark.spark
def test_a_saved_estimators_optimizer_and_width_are_read_unless_given(spark, tmp_path):
    from sparkps.spark.ml import SparkpsCTRClassifier
    path = str(tmp_path / "estimator")
    SparkpsCTRClassifier(categoricalCols=["site"], optimizer="sgd", embeddingDim=8).write().save(path)
    saved = figures('--model', path)['workload']
    assert (saved['optimizer'], saved['dim']) == ('sgd', 8)
    given = figures('--model', path, '--optimizer', 'adagrad', '--dim', '32')['workload']
    assert (given['optimizer'], given['dim']) == ('adagrad', 32)
    path = str(tmp_path / "defaults")
    SparkpsCTRClassifier(categoricalCols=["site"]).write().save(path)
    defaults = figures('--model', path)['workload']
    assert (defaults['optimizer'], defaults['dim']) == ('adam', CTR_DEFAULTS["embeddingDim"])

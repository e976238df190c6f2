"""A CTR model registered with the zoo (``sparkps.nets.zoo.register``) is accepted by the estimator's ``model`` param
and the job's ``--model`` with no other edit; an unregistered name is one ConfigError naming it, before Spark."""
import importlib.util
import os

import pytest

import sparkps.symbol as sym
from sparkps.ctr.features import FeatureSpec
from sparkps.errors import ConfigError
from sparkps.nets import zoo
from sparkps.nets.blocks import click_head, field_embedding, flat_features, linear_term
from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier
from sparkps.spark.submit.job_settings import check_ctr_settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NAME = "embedsum"


def embedsum(inputs):
    """A new model of existing ops: the linear term plus one linear layer over the flat field embeddings."""
    flat = flat_features(inputs, field_embedding(inputs))
    return click_head([linear_term(inputs), sym.FullyConnected(flat, num_hidden=1, name="embedsum_out")])


@pytest.fixture
def registered():
    zoo.register(NAME, embedsum, deep=False)
    yield NAME
    zoo.unregister(NAME)


def train_ctr_args(*flags):
    spec = importlib.util.spec_from_file_location("train_ctr", os.path.join(ROOT, "jobs", "train_ctr.py"))
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    return job.parse_args(["--demo", *flags])


def test_an_unregistered_model_is_refused_by_the_estimator_and_the_job():
    with pytest.raises(ConfigError, match="unknown CTR model 'embedsum'; known: lr, fm"):
        SparkpsCTRClassifier(model=NAME, categoricalCols=["a"]).fit(None)     # no Spark: the param fails first
    with pytest.raises(ConfigError, match="--model 'embedsum' is not a zoo model"):
        check_ctr_settings(train_ctr_args("--model", NAME))


def test_a_registered_model_is_accepted_by_the_estimator_and_the_job(registered):
    clf = SparkpsCTRClassifier(model=registered, categoricalCols=["a", "b"], embeddingDim=4)
    assert clf.zoo_model() == registered
    spec = FeatureSpec(categorical=["a", "b"], embedding_dim=4)
    symbol, _ = clf.network_symbol(spec)
    assert "embedsum_out_weight" in symbol.list_arguments()
    args = train_ctr_args("--model", registered)
    check_ctr_settings(args)              # the job's --model check reads the registry
    assert NAME in zoo.names() and NAME not in zoo.deep_names()


def test_a_name_registered_twice_for_another_function_is_refused(registered):
    with pytest.raises(ConfigError, match="already registered"):
        zoo.register(registered, zoo.fm, deep=False)

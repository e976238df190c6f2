"""The estimators' ``initialModel``: a fit that starts from a fitted or saved model (docs/warm_start.md).

    clf = SparkpsCTRClassifier(labelCol='click', initialModel='/models/ctr/2026-11-28')    # or a fitted model
    today = clf.fit(todays_clicks)        # yesterday's weights and table rows, yesterday's featurization

The value is a fitted model of the estimator's kind or the path of a saved one (``write().save(path)``), as
xgboost.spark's ``xgb_model`` and SynapseML's ``modelString`` take one. A CTR fit then encodes its input exactly as
the initial model did: its columns, hashing, id range, multi-valued widths, numeric statistics, label strings, and
its network (model, embedding width, hidden units, tables, pooling), which the fit inherits; a param set on the
estimator to another value than the model's is one ConfigError naming the param, before any Spark job.
"""
import os

from pyspark.ml.param import Param, Params

from sparkps.errors import ConfigError

# the CTR params that decide how input is encoded and what the network is: a warm fit takes the initial model's
FEATURIZATION = ("categoricalCols", "numericCols", "multiValueCols", "multiValueSeparator", "hashIds", "numBuckets",
                 "model", "network", "embeddingDim", "hiddenUnits", "pooling", "tables")
# the MLP classifier's network params: a warm fit takes the initial model's
NETWORK = ("layers", "symbolJson", "inputSize", "activation")


def to_initial_model(value):
    """The ``initialModel`` param's converter: a path (str or path-like) as a string, a fitted model as it is."""
    if value is None or value == "":
        return ""
    if isinstance(value, (str, os.PathLike)):
        return str(value)
    from pyspark.ml import Model
    if isinstance(value, Model):
        return value
    raise ConfigError("param initialModel must be a fitted model or the path of a saved one, got %s"
                      % type(value).__name__)


initial_model_param = Param(Params._dummy(), "initialModel", "a fitted model, or the path of a saved one, whose "
                            "weights and table rows the fit starts from (its featurization kept); empty: a cold start",
                            typeConverter=to_initial_model)


def initial_model(estimator, model_class, session=None):
    """The fitted ``model_class`` model ``estimator``'s ``initialModel`` names (loaded when it is a path), or None
    when it is unset. ConfigError naming the param when it is a model of another kind or a path that holds none;
    DataError naming a damaged file. Blocks on loading a path (not the tables' rows)."""
    value = estimator.getOrDefault("initialModel") if estimator.isDefined("initialModel") else ""
    if value == "" or value is None:
        return None
    if isinstance(value, str):
        try:
            value = model_class.load(value)
        except ConfigError as exc:
            raise ConfigError("param initialModel: %s" % exc) from None
    if not isinstance(value, model_class):
        raise ConfigError("param initialModel is a %s; a %s starts from a %s" % (
            type(value).__name__, type(estimator).__name__, model_class.__name__))
    if value.spark_model is None:
        raise ConfigError("param initialModel: the %s holds no weights" % model_class.__name__)
    return value


def inherited_featurization(estimator, initial, names=FEATURIZATION):
    """``{param: value}`` of ``initial``'s featurization and network params (``names``) for the warm fit;
    ConfigError naming the first param the estimator sets to another value."""
    inherited = {}
    for name in names:
        if not initial.isDefined(name):
            continue
        theirs = initial.getOrDefault(name)
        if estimator.isSet(name) and estimator.getOrDefault(name) != theirs:
            raise ConfigError("param %s is %r, but the initial model was trained with %s=%r: a warm fit encodes its "
                              "input and builds its network as the initial model did (leave %s unset)"
                              % (name, estimator.getOrDefault(name), name, theirs, name))
        inherited[name] = theirs
    return inherited


def warm_stats(initial_stats, todays):
    """The initial model's numeric statistics and multi-valued widths, with today's label facts (``todays``: the
    warm fit's own ``fit_stats``, which checks today's rows and counts their labels)."""
    initial_stats.label_facts = todays.label_facts
    initial_stats.validation_facts = todays.validation_facts
    return initial_stats


def check_savable(estimator):
    """ConfigError naming ``initialModel`` when it holds a fitted model: an estimator's saved params are JSON, so they
    hold the initial model's path, not the model."""
    from pyspark.ml import Model
    if estimator.isSet("initialModel") and isinstance(estimator.getOrDefault("initialModel"), Model):
        raise ConfigError("param initialModel holds a fitted %s, which the estimator's saved params cannot hold: save "
                          "the model (model.write().save(path)) and set initialModel to that path"
                          % type(estimator.getOrDefault("initialModel")).__name__)

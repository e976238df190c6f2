"""pyspark.ml Estimator / Model pair, usable as a Pipeline stage and saved with DefaultParams* writers.

    clf = SparkpsClassifier(layers=[64, 64, 10], numEpochs=10, learningRate=0.1)
    model = Pipeline(stages=[clf]).fit(train_df)
    model.write().overwrite().save('/models/p');  PipelineModel.load('/models/p').transform(test_df)

The model's weights are written beside its params (``<path>/weights``, a SparkModel directory), so
paths must be on a file system the driver can write with plain file I/O (local or mounted).
"""

from pyspark import keyword_only
from pyspark.ml import Estimator, Model
from pyspark.ml.param import TypeConverters
from pyspark.ml.param.shared import (
    HasFeaturesCol,
    HasHandleInvalid,
    HasLabelCol,
    HasPredictionCol,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasWeightCol,
)
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

from sparkps.errors import ConfigError
from sparkps.nets.mlp import mlp_symbol
from sparkps.spark.common.session import is_connect
from sparkps.spark.driver import checks
from sparkps.spark.driver.input_rows import held_out, prepare_rows
from sparkps.spark.driver.trainer import SparkTrainer
from sparkps.spark.ml.persistence import ModelReader, ModelWriter
from sparkps.spark.ml.shared_params import (
    HasTrainerParams,
    check_counts,
    checkpoint_settings,
    declare,
    placement_settings,
    strategy_settings,
)
from sparkps.spark.ml.warm_start import (
    NETWORK,
    check_savable,
    inherited_featurization,
    initial_model,
    initial_model_param,
)


class _SparkpsParams(HasFeaturesCol, HasLabelCol, HasPredictionCol, HasProbabilityCol, HasRawPredictionCol,
                     HasWeightCol, HasHandleInvalid, HasTrainerParams):
    """Params shared by the estimator and its model (those the CTR classifier takes too: ``shared_params.py``)."""

    layers = declare("layers", "MLP sizes [inputs, hidden..., classes] (used when symbolJson is empty)",
                     TypeConverters.toListInt)
    symbolJson = declare("symbolJson", "network as sparkps symbol JSON (overrides layers)", TypeConverters.toString)
    inputSize = declare("inputSize", "feature count when symbolJson is given", TypeConverters.toInt)
    activation = declare("activation", "hidden activation: relu, sigmoid, tanh, softrelu", TypeConverters.toString)
    momentum = declare("momentum", "momentum for sgd / nag (0 for the others)", TypeConverters.toFloat)
    weightDecay = declare("weightDecay", "L2 weight decay", TypeConverters.toFloat)
    earlyStoppingPatience = declare("earlyStoppingPatience", "epochs without a better validation loss before "
                                    "training stops", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        # the training defaults: chosen by benchmarks/digits_defaults.py (see SparkpsClassifier)
        self._setDefault(layers=[], symbolJson="", inputSize=0, activation="relu", batchSize=64, numEpochs=20,
                         optimizer="sgd", learningRate=0.1, momentum=0.9, weightDecay=0.0,
                         probabilityCol="probability", rawPredictionCol="rawPrediction", earlyStoppingPatience=2,
                         handleInvalid="error")


class SparkpsClassifier(Estimator, _SparkpsParams, DefaultParamsReadable, DefaultParamsWritable):
    """Trains a sparkps network with SparkTrainer; ``fit`` blocks until training ends (see SparkTrainer).

    ``handleInvalid``: 'error' (a bad row fails ``fit``, naming it), 'skip' (rows with a null, NaN or
    out-of-range label or null/NaN features are dropped; the count is logged and kept in the model's
    ``skippedRows``) or 'keep' (null/NaN feature values become 0; bad labels still fail).  ``weightCol``:
    real row weights >= 0, as MLlib takes them: each row's gradient is scaled by its weight over the mean
    weight (a weighted loss, not repeated rows; 0 drops the row; a negative or NaN weight fails ``fit``
    naming the row).  ``validationFraction``
    holds out that share of the rows for early stopping (see SparkTrainer.fit); the model then keeps the best
    epoch's weights (``bestEpoch``).  ``layers`` has no default; the training defaults (sgd, learningRate 0.1,
    momentum 0.9, batchSize 64, numEpochs 20) were chosen on rows held out of scikit-learn's digits' training
    rows by ``benchmarks/digits_defaults.py`` (README).  ``initialModel`` (a fitted SparkpsClassificationModel or
    the path of a saved one) starts the fit from its weights and network (``layers``, ``symbolJson``, ``inputSize``,
    ``activation``; one set otherwise is a ConfigError naming it); the optimizer state starts fresh
    (docs/warm_start.md).
    """

    initialModel = initial_model_param

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", predictionCol="prediction",
                 probabilityCol="probability", rawPredictionCol="rawPrediction", weightCol=None,
                 handleInvalid=None, layers=None, symbolJson=None, inputSize=None, activation=None,
                 batchSize=None, numEpochs=None, numWorkers=None, numServers=None, kvstore=None, optimizer=None,
                 learningRate=None, momentum=None, weightDecay=None, seed=None, validationFraction=None,
                 earlyStoppingPatience=None, checkpointDir=None, kvstoreParams=None,
                 gradientCompression=None, compressionThreshold=None, checkpointSteps=None, maxRestarts=None,
                 curve=None, resourceProfile=None, schedulerPlacement=None,
                 resultChunkBytes=None, initialModel=None):
        super().__init__()
        self._setDefault(initialModel="")
        self._set(**{k: v for k, v in self._input_kwargs.items() if v is not None})

    @keyword_only
    def setParams(self, **kwargs):
        """Set any of the constructor's params."""
        return self._set(**{k: v for k, v in self._input_kwargs.items() if v is not None})

    def write(self):
        """pyspark.ml's writer of the params; ConfigError naming initialModel when it holds a fitted model (its path
        is what saved params hold)."""
        check_savable(self)
        return super().write()

    def _network(self):
        symbol_json, layers = self.getOrDefault("symbolJson"), self.getOrDefault("layers")
        if symbol_json:
            size = self.getOrDefault("inputSize")
            if size < 1:
                raise ConfigError("SparkpsClassifier with symbolJson needs inputSize (the feature count)")
            return symbol_json, (size,)
        if not layers:
            raise ConfigError("SparkpsClassifier needs layers (e.g. [64, 32, 10]) or symbolJson")
        return mlp_symbol(layers, self.getOrDefault("activation")).tojson(), (layers[0],)

    def _fit(self, dataset):
        initial = initial_model(self, SparkpsClassificationModel)
        if initial is None:
            return self._train(dataset)
        warm = self.copy()          # the initial model's network, a param set otherwise refused
        warm._set(**inherited_featurization(self, initial, NETWORK))
        return warm._train(dataset, initial)

    def _train(self, dataset, initial=None):
        """Fit on ``dataset``, from ``initial`` (a SparkpsClassificationModel whose network this estimator took)."""
        check_counts(self)
        strategy = {**strategy_settings(self), **placement_settings(self)}   # checked before any Spark job
        symbol_json, input_shape = self._network()
        if not is_connect(dataset):        # before any Python function is wrapped
            checks.choose_worker_python(dataset.sparkSession.sparkContext)
        get = self.getOrDefault
        optimizer_params = {"learning_rate": get("learningRate"), "wd": get("weightDecay")}
        if get("optimizer") in ("sgd", "nag"):
            optimizer_params["momentum"] = get("momentum")
        trainer = SparkTrainer(symbol_json, input_shape, batch_size=get("batchSize"), num_epoch=get("numEpochs"),
                               num_workers=get("numWorkers"), num_servers=get("numServers"),
                               optimizer=get("optimizer"), optimizer_params=optimizer_params, seed=get("seed"),
                               progress=False, patience=get("earlyStoppingPatience"), name="SparkpsClassifier",
                               **strategy, **checkpoint_settings(self))
        features, label = get("featuresCol"), get("labelCol")
        rows = prepare_rows(dataset, features, label, get("handleInvalid"), trainer.num_classes,
                            self.getOrDefault("weightCol") if self.isSet("weightCol") else None)
        train, validation = held_out(rows.frame, get("validationFraction"), get("seed"))
        spark_model = trainer.fit(train, features_col=features, label_col=label, validation=validation,
                                  weight_col=rows.weight_col,
                                  initial_model=None if initial is None else initial.spark_model)
        model = SparkpsClassificationModel(spark_model)
        self._copyValues(model)
        model.skippedRows = rows.skipped
        return model


class SparkpsClassificationModel(Model, _SparkpsParams, DefaultParamsReadable, DefaultParamsWritable):
    """Adds ``predictionCol`` (class index as double) and ``probabilityCol`` (Vector) to a DataFrame."""

    def __init__(self, spark_model=None):
        super().__init__()
        self.spark_model = spark_model
        self.skippedRows = 0        # rows fit dropped under handleInvalid='skip'

    @property
    def history(self):
        """Per-epoch training (and validation) metrics of the fit, epochs counted from 0."""
        return self.spark_model.history if self.spark_model is not None else []

    @property
    def bestEpoch(self):
        """With validationFraction: the epoch (from 0) whose weights the model holds, the one of the lowest
        validation cross-entropy; None otherwise."""
        return self.spark_model.best_epoch if self.spark_model is not None else None

    def _transform(self, dataset):
        if self.spark_model is None:
            raise ConfigError("SparkpsClassificationModel has no weights: load it with .load(path)")
        get = self.getOrDefault
        return self.spark_model.transform(dataset, featuresCol=get("featuresCol"),
                                          predictionCol=get("predictionCol"), probabilityCol=get("probabilityCol"),
                                          rawPredictionCol=get("rawPredictionCol") or None)

    def write(self):
        return ModelWriter(self)

    @classmethod
    def read(cls):
        return ModelReader(cls)


# The click-through-rate estimator (categorical columns in, [1-p, p] out) lives in its own module.
from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier, SparkpsCTRModel  # noqa: E402, F401

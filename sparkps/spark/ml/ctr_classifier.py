"""pyspark.ml click-through-rate classifier: categorical and numeric columns in, a zoo model (or an Angel
JSON network) trained by SparkTrainer, ``rawPrediction`` / ``probability`` [1-p, p] / ``prediction`` out.

    clf = SparkpsCTRClassifier(labelCol='click', categoricalCols=['site', 'app'], numericCols=['hour'],
                               model='deepfm')
    model = clf.fit(train_df)                       # blocks until training ends (see SparkTrainer.fit)
    BinaryClassificationEvaluator(labelCol='click').evaluate(model.transform(test_df))

The label is 0/1 (a number or a boolean), or a column of two strings (yes/no), indexed as RFormula and
jobs/train_ctr.py index it: the more frequent value is 0 (``labelClasses`` records the order).
The numeric statistics are computed once on the training data and kept in the model's params (so a saved
Pipeline standardises test data exactly as it did the training data); the weights go to ``<path>/weights``.
"""
import json
import logging

from pyspark import keyword_only
from pyspark.ml import Estimator, Model
from pyspark.ml.param import TypeConverters
from pyspark.ml.param.shared import HasLabelCol, HasPredictionCol, HasProbabilityCol, HasRawPredictionCol
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

from sparkps.ctr.numeric import NumericStats
from sparkps.errors import ConfigError
from sparkps.kvstore.strategies import SPARSE_STRATEGIES
from sparkps.nets.ctr_defaults import CTR_DEFAULTS, patience_for
from sparkps.spark.common.session import is_connect
from sparkps.spark.driver import checks
from sparkps.spark.driver.input_rows import check_held_out, held_out, held_out_rows
from sparkps.spark.driver.trainer import SparkTrainer
from sparkps.spark.ml.ctr_features import CTRFeaturizer, indexed_click_label
from sparkps.spark.ml.persistence import ModelReader, ModelWriter, numbered_from_one
from sparkps.spark.ml.shared_params import (
    HasTrainerParams,
    check_counts,
    checkpoint_settings,
    declare,
    placement_settings,
    strategy_settings,
)
from sparkps.spark.ml.warm_start import (
    check_savable,
    inherited_featurization,
    initial_model,
    initial_model_param,
    warm_stats,
)
from sparkps.spark.model.table_rows import INLINE_TABLE_BYTES

LOG = logging.getLogger("sparkps.spark")
FEATURES_TMP = "__sparkps_ctr_features"
SCORE_TMP = "__sparkps_ctr_score"
OPTIMIZER_ARGS = ("beta1", "beta2", "momentum", "beta", "lamda1", "wd", "wd_mult")   # wd_mult: each layer's reg2


class _CTRParams(HasLabelCol, HasPredictionCol, HasProbabilityCol, HasRawPredictionCol, HasTrainerParams):
    """Params shared by the estimator and its model (those the MLP classifier takes too: ``shared_params.py``)."""

    categoricalCols = declare("categoricalCols", "categorical columns (strings or integers), hashed with their name",
                              TypeConverters.toListString)
    numericCols = declare("numericCols", "numeric columns, standardised (log-mapped) from training statistics",
                          TypeConverters.toListString)
    multiValueCols = declare("multiValueCols", "multi-valued columns: arrays, or strings joined by "
                             "multiValueSeparator; their ids are pooled into one embedding (pooling)",
                             TypeConverters.toListString)
    multiValueSeparator = declare("multiValueSeparator", "separator of multi-valued string cells",
                                  TypeConverters.toString)
    pooling = declare("pooling", "pooling of a multi-valued field's embeddings: mean or sum", TypeConverters.toString)
    tables = declare("tables", "sparse tables: shared (one for all fields) or per_field", TypeConverters.toString)
    model = declare("model", "zoo model, one of sparkps.nets.zoo.names() (lr, fm, widedeep, deepfm, dcn, pnn, nfm "
                    "and any registered one)", TypeConverters.toString)
    network = declare("network", "an Angel JSON network file (instead of model)", TypeConverters.toString)
    embeddingDim = declare("embeddingDim", "embedding width per field", TypeConverters.toInt)
    hiddenUnits = declare("hiddenUnits", "MLP widths of the deep part", TypeConverters.toListInt)
    numBuckets = declare("numBuckets", "reduce ids to this many table rows (0: 64-bit ids, no reduction)",
                         TypeConverters.toInt)
    hashIds = declare("hashIds", "hash categorical values (False: they are feature indices already, Angel's dummy)",
                      TypeConverters.toBoolean)
    maxBroadcastMB = declare("maxBroadcastMB", "transform refuses to ship a larger model to the executors, in its "
                             "UDF or from its folder (its message says how to shrink it); 0: no limit",
                             TypeConverters.toFloat)
    inlineTablesMB = declare("inlineTablesMB", "fit: the trained sparse tables come back inside the model when "
                             "their rows take at most this many MB (rows x embedding width x 4 bytes over every "
                             "table: scored inside transform's UDF, the fast path); larger ones stay the servers' "
                             "shard files, scored by a Spark SQL join (0: always shard files)", TypeConverters.toFloat)
    earlyStoppingPatience = declare("earlyStoppingPatience", "with validationFraction: stop once the validation "
                                    "metric has not improved for this many epochs and keep the best epoch's weights "
                                    "and table rows (0: off, train every epoch; left unset: 2 when rows are held "
                                    "out, off when validationFraction is 0)", TypeConverters.toInt)
    earlyStoppingMetric = declare("earlyStoppingMetric", "validation metric early stopping watches: auc (higher is "
                                  "better) or logloss (lower is better)", TypeConverters.toString)
    embeddingL2 = declare("embeddingL2", "L2 coefficient on the embedding rows (the optimizer's wd, with "
                          "embedding_wd_mult 1 and the linear and deep parts at 0: DeepCTR's l2_reg_embedding; a row "
                          "decays when a batch reads it); 0: none. Zoo models only", TypeConverters.toFloat)
    dropout = declare("dropout", "dropout rate after each hidden layer of the deep part (0: none). Zoo models only",
                      TypeConverters.toFloat)
    forgetAfterSteps = declare("forgetAfterSteps", "fit: the written model leaves out the ids unseen for more than "
                               "this many steps (a row's last-seen step carries over from initialModel, so an id "
                               "unseen for several daily fits goes); 0: keep every id (the default)",
                               TypeConverters.toInt)
    labelClasses = declare("labelClasses", "the two strings of a string label column, in the order fit indexed "
                           "them ([the value read as 0, the value read as 1]: the most frequent first, as RFormula "
                           "and jobs/train_ctr.py index them); set by fit, [] for a numeric label",
                           TypeConverters.toListString)
    numericStats = declare("numericStats", "training statistics of the numeric columns and the widths of the "
                           "multi-valued ones (JSON; set by fit)",
                           TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(labelCol="label", categoricalCols=[], numericCols=[], multiValueCols=[], model="deepfm",
                         network="", hashIds=True, numBuckets=0, numericStats="", labelClasses=[],
                         probabilityCol="probability", rawPredictionCol="rawPrediction", predictionCol="prediction",
                         multiValueSeparator=",", pooling="mean", tables="shared", maxBroadcastMB=1024.0,
                         inlineTablesMB=INLINE_TABLE_BYTES / 2**20, forgetAfterSteps=0,
                         **CTR_DEFAULTS)       # chosen by measurement (sparkps/nets/ctr_defaults.py)

    def _featurizer(self):
        get = self.getOrDefault
        if get("network") and get("multiValueCols"):
            raise ConfigError("network %s: Angel networks read one feature index per field; multiValueCols must be "
                              "empty" % get("network"))
        return CTRFeaturizer(get("categoricalCols"), get("numericCols"), self._index_range(),
                             hash_ids=get("hashIds"), multi_value_cols=get("multiValueCols"),
                             separator=get("multiValueSeparator"))

    def _index_range(self):
        if self.getOrDefault("network"):
            return self._angel().index_range
        return self.getOrDefault("numBuckets") or None

    def feature_spec(self, stats):
        """The FeatureSpec of the configured columns and model (Angel networks: their ids input only)."""
        get = self.getOrDefault
        if get("network"):       # hashed ids reduced to the network's indexrange; feature indices as they are
            return self._featurizer().spec(stats, num_buckets=self._index_range() if get("hashIds") else None)
        return self._featurizer().spec(stats, embedding_dim=get("embeddingDim"), hidden_units=get("hiddenUnits"),
                                       num_buckets=self._index_range(), pooling=get("pooling"), tables=get("tables"))

    def zoo_model(self):
        """The ``model`` param checked against the zoo's registry (``sparkps.nets.zoo``): its lower-case name, or
        ConfigError naming it and the registered models. Needs no Spark."""
        from sparkps.nets import zoo
        return zoo.check_name(self.getOrDefault("model"))

    def _angel(self):
        from sparkps.nets import angel_json
        net = angel_json.load(self.getOrDefault("network"))
        if self.getOrDefault("numericCols"):
            raise ConfigError("network %s: Angel networks read feature indices only; numericCols must be empty"
                              % self.getOrDefault("network"))
        fields = len(self.getOrDefault("categoricalCols"))
        if net.num_fields != fields:
            raise ConfigError("network %s: data.numfield is %s but categoricalCols has %d columns"
                              % (self.getOrDefault("network"), net.num_fields, fields))
        return net


class SparkpsCTRClassifier(Estimator, _CTRParams, DefaultParamsReadable, DefaultParamsWritable):
    """Trains a CTR model with SparkTrainer; ``fit`` blocks until training ends (see SparkTrainer.fit).

    ``initialModel`` (a fitted SparkpsCTRModel or the path of a saved one) starts the fit from that model: its dense
    weights and every table's rows, counts and last-seen steps (loaded by the servers from its shard files), its
    featurization (columns, hashing, numeric statistics, label strings) and its network; optimizer state starts
    fresh (:mod:`sparkps.spark.ml.warm_start`, docs/warm_start.md).
    """

    initialModel = initial_model_param

    @keyword_only
    def __init__(self, *, labelCol=None, categoricalCols=None, numericCols=None, multiValueCols=None, model=None,
                 network=None, hashIds=None, embeddingDim=None, hiddenUnits=None, numBuckets=None,
                 numEpochs=None,
                 batchSize=None, numWorkers=None, numServers=None, kvstore=None, optimizer=None,
                 learningRate=None, seed=None, predictionCol=None, probabilityCol=None, rawPredictionCol=None,
                 multiValueSeparator=None, pooling=None, tables=None, validationFraction=None, kvstoreParams=None,
                 gradientCompression=None, compressionThreshold=None, checkpointDir=None, checkpointSteps=None,
                 maxRestarts=None, curve=None, earlyStoppingPatience=None, earlyStoppingMetric=None,
                 embeddingL2=None, dropout=None, resourceProfile=None, schedulerPlacement=None,
                 resultChunkBytes=None, inlineTablesMB=None, initialModel=None, forgetAfterSteps=None):
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

    def network_symbol(self, spec, num_rows=None):
        """(symbol, training settings) of the configured model or Angel network for FeatureSpec ``spec``. An Angel
        network's own train section and default optimizer apply where a param was not set explicitly; its
        per-epoch learning-rate decay counts the updates of an epoch from ``num_rows``, the training rows of one
        worker (without it the rate stays constant, logged once)."""
        get = self.getOrDefault
        settings = {k: get(k) for k in ("numEpochs", "batchSize", "optimizer", "learningRate")}
        if get("network"):
            for name in ("embeddingL2", "dropout"):       # their defaults are the zoo's; set, they are refused
                if self.isSet(name) and get(name):
                    raise ConfigError("network %s: param %s applies to zoo models only; an Angel network sets its "
                                      "own regularisation (each layer's reg2)" % (get("network"), name))
            net = self._angel()
            args = net.fit_args(num_rows=num_rows, batch_size=get("batchSize") if self.isSet("batchSize") else None)
            own = {"numEpochs": args["num_epoch"], "batchSize": args["batch_size"], "optimizer": args["optimizer"],
                   "learningRate": args["learning_rate"]}
            settings.update({k: v for k, v in own.items() if not self.isSet(k)})
            settings["optimizer_args"] = {k: v for k, v in args.items() if k in OPTIMIZER_ARGS} \
                if settings["optimizer"] == args["optimizer"] else {}
            if "lr_scheduler" in args:       # the train section's decay (angel_decay), whatever the optimizer
                settings["optimizer_args"]["lr_scheduler"] = args["lr_scheduler"]
            return net.symbol, settings
        from sparkps.nets import build
        return build(self.zoo_model(), spec, **regularisation_args(get("embeddingL2"), get("dropout"))), \
            dict(settings, optimizer_args={"wd": get("embeddingL2")} if get("embeddingL2") else {})

    def early_stopping_patience(self):
        """The patience the fit uses: ``earlyStoppingPatience`` when set; else its default (2) with rows held out
        (``validationFraction`` > 0, the default 0.05) and 0 (off) without."""
        get = self.getOrDefault
        return patience_for(get("earlyStoppingPatience") if self.isSet("earlyStoppingPatience") else None,
                            get("validationFraction"))

    def _fit(self, dataset):
        initial = initial_model(self, SparkpsCTRModel)
        if initial is None:
            return self._train(dataset)
        warm = self.copy()        # the initial model's featurization and network, a param set otherwise refused
        warm._set(**inherited_featurization(self, initial))
        return warm._train(dataset, initial)

    def _train(self, dataset, initial=None):
        """Fit on ``dataset``, from ``initial`` (a SparkpsCTRModel whose featurization this estimator took) or cold."""
        from sparkps.nets.blocks import ctr_initializer
        get = self.getOrDefault
        check_counts(self)
        strategy = {**strategy_settings(self, SPARSE_STRATEGIES), **placement_settings(self)}   # before any job
        if not get("network"):
            self.zoo_model()
        if not is_connect(dataset):       # before any Python function is wrapped
            checks.choose_worker_python(dataset.sparkSession.sparkContext)
        featurizer = self._featurizer()
        dataset, classes = indexed_click_label(dataset, get("labelCol"),      # yes/no: as train_ctr indexes it
                                               initial.getOrDefault("labelClasses") if initial else None)
        if classes:
            LOG.info("label column %r indexed as RFormula does: %r -> 0, %r -> 1", get("labelCol"), *classes)
        featurizer.check_columns(dataset, get("labelCol"))
        train, validation = held_out(dataset, get("validationFraction"), get("seed"))
        # one pass over the input: the training rows' statistics and both sides' label counts
        stats = featurizer.fit_stats(dataset, get("labelCol"),
                                     held_out_rows(dataset, get("validationFraction"), get("seed")))
        if initial is not None:      # encoded as the initial model encoded its input
            stats = warm_stats(stats_from_json(initial.getOrDefault("numericStats")), stats)
        spec = self.feature_spec(stats)
        rows_per_worker = -(-stats.label_facts["rows"] // get("numWorkers"))    # rows are dealt evenly
        symbol, settings = self.network_symbol(spec, num_rows=rows_per_worker)
        patience = self.early_stopping_patience()
        stop_metric = early_stopping_metric(get("earlyStoppingMetric"), patience, validation is not None)
        featurizer.check_labels(train, get("labelCol"), stats.label_facts, rows_of=dataset, both_classes=True)
        # the fit's one barrier stage reads the columns as Arrow batches: typed ids and numbers, no per-row objects
        frame, reader = featurizer.training_input(train, stats, get("labelCol"), spec)
        if validation is not None:
            check_held_out(stats.validation_facts["rows"], stats.validation_facts["rows"] + stats.label_facts["rows"],
                           get("validationFraction"))
            featurizer.check_labels(validation, get("labelCol"), stats.validation_facts, rows_of=dataset)
            validation = featurizer.training_input(validation, stats, get("labelCol"), spec)[0]
        optimizer_params = {"learning_rate": settings["learningRate"], **settings["optimizer_args"]}
        trainer = SparkTrainer(symbol, None, batch_size=settings["batchSize"],
                               num_epoch=settings["numEpochs"], num_workers=get("numWorkers"),
                               num_servers=get("numServers"), optimizer=settings["optimizer"],
                               optimizer_params=optimizer_params, initializer=ctr_initializer(),
                               label_name="ctr_label", data_name=spec.input_parts()[0][0], eval_metric="logloss",
                               seed=get("seed"), progress=False, name="ctr-" + (get("model") or "network"),
                               inputs=reader.typed, **strategy,
                               patience=patience, stop_metric=stop_metric,
                               inline_table_bytes=inline_table_bytes(get("inlineTablesMB")),
                               forget_steps=forget_steps(get("forgetAfterSteps")),
                               **checkpoint_settings(self))
        spark_model = trainer.fit(frame, label_col=get("labelCol"), validation=validation, reader=reader,
                                  known_rows=stats.label_facts["rows"],
                                  initial_model=None if initial is None else initial.spark_model)
        model = SparkpsCTRModel(spark_model)
        model.fit_timings = trainer.last_fit    # rows per worker, seconds in training, the steady samples/s
        self._copyValues(model)
        model._set(numericStats=stats_to_json(stats), labelClasses=classes or [])
        return model


def forget_steps(steps):
    """SparkTrainer's ``forget_steps`` of the ``forgetAfterSteps`` param (0: None, off); ConfigError naming it when
    negative."""
    if int(steps) < 0:
        raise ConfigError("param forgetAfterSteps must be >= 0 steps (0: keep every id), got %r" % (steps,))
    return int(steps) or None


def inline_table_bytes(megabytes):
    """The ``inlineTablesMB`` param in bytes; ConfigError naming it when negative or not a number."""
    if not float(megabytes) >= 0.0:
        raise ConfigError("param inlineTablesMB must be >= 0 (0: tables always stay shard files), got %r"
                          % (megabytes,))
    return int(float(megabytes) * 2**20)


def regularisation_args(embedding_l2, dropout):
    """``zoo.build``'s regularisation keywords of the ``embeddingL2`` and ``dropout`` params (docs/regularisation.md):
    an L2 on the embedding rows only, the optimizer's wd being ``embedding_l2``; nothing for the defaults."""
    if not 0.0 <= float(dropout) < 1.0:
        raise ConfigError("param dropout must be in [0, 1), got %r" % (dropout,))
    if not float(embedding_l2) >= 0.0:
        raise ConfigError("param embeddingL2 must be >= 0, got %r" % (embedding_l2,))
    args = {"dropout": float(dropout)}
    if embedding_l2:
        args.update(embedding_wd_mult=1.0, linear_wd_mult=0.0, deep_wd_mult=0.0)
    return args


def early_stopping_metric(metric, patience, has_validation):
    """SparkTrainer's ``stop_metric`` of the early-stopping params (None when off); ConfigError naming the param
    at fault: an unknown metric, a negative patience, or a patience without validationFraction."""
    if patience < 0:
        raise ConfigError("param earlyStoppingPatience must be >= 0 epochs (0: off), got %r" % (patience,))
    key = str(metric).strip().lower()
    if key not in ("auc", "logloss"):
        raise ConfigError("param earlyStoppingMetric must be auc or logloss, got %r" % (metric,))
    if not patience:
        return None
    if not has_validation:
        raise ConfigError("param earlyStoppingPatience=%d needs held-out rows to score: set validationFraction "
                          "(e.g. 0.1)" % patience)
    return key


class SparkpsCTRModel(Model, _CTRParams, DefaultParamsReadable, DefaultParamsWritable):
    """Adds ``rawPredictionCol`` [-logit, logit], ``probabilityCol`` [1-p, p] (Vectors) and ``predictionCol``
    (p > 0.5) to a DataFrame of the training columns. Lazy."""

    def __init__(self, spark_model=None):
        super().__init__()
        self.spark_model = spark_model
        self.fit_timings = None     # the fit's rows per worker and seconds (SparkTrainer.last_fit); None when loaded

    @property
    def fit_stats(self):
        """The earlier name of ``fit_timings`` (the fit's rows and seconds, not the numeric statistics of
        ``CTRFeaturizer.fit_stats``), kept for code that reads it."""
        return self.fit_timings

    @fit_stats.setter
    def fit_stats(self, value):
        self.fit_timings = value

    @property
    def history(self):
        """Per-epoch training metrics of the fit (logloss, averaged over workers by rows: exact)."""
        return self.spark_model.history if self.spark_model is not None else []

    @property
    def tableIds(self):
        """{table: {"added", "kept", "dropped"}}: the ids this fit added to, kept of and dropped from (forgotten or
        evicted) the model it started from (``initialModel``; a cold fit added every id); {} when not recorded."""
        return dict(self.spark_model.table_ids) if self.spark_model is not None else {}

    @property
    def bestEpoch(self):
        """The epoch (counted from 1) whose weights and table rows early stopping kept; None without it."""
        best = None if self.spark_model is None else self.spark_model.best_epoch
        return None if best is None else best + 1

    def _transform(self, dataset):
        """One Arrow UDF over the feature columns (typed ids and numeric values straight from Arrow, the model in its
        closure or read from its folder: ``SparkModel.source``), on classic and Spark Connect sessions alike."""
        from pyspark.ml.functions import array_to_vector
        from pyspark.sql import functions as F

        from sparkps.spark.model.udf_scoring import add_click_probability
        if self.spark_model is None:
            raise ConfigError("SparkpsCTRModel has no weights: load it with .load(path)")
        get = self.getOrDefault
        featurizer = self._featurizer()
        featurizer.check_columns(dataset)
        stats = stats_from_json(get("numericStats"))
        limit = get("maxBroadcastMB")
        self.spark_model.max_broadcast_bytes = int(limit * 2**20) if limit > 0 else None
        source = self.spark_model.source(dataset.sparkSession)
        columns = featurizer.columns(stats, self.feature_spec(stats))
        if self.spark_model.table_manifest:        # tables as shard files: their rows joined in Spark SQL
            from sparkps.spark.model.join_scoring import add_joined_click_probability
            folder, manifest, limit = self.spark_model.checked_tables()
            scored = add_joined_click_probability(dataset, source, columns, featurizer.feature_columns(), SCORE_TMP,
                                                  folder, manifest, limit)
        else:
            scored = add_click_probability(dataset, source, columns, featurizer.feature_columns(), SCORE_TMP)
        p = F.least(F.greatest(F.col(SCORE_TMP), F.lit(1e-15)), F.lit(1 - 1e-15))
        logit = F.log(p / (1 - p))
        return (scored.withColumn(get("rawPredictionCol"), array_to_vector(F.array(-logit, logit)))
                .withColumn(get("probabilityCol"), array_to_vector(F.array(1 - p, p)))
                .withColumn(get("predictionCol"), (p > 0.5).cast("double"))
                .drop(SCORE_TMP))

    def shrink(self, min_count):
        """A copy whose tables keep only the rows of ids seen at least ``min_count`` times in training (smaller to
        ship to the executors and save; a dropped id reads as an unseen one). ConfigError when the model has no
        counts."""
        small = self.copy()
        small.spark_model = self.spark_model.shrink(min_count)
        return small

    def export_tables(self, path, since=None, overwrite=False):
        """Write the sparse tables as Parquet rows (id int64, vector, count) under folder ``path``, with
        ``manifest.json`` and ``featurization.json`` (docs/export.md, "Parquet table rows"); ``since``: a checkpoint
        folder of this model, or a saved model (the ``initialModel`` a warm fit started from: a day-over-day delta),
        to write only the rows changed since it and the ids it held that this model lost. Returns the manifest.
        ConfigError naming a non-empty ``path`` without ``overwrite``; DataError naming ``since`` when it is another
        model's. Blocks on file I/O."""
        from sparkps.spark.model.export_tables import export_ctr_tables
        if self.spark_model is None:
            raise ConfigError("SparkpsCTRModel has no weights: load it with .load(path)")
        stats = stats_from_json(self.getOrDefault("numericStats"))
        return export_ctr_tables(path, self.spark_model, self._featurizer().to_dict(), self.feature_spec(stats),
                                 stats, since=since, overwrite=overwrite,
                                 model_name=self.getOrDefault("network") or self.getOrDefault("model"))

    def write(self):
        """pyspark.ml's writer; the metadata also holds ``epochs`` and ``history``, epochs counted from 1."""
        history = numbered_from_one(self.history)
        return ModelWriter(self, {"epochs": len(history), "history": history, "bestEpoch": self.bestEpoch})

    @classmethod
    def read(cls):
        return ModelReader(cls)


def stats_to_json(stats):
    """The numeric statistics and multi-valued widths as the ``numericStats`` param's JSON."""
    return json.dumps(dict(stats.to_dict(), widths=stats.widths))


def stats_from_json(text):
    saved = json.loads(text)
    stats = NumericStats.from_dict(saved)
    stats.widths = dict(saved.get("widths", {}))
    return stats

"""Params both pyspark.ml estimators take (the classifier of ``classifier.py`` and the CTR classifier of
``ctr_classifier.py``), each declared once as a pyspark.ml-style mixin (``HasBatchSize`` as pyspark's
``HasMaxIter``), and turned into SparkTrainer's keyword arguments here.

    class _CTRParams(HasTrainerParams, ...):      # batchSize .. validationFraction, the strategy, checkpoints
        def __init__(self, *args):
            super().__init__(*args)
            self._setDefault(batchSize=256, ...)  # each estimator's own defaults where they differ

    trainer = SparkTrainer(..., **strategy_settings(estimator), **checkpoint_settings(estimator))

A mixin sets a default only where both estimators agree on it. Saved and loaded with the estimator
(DefaultParamsWritable / Readable) like any other Param: only names and values are written, so declaring a
param here rather than in the estimator leaves saved pipelines as they were.
"""
from pyspark.ml.param import Param, Params, TypeConverters

from sparkps.kvstore.strategies import LOCAL_STRATEGIES, STRATEGIES, STRATEGY_OPTIONS, check_strategy, parse_options


def declare(name, doc, converter):
    """A Param of the Params class being declared (pyspark.ml's shared-param habit: ``Params._dummy()``)."""
    return Param(Params._dummy(), name, doc, typeConverter=converter)


class HasBatchSize(Params):
    """``batchSize``: rows per step of each worker (each estimator sets its own default)."""

    batchSize = declare("batchSize", "mini-batch size per worker", TypeConverters.toInt)

    def getBatchSize(self):
        return self.getOrDefault(self.batchSize)


class HasNumEpochs(Params):
    """``numEpochs``: passes over the training data (each estimator sets its own default)."""

    numEpochs = declare("numEpochs", "passes over the training data", TypeConverters.toInt)

    def getNumEpochs(self):
        return self.getOrDefault(self.numEpochs)


class HasNumWorkers(Params):
    """``numWorkers``: worker tasks of the barrier stage (default 2)."""

    numWorkers = declare("numWorkers", "worker tasks (Spark task slots needed)", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(numWorkers=2)

    def getNumWorkers(self):
        return self.getOrDefault(self.numWorkers)


class HasNumServers(Params):
    """``numServers``: parameter servers (default 1)."""

    numServers = declare("numServers", "parameter servers, started beside the first workers", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(numServers=1)

    def getNumServers(self):
        return self.getOrDefault(self.numServers)


class HasKvstore(Params):
    """``kvstore``: the distributed strategy, one of :data:`sparkps.kvstore.strategies.STRATEGIES` (default
    dist_sync)."""

    kvstore = declare("kvstore", "strategy: %s (%s train on the workers and refuse sparse tables, such as the CTR "
                      "models' embeddings)" % (", ".join(STRATEGIES), " and ".join(LOCAL_STRATEGIES)),
                      TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(kvstore="dist_sync")

    def getKvstore(self):
        return self.getOrDefault(self.kvstore)


class HasOptimizer(Params):
    """``optimizer``: the optimizer's name (each estimator sets its own default)."""

    optimizer = declare("optimizer", "sgd, nag, adam, adagrad, rmsprop, adadelta, ftrl, ...", TypeConverters.toString)

    def getOptimizer(self):
        return self.getOrDefault(self.optimizer)


class HasLearningRate(Params):
    """``learningRate``: the optimizer's learning rate (each estimator sets its own default)."""

    learningRate = declare("learningRate", "optimizer learning rate", TypeConverters.toFloat)

    def getLearningRate(self):
        return self.getOrDefault(self.learningRate)


class HasTrainingSeed(Params):
    """``seed``: the seed of initialisation and shuffling (default 0; pyspark's own HasSeed defaults to a hash of
    the class name instead)."""

    seed = declare("seed", "seed of initialisation and shuffling", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(seed=0)

    def getSeed(self):
        return self.getOrDefault(self.seed)


class HasValidationFraction(Params):
    """``validationFraction``: the share of the rows held out and scored after every epoch (default 0: none; the
    CTR classifier's default is 0.05, its early stopping's validation rows)."""

    validationFraction = declare("validationFraction", "share of the rows held out and scored after every epoch "
                                 "(0: none): the classifier stops early on their loss and keeps the best epoch; the "
                                 "CTR classifier records AUC, logloss and COPC over all of them in the history (and "
                                 "stops early on one of them with earlyStoppingPatience)",
                                 TypeConverters.toFloat)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(validationFraction=0.0)

    def getValidationFraction(self):
        return self.getOrDefault(self.validationFraction)


class HasStrategyOptions(Params):
    """``kvstoreParams`` (the strategy's options as NAME=VALUE), ``gradientCompression``, ``compressionThreshold``."""

    kvstoreParams = declare("kvstoreParams", "strategy options as NAME=VALUE strings: %s" % "; ".join(
        "%s (%s)" % (", ".join(options), name) for name, options in STRATEGY_OPTIONS.items() if options),
        TypeConverters.toListString)
    gradientCompression = declare("gradientCompression", "'' (none), fp16 or 2bit", TypeConverters.toString)
    compressionThreshold = declare("compressionThreshold", "2bit: the threshold t of {-t, 0, +t}",
                                   TypeConverters.toFloat)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(kvstoreParams=[], gradientCompression="", compressionThreshold=0.5)


class HasCheckpoints(Params):
    """``checkpointDir``, ``checkpointSteps`` and ``maxRestarts`` (SparkTrainer's checkpoint_dir, checkpoint_steps,
    max_restarts: with a folder, a fit whose task or server dies restarts from the newest checkpoint)."""

    checkpointDir = declare("checkpointDir", "folder every server can write, or a Spark URI (hdfs://, s3a://; on a "
                            "one-machine master, mirrored when the fit ends): weights, optimizer state and each "
                            "worker's place in its data after each epoch ('' for none); with it, a fit whose task or "
                            "server process dies restarts from the newest checkpoint", TypeConverters.toString)
    checkpointSteps = declare("checkpointSteps", "with checkpointDir: also checkpoint every N steps (0: at epoch "
                              "ends only)", TypeConverters.toInt)
    maxRestarts = declare("maxRestarts", "with checkpointDir: restarts from the newest checkpoint before fit fails",
                          TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(checkpointDir="", checkpointSteps=0, maxRestarts=2)


class HasCurve(Params):
    """``curve``: CURVE encryption of the fit's parameter-server traffic: 'auto' (the default: on whenever the
    roles bind an address other than loopback, i.e. on a cluster), 'on' or 'off' (SparkTrainer's ``curve``)."""

    curve = declare("curve", "CURVE encryption of the parameter-server traffic: auto (on whenever the roles bind "
                    "an address other than loopback), on or off", TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(curve="auto")

    def getCurve(self):
        return self.getOrDefault(self.curve)

    def setCurve(self, value):
        """'auto', 'on' or 'off' (checked when ``fit`` starts)."""
        return self._set(curve=value)


CURVE_VALUES = {"auto": None, "on": True, "off": False}


def curve_of(value):
    """SparkTrainer's ``curve`` (None, True, False) of the ``curve`` param; ConfigError naming the param."""
    key = str(value).strip().lower()
    if key not in CURVE_VALUES:
        from sparkps.errors import ConfigError
        raise ConfigError("param curve must be auto, on or off, got %r" % (value,))
    return CURVE_VALUES[key]


class HasResourceProfile(Params):
    """``resourceProfile``: what each worker task of the barrier stage needs, as stage-level scheduling's task
    requests (``task.cpus=2,task.gpu=1``; '' for the cluster's defaults). ``driver.checks.stage_profile`` makes the
    stage's ResourceProfile of it (ignored, with a warning, on local masters)."""

    resourceProfile = declare("resourceProfile", "stage-level scheduling of the worker tasks: comma-separated "
                              "task.NAME=AMOUNT (task.cpus=2,task.gpu=1); '' for the cluster's defaults",
                              TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(resourceProfile="")

    def getResourceProfile(self):
        return self.getOrDefault(self.resourceProfile)

    def setResourceProfile(self, value):
        """Task requests such as 'task.gpu=1' (checked here: a ConfigError names a malformed one)."""
        from sparkps.spark.driver.checks import parse_resource_profile
        parse_resource_profile(value)
        return self._set(resourceProfile=value)


def profile_settings(estimator, master=None):
    """The barrier stage's ResourceProfile of an estimator's ``resourceProfile`` param (None: none), checked first;
    ``master``: the session's master (a local one schedules no stage resources)."""
    from sparkps.spark.driver.checks import stage_profile
    return stage_profile(estimator.getOrDefault("resourceProfile"), master)


class HasPlacement(Params):
    """``schedulerPlacement`` and ``resultChunkBytes`` (SparkTrainer's ``scheduler`` and ``chunk_bytes``): where the
    fit's scheduler runs ('auto': on the driver when the tasks can connect back to it, else inside the stage;
    'driver'; 'stage'), and the largest piece of a task's result in a DataFrame stage's output."""

    schedulerPlacement = declare("schedulerPlacement", "where the fit's scheduler runs: auto (the driver when the "
                                 "tasks can reach it, else inside the stage), driver or stage", TypeConverters.toString)
    resultChunkBytes = declare("resultChunkBytes", "the largest piece (bytes) of a task's result in the DataFrame "
                               "stage's output rows", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        from sparkps.spark.common.result_chunks import CHUNK_BYTES
        self._setDefault(schedulerPlacement="auto", resultChunkBytes=CHUNK_BYTES)


def placement_settings(estimator):
    """SparkTrainer's ``scheduler`` and ``chunk_bytes`` of an estimator's params: a bad one is one ConfigError
    naming the param."""
    from sparkps.errors import ConfigError
    from sparkps.spark.driver.placement import PLACEMENTS
    get = estimator.getOrDefault
    placement = str(get("schedulerPlacement")).strip().lower()
    if placement not in PLACEMENTS:
        raise ConfigError("param schedulerPlacement must be one of %s, got %r"
                          % (", ".join(PLACEMENTS), get("schedulerPlacement")))
    chunk = get("resultChunkBytes")
    if not isinstance(chunk, int) or chunk < 1:
        raise ConfigError("param resultChunkBytes must be a whole number of bytes >= 1, got %r" % (chunk,))
    return {"scheduler": placement, "chunk_bytes": chunk}


class HasTrainerParams(HasBatchSize, HasNumEpochs, HasNumWorkers, HasNumServers, HasKvstore, HasOptimizer,
                       HasLearningRate, HasTrainingSeed, HasValidationFraction, HasStrategyOptions, HasCheckpoints,
                       HasCurve, HasResourceProfile, HasPlacement):
    """Every param both estimators hand SparkTrainer: the training loop's, the strategy's and the checkpoints'.

    Its ``write()`` (the estimators'; the models define their own) is pyspark.ml's params writer, able to
    ``overwrite()`` on a Spark Connect session too."""

    def write(self):
        """An MLWriter of these params (``persistence.ParamsWriter``); saving blocks for a small Spark job."""
        from sparkps.spark.ml.persistence import ParamsWriter
        return ParamsWriter(self)


def compression_of(kind, threshold):
    """SparkTrainer's ``gradient_compression`` of ``gradientCompression`` and ``compressionThreshold``."""
    if not kind:
        return None
    return {"type": kind, "threshold": threshold} if kind == "2bit" else {"type": kind}


def strategy_settings(estimator, strategies=STRATEGIES):
    """SparkTrainer's ``kvstore``, ``kvstore_params``, ``gradient_compression`` and ``curve`` of an estimator's
    params, checked first: an unknown strategy, option or codec is one ConfigError naming it (and listing
    ``strategies``, those the estimator can train with), before any Spark job runs."""
    get = estimator.getOrDefault
    compression = compression_of(get("gradientCompression"), get("compressionThreshold"))
    options = check_strategy(get("kvstore"), parse_options(get("kvstoreParams")), compression, strategies)
    from sparkps.comm.codec import create_codec
    create_codec(compression)
    return {"kvstore": get("kvstore"), "kvstore_params": options, "gradient_compression": compression,
            "curve": curve_of(get("curve"))}


COUNT_PARAMS = ("numWorkers", "numServers", "numEpochs", "batchSize")


def check_counts(estimator):
    """ConfigError naming the param the user set (``numWorkers``, ``numServers``, ``numEpochs``, ``batchSize``)
    when it is not a whole number >= 1, or when ``numServers`` > ``numWorkers``. Needs no Spark: ``fit`` calls it
    before any Spark job."""
    from sparkps.errors import ConfigError
    from sparkps.spark.driver.checks import check_roles
    get = estimator.getOrDefault
    for name in COUNT_PARAMS:
        value = get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError("param %s must be a whole number >= 1, got %r" % (name, value))
    check_roles(get("numWorkers"), get("numServers"), ("numWorkers", "numServers"))


def checkpoint_settings(estimator):
    """SparkTrainer's ``checkpoint_dir``, ``checkpoint_steps`` and ``max_restarts`` of an estimator's params."""
    get = estimator.getOrDefault
    return {"checkpoint_dir": get("checkpointDir") or None, "checkpoint_steps": get("checkpointSteps") or None,
            "max_restarts": get("maxRestarts")}

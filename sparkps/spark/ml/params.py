"""Params both pyspark.ml estimators take (the classifier of ``ml.py`` and the CTR classifier of ``ctr.py``): the
strategy's options and compression, and checkpoints with restarts, declared once with SparkTrainer's defaults and
turned into SparkTrainer's keyword arguments here.

    trainer = SparkTrainer(..., **strategy_settings(estimator), **checkpoint_settings(estimator))

Saved and loaded with the estimator (DefaultParamsWritable / Readable) like any other Param.
"""
from pyspark.ml.param import Param, Params, TypeConverters

from sparkps.kvstore.strategies import check_strategy, parse_options


def _param(name, doc, converter):
    return Param(Params._dummy(), name, doc, typeConverter=converter)


class HasStrategyOptions(Params):
    """``kvstoreParams`` (the strategy's options as NAME=VALUE), ``gradientCompression``, ``compressionThreshold``."""

    kvstoreParams = _param("kvstoreParams", "strategy options as NAME=VALUE strings: replicas_to_aggregate, "
                           "total_num_replicas (dist_sync_replicas), max_staleness (dist_async), interval_steps "
                           "(dist_model_average), communication_period, moving_rate (dist_easgd)",
                           TypeConverters.toListString)
    gradientCompression = _param("gradientCompression", "'' (none), fp16 or 2bit", TypeConverters.toString)
    compressionThreshold = _param("compressionThreshold", "2bit: the threshold t of {-t, 0, +t}",
                                  TypeConverters.toFloat)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(kvstoreParams=[], gradientCompression="", compressionThreshold=0.5)


class HasCheckpoints(Params):
    """``checkpointDir``, ``checkpointSteps`` and ``maxRestarts`` (SparkTrainer's checkpoint_dir, checkpoint_steps,
    max_restarts: with a folder, a fit whose task or server dies restarts from the newest checkpoint)."""

    checkpointDir = _param("checkpointDir", "folder every server can write: weights, optimizer state and each "
                           "worker's place in its data after each epoch ('' for none); with it, a fit whose task or "
                           "server process dies restarts from the newest checkpoint", TypeConverters.toString)
    checkpointSteps = _param("checkpointSteps", "with checkpointDir: also checkpoint every N steps (0: at epoch "
                             "ends only)", TypeConverters.toInt)
    maxRestarts = _param("maxRestarts", "with checkpointDir: restarts from the newest checkpoint before fit fails",
                         TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(checkpointDir="", checkpointSteps=0, maxRestarts=2)


def compression_of(kind, threshold):
    """SparkTrainer's ``gradient_compression`` of ``gradientCompression`` and ``compressionThreshold``."""
    if not kind:
        return None
    return {"type": kind, "threshold": threshold} if kind == "2bit" else {"type": kind}


def strategy_settings(estimator):
    """SparkTrainer's ``kvstore``, ``kvstore_params`` and ``gradient_compression`` of an estimator's params, checked
    first: an unknown strategy, option or codec is one ConfigError naming it, before any Spark job runs."""
    get = estimator.getOrDefault
    compression = compression_of(get("gradientCompression"), get("compressionThreshold"))
    options = check_strategy(get("kvstore"), parse_options(get("kvstoreParams")), compression)
    from sparkps.comm.codec import create_codec
    create_codec(compression)
    return {"kvstore": get("kvstore"), "kvstore_params": options, "gradient_compression": compression}


def checkpoint_settings(estimator):
    """SparkTrainer's ``checkpoint_dir``, ``checkpoint_steps`` and ``max_restarts`` of an estimator's params."""
    get = estimator.getOrDefault
    return {"checkpoint_dir": get("checkpointDir") or None, "checkpoint_steps": get("checkpointSteps") or None,
            "max_restarts": get("maxRestarts")}

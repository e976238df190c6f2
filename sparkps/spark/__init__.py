"""sparkps on Apache Spark: the only package that imports pyspark.

    from sparkps.spark import SparkTrainer, SparkModel
    model = SparkTrainer(net, input_shape=(64,), num_workers=2, num_servers=1).fit(rdd)

Sub-packages by where their code runs: ``driver/`` (the trainer, the stage it watches, checks, progress,
restarts), ``task/`` (the barrier task and what it reads), ``model/`` (SparkModel, the predictor, table rows),
``ml/`` (the pyspark.ml estimators over shared Params), ``submit/`` (what spark-submit jobs share). Modules
at this level (``batches``, ``row_places``, ``sparse_inputs``) are used by more than one of them.
Names are imported on first use, so ``import sparkps.spark`` does not start a JVM or import pyspark.
"""
import importlib

_NAMES = {"SparkTrainer": "driver.trainer", "SparkModel": "model.spark_model",
          "SparkpsClassifier": "ml.classifier", "SparkpsClassificationModel": "ml.classifier",
          "SparkpsCTRClassifier": "ml.ctr_classifier", "SparkpsCTRModel": "ml.ctr_classifier"}

__all__ = list(_NAMES)


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module("sparkps.spark.%s" % _NAMES[name]), name)
    raise AttributeError("module 'sparkps.spark' has no attribute %r" % name)

"""sparkps on Apache Spark: the only package that imports pyspark.

    from sparkps.spark import SparkTrainer, SparkModel
    model = SparkTrainer(net, input_shape=(64,), num_workers=2, num_servers=1).fit(rdd)

Sub-packages by where their code runs: ``driver/`` (the trainer, the stage it watches, checks, progress,
restarts), ``task/`` (the barrier task and what it reads), ``model/`` (SparkModel, the predictor, table rows),
``ml/`` (the pyspark.ml estimators over shared Params), ``submit/`` (what spark-submit jobs share), and
``common/`` (``batches``, ``row_places``, ``sparse_inputs``: used by more than one of them). They import only
downward: ml -> submit / driver -> task -> model -> common (tests/test_layering.py).
Names are imported on first use, so ``import sparkps.spark`` does not start a JVM or import pyspark;
``mlp_symbol`` (sparkps.nets.mlp) is here as sparkps 0.1 had it.
"""
import importlib

_NAMES = {"SparkTrainer": "sparkps.spark.driver.trainer", "SparkModel": "sparkps.spark.model.spark_model",
          "SparkpsClassifier": "sparkps.spark.ml.classifier",
          "SparkpsClassificationModel": "sparkps.spark.ml.classifier",
          "SparkpsCTRClassifier": "sparkps.spark.ml.ctr_classifier",
          "SparkpsCTRModel": "sparkps.spark.ml.ctr_classifier",
          "mlp_symbol": "sparkps.nets.mlp"}

__all__ = list(_NAMES)


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError("module 'sparkps.spark' has no attribute %r" % name)

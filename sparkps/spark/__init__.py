"""sparkps on Apache Spark: the only package that imports pyspark.

    from sparkps.spark import SparkTrainer, SparkModel
    model = SparkTrainer(net, input_shape=(64,), num_workers=2, num_servers=1).fit(rdd)

``SparkpsClassifier`` / ``SparkpsClassificationModel`` (pyspark.ml) live in ``sparkps.spark.ml``.
Names are imported on first use, so ``import sparkps.spark`` does not start a JVM or import pyspark.
"""
import importlib

_NAMES = {"SparkTrainer": "trainer", "SparkModel": "spark_model", "SparkpsClassifier": "ml",
          "SparkpsClassificationModel": "ml", "mlp_symbol": "networks"}

__all__ = list(_NAMES)


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module("sparkps.spark.%s" % _NAMES[name]), name)
    raise AttributeError("module 'sparkps.spark' has no attribute %r" % name)

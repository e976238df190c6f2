"""The class path sparkps 0.1 recorded for the CTR estimator in saved pipelines (``sparkps.spark.ctr.*``).

pyspark.ml writes an estimator's module and class name into its metadata and imports that path when it loads;
this module keeps the old path loadable. New code imports :mod:`sparkps.spark.ml.ctr_classifier`.
"""
from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier, SparkpsCTRModel

__all__ = ["SparkpsCTRClassifier", "SparkpsCTRModel"]

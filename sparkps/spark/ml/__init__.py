"""The pyspark.ml estimators: ``SparkpsClassifier`` (an MLP over a features vector, ``classifier.py``) and
``SparkpsCTRClassifier`` (a CTR zoo model over categorical and numeric columns, ``ctr_classifier.py``), whose
shared Params are declared once in ``shared_params.py``.

``sparkps.spark.ml.SparkpsClassifier`` is also the class path pipelines saved by sparkps 0.1 recorded, so
those pipelines load unchanged (see ``persistence.py``).
"""
from sparkps.spark.ml.classifier import SparkpsClassificationModel, SparkpsClassifier
from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier, SparkpsCTRModel

__all__ = ["SparkpsClassificationModel", "SparkpsClassifier", "SparkpsCTRClassifier", "SparkpsCTRModel"]

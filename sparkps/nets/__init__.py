"""Networks built from a few settings: the multilayer perceptron (``sparkps.nets.mlp``, shared by the
``sparkps symbol mlp`` command, the Spark job, the pyspark.ml estimator and the benchmarks), the
click-through-rate model zoo (``build``) from a FeatureSpec, and Angel's JSON networks
(``sparkps.nets.angel_json``)."""
from sparkps.ctr.features import DENSE, IDS, LABEL, PADDING_ID, FeatureSpec
from sparkps.nets.zoo import MODELS, build

__all__ = ["FeatureSpec", "MODELS", "build", "IDS", "DENSE", "LABEL", "PADDING_ID"]

"""Click-through-rate networks: the model zoo (``build``) from a FeatureSpec, and Angel's JSON networks
(``sparkps.nets.angel_json``)."""
from sparkps.nets.features import DENSE, IDS, LABEL, PACKED, FeatureSpec
from sparkps.nets.zoo import MODELS, build

__all__ = ["FeatureSpec", "MODELS", "build", "IDS", "DENSE", "LABEL", "PACKED"]

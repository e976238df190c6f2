"""How the pyspark.ml models save and load: their Params as pyspark.ml metadata (DefaultParams*), then the
trained SparkModel under ``<path>/weights``. Paths must be local or mounted (``file:`` URIs accepted)."""
import os

from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter

from sparkps.spark.model.spark_model import SparkModel

WEIGHTS_DIR = "weights"


class ModelWriter(DefaultParamsWriter):
    """Params as pyspark.ml metadata, then the weights of ``instance.spark_model`` in ``<path>/weights``."""

    def saveImpl(self, path):
        super().saveImpl(path)
        self.instance.spark_model.save(os.path.join(local_path(path), WEIGHTS_DIR))


class ModelReader(DefaultParamsReader):
    """Reads what ModelWriter wrote."""

    def load(self, path):
        model = super().load(path)
        model.spark_model = SparkModel.load(os.path.join(local_path(path), WEIGHTS_DIR))
        return model


def local_path(path):
    """``path`` without a ``file:`` scheme."""
    return path[len("file:"):] if str(path).startswith("file:") else path

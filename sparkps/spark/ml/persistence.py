"""How the pyspark.ml models save and load: their Params as pyspark.ml metadata (DefaultParams*), then the
trained SparkModel under ``<path>/weights``. Paths must be local or mounted (``file:`` URIs accepted).

The saved layout is versioned by ``sparkpsFormat`` in the pyspark.ml metadata (see docs/saved_models.md):

* 1 (sparkps 0.1.0, no ``sparkpsFormat``): the class recorded as ``sparkps.spark.ml.SparkpsClassificationModel``
  or ``sparkps.spark.ctr.SparkpsCTRModel`` (both paths still import), ``weights`` in SparkModel format 1;
* 2: ``sparkpsFormat: 2``, the class recorded where it is defined now (``sparkps.spark.ml.classifier``,
  ``sparkps.spark.ml.ctr_classifier``), ``weights`` in SparkModel format 2.

The ``weights`` folder carries its own version (:meth:`SparkModel.load` reads every earlier one). A version newer
than :data:`FORMAT` is a DataError naming the model's folder and both versions.
"""
import os

from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter

from sparkps.errors import DataError
from sparkps.spark.model.spark_model import SparkModel

WEIGHTS_DIR = "weights"
FORMAT_FIELD, FORMAT = "sparkpsFormat", 2


class ModelWriter(DefaultParamsWriter):
    """Params as pyspark.ml metadata (with ``sparkpsFormat``), then the weights of ``instance.spark_model`` in
    ``<path>/weights``."""

    def saveImpl(self, path):
        # self.sc, not self.sparkSession: pyspark 3.5 takes a SparkContext here, 4.x either
        DefaultParamsWriter.saveMetadata(self.instance, path, self.sc, extraMetadata={FORMAT_FIELD: FORMAT})
        self.instance.spark_model.save(os.path.join(local_path(path), WEIGHTS_DIR))


class ModelReader(DefaultParamsReader):
    """Reads what ModelWriter wrote, in this version's format or an earlier one."""

    def load(self, path):
        check_format(path, DefaultParamsReader.loadMetadata(path, self.sc))
        model = super().load(path)
        model.spark_model = SparkModel.load(os.path.join(local_path(path), WEIGHTS_DIR))
        return model


def check_format(path, metadata):
    """The format version of a saved model from its pyspark.ml ``metadata`` (1 without ``sparkpsFormat``);
    DataError naming ``path`` when it is newer than this code reads or not a positive integer."""
    version = metadata.get(FORMAT_FIELD, 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise DataError("%s: %s must be a positive integer, got %r" % (path, FORMAT_FIELD, version))
    if version > FORMAT:
        raise DataError("%s: the model was saved in sparkps model format %d by a newer sparkps; this version reads "
                        "formats 1 to %d (upgrade sparkps to load it)" % (path, version, FORMAT))
    return version


def local_path(path):
    """``path`` without a ``file:`` scheme."""
    return path[len("file:"):] if str(path).startswith("file:") else path

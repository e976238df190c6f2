"""How the pyspark.ml models save and load: their Params as pyspark.ml metadata (DefaultParams*), then the
trained SparkModel under ``<path>/weights``. Paths must be local or mounted (``file:`` URIs accepted).

The saved layout is versioned by ``sparkpsFormat`` in the pyspark.ml metadata (see docs/saved_models.md):

* 1 (sparkps 0.1.0, no ``sparkpsFormat``): the class recorded as ``sparkps.spark.ml.SparkpsClassificationModel``
  or ``sparkps.spark.ctr.SparkpsCTRModel`` (both paths still import), ``weights`` in SparkModel format 1;
* 2: ``sparkpsFormat: 2``, the class recorded where it is defined now (``sparkps.spark.ml.classifier``,
  ``sparkps.spark.ml.ctr_classifier``), ``weights`` in SparkModel format 2.

A CTR model's metadata also holds ``epochs`` (how many it was trained) and ``history`` (its per-epoch metrics), epochs
counted from 1 as the jobs' summaries count them (the ``weights`` folder is SparkModel's own, whose history counts
from 0 like its ``best_epoch``).  Saving over an existing path needs ``write().overwrite()``, as pyspark.ml's own
writers: without it the save is a ConfigError naming the path, before anything is written.

The ``weights`` folder carries its own version (:meth:`SparkModel.load` reads every earlier one). A version newer
than :data:`FORMAT` is a DataError naming the model's folder and both versions.
"""
import os

from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter

from sparkps.errors import ConfigError, DataError
from sparkps.spark.model.spark_model import SparkModel

WEIGHTS_DIR = "weights"
FORMAT_FIELD, FORMAT = "sparkpsFormat", 2


class ModelWriter(DefaultParamsWriter):
    """Params as pyspark.ml metadata (with ``sparkpsFormat`` and ``extra``, a dict of JSON values), then the weights
    of ``instance.spark_model`` in ``<path>/weights``.  Blocks for a small Spark job (the metadata file)."""

    def __init__(self, instance, extra=None):
        super().__init__(instance)
        self.extra = dict(extra or {})

    def saveImpl(self, path):
        check_free(path, self.shouldOverwrite)
        # self.sc, not self.sparkSession: pyspark 3.5 takes a SparkContext here, 4.x either
        DefaultParamsWriter.saveMetadata(self.instance, path, self.sc,
                                         extraMetadata={**self.extra, FORMAT_FIELD: FORMAT})
        self.instance.spark_model.save(os.path.join(local_path(path), WEIGHTS_DIR))


class ModelReader(DefaultParamsReader):
    """Reads what ModelWriter wrote, in this version's format or an earlier one."""

    def load(self, path):
        check_format(path, DefaultParamsReader.loadMetadata(path, self.sc))
        model = super().load(path)
        model.spark_model = SparkModel.load(os.path.join(local_path(path), WEIGHTS_DIR))
        return model


def check_free(path, overwrite):
    """ConfigError naming ``path`` when something is there and ``overwrite`` is false (pyspark.ml would fail inside
    the metadata's Spark job, with a Java trace); ``write().overwrite()`` has removed it already."""
    if not overwrite and os.path.exists(local_path(path)):
        raise ConfigError("%s already exists: save with write().overwrite().save(%r) to replace it, or choose "
                          "another path" % (path, path))


def numbered_from_one(history):
    """``history`` (per-epoch dicts, ``epoch`` counted from 0 as a fit records it) with epochs counted from 1."""
    return [dict(entry, epoch=int(entry["epoch"]) + 1) for entry in history]


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

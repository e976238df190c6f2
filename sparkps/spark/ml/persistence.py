"""How the pyspark.ml models save and load: their Params as pyspark.ml metadata (DefaultParams*), then the
trained SparkModel under ``<path>/weights``. A path is a Spark URI (``hdfs://``, ``s3a://``, ``abfss://``,
``gs://``, ``viewfs://``, ``file://``) or a plain path: the metadata goes through pyspark.ml (Spark's Hadoop file
systems), the weights through the same file systems (:mod:`sparkps.spark.model.storage`), so the whole model lands
on the store Spark is configured for. A store this Python process cannot reach (a URI on Spark Connect, a scheme no
Hadoop FileSystem serves) is one ConfigError naming the path before anything is written.

The saved layout is versioned by ``sparkpsFormat`` in the pyspark.ml metadata (see docs/saved_models.md):

* 1 (sparkps 0.1.0, no ``sparkpsFormat``): the class recorded as ``sparkps.spark.ml.SparkpsClassificationModel``
  or ``sparkps.spark.ctr.SparkpsCTRModel`` (both paths still import), ``weights`` in SparkModel format 1;
* 2: ``sparkpsFormat: 2``, the class recorded where it is defined now (``sparkps.spark.ml.classifier``,
  ``sparkps.spark.ml.ctr_classifier``), ``weights`` in SparkModel format 2.

A CTR model's metadata also holds ``epochs`` (how many it was trained) and ``history`` (its per-epoch metrics), epochs
counted from 1 as the jobs' summaries count them (the ``weights`` folder is SparkModel's own, whose history counts
from 0 like its ``best_epoch``).  Saving over an existing path needs ``write().overwrite()``, as pyspark.ml's own
writers: without it the save is a ConfigError naming the path, before anything is written.

Nothing here needs a SparkContext: the metadata is one text file written and read through the session's DataFrame
API (pyspark.ml's own ``saveMetadata`` / ``loadMetadata``), the weights with plain file I/O, and ``overwrite()``
removes the old folder itself on a Spark Connect session (pyspark.ml asks the JVM of a classic one). So models and
estimators save and load on classic and Spark Connect sessions alike, in one format: a model saved on one kind of
session loads on the other. On Spark Connect the metadata is written by the server and the weights by the client,
so the path must be one both see (the same machine, or a mounted file system): the client has no JVM to reach a
Hadoop store through.

The ``weights`` folder carries its own version (:meth:`SparkModel.load` reads every earlier one). A version newer
than :data:`FORMAT` is a DataError naming the model's folder and both versions.
"""
from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter

from sparkps.errors import ConfigError, DataError
from sparkps.spark.common.session import is_connect
from sparkps.spark.model.spark_model import SparkModel
from sparkps.spark.model.storage import files_for

WEIGHTS_DIR = "weights"
FORMAT_FIELD, FORMAT = "sparkpsFormat", 2


class ParamsWriter(DefaultParamsWriter):
    """pyspark.ml's DefaultParamsWriter (an estimator's params as metadata), able to ``overwrite()`` on a Spark Connect
    session too. Blocks for a small Spark job (the metadata file)."""

    def save(self, path):
        """Write ``path`` (replacing it with ``overwrite()``), on either session kind."""
        if self.shouldOverwrite and is_connect(self.sparkSession):
            remove_saved(path, self.sparkSession)
            self.saveImpl(path)
            return
        super().save(path)

    def metadata_session(self):
        """What pyspark.ml's ``saveMetadata`` / ``loadMetadata`` take: the SparkContext of a classic session (pyspark
        3.5 wants one there), the session itself on Spark Connect (which has none)."""
        return session_for_metadata(self.sparkSession)


class ModelWriter(ParamsWriter):
    """Params as pyspark.ml metadata (with ``sparkpsFormat`` and ``extra``, a dict of JSON values), then the weights
    of ``instance.spark_model`` in ``<path>/weights``.  Blocks for a small Spark job (the metadata file)."""

    def __init__(self, instance, extra=None):
        super().__init__(instance)
        self.extra = dict(extra or {})

    def saveImpl(self, path):
        files = files_for(path, self.sparkSession)     # a store the weights cannot reach: before any write
        check_free(path, self.shouldOverwrite, files)
        DefaultParamsWriter.saveMetadata(self.instance, path, self.metadata_session(),
                                         extraMetadata={**self.extra, FORMAT_FIELD: FORMAT})
        self.instance.spark_model.save(files.join(path, WEIGHTS_DIR), session=self.sparkSession)


class ModelReader(DefaultParamsReader):
    """Reads what ModelWriter wrote, in this version's format or an earlier one, on either session kind."""

    def load(self, path):
        check_format(path, DefaultParamsReader.loadMetadata(path, session_for_metadata(self.sparkSession)))
        files = files_for(path, self.sparkSession)
        model = super().load(path)
        model.spark_model = SparkModel.load(files.join(path, WEIGHTS_DIR), session=self.sparkSession)
        return model


def session_for_metadata(session):
    """The SparkContext of a classic ``session``, or a Spark Connect ``session`` itself (it has no SparkContext)."""
    return session if is_connect(session) else session.sparkContext


def remove_saved(path, session=None):
    """Remove what is at ``path`` (a folder or a file, on the store ``session`` reaches it on) before it is written
    again; nothing when absent."""
    files_for(path, session).delete(path)


def check_free(path, overwrite, files=None):
    """ConfigError naming ``path`` when something is there (on the store of ``files``; None: the local file system)
    and ``overwrite`` is false (pyspark.ml would fail inside the metadata's Spark job, with a Java trace);
    ``write().overwrite()`` has removed it already."""
    if not overwrite and (files or files_for(path)).exists(path):
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

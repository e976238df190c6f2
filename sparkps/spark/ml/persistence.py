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
import os

from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter

from sparkps.errors import ConfigError, DataError
from sparkps.spark.common.session import is_connect
from sparkps.spark.model.spark_model import SparkModel
from sparkps.spark.model.storage import files_for, is_uri

WEIGHTS_DIR = "weights"
FORMAT_FIELD, FORMAT = "sparkpsFormat", 2


class ParamsWriter(DefaultParamsWriter):
    """pyspark.ml's DefaultParamsWriter (an estimator's params as metadata), able to ``overwrite()`` on a Spark Connect
    session too. Blocks for a small Spark job (the metadata file)."""

    def save(self, path):
        """Write ``path`` (replacing it with ``overwrite()``), on either session kind. A local ``path`` that cannot
        be written (a read-only or pseudo file system, a file in the way) is one ConfigError naming it and the
        cause, before Spark writes anything."""
        if self.shouldOverwrite and is_connect(self.sparkSession):
            remove_saved(path, self.sparkSession)
            self.saveImpl(path)
            return
        super().save(path)

    def saveImpl(self, path):
        if not is_uri(path):       # a URI is Spark's to write (on Spark Connect too)
            check_writable(path, files_for(path, self.sparkSession))
        super().saveImpl(path)

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
        check_writable(path, files)
        DefaultParamsWriter.saveMetadata(self.instance, path, self.metadata_session(),
                                         extraMetadata={**self.extra, FORMAT_FIELD: FORMAT})
        self.instance.spark_model.save(files.join(path, WEIGHTS_DIR), session=self.sparkSession)


class ModelReader(DefaultParamsReader):
    """Reads what ModelWriter wrote, in this version's format or an earlier one, on either session kind."""

    def load(self, path):
        files = files_for(path, self.sparkSession)
        check_saved_model(path, files)
        metadata = DefaultParamsReader.loadMetadata(path, session_for_metadata(self.sparkSession))
        check_format(path, metadata)
        check_class(path, metadata, self.cls)
        model = super().load(path)
        model.spark_model = SparkModel.load(files.join(path, WEIGHTS_DIR), session=self.sparkSession)
        return model


def check_saved_model(path, files):
    """ConfigError saying what a local ``path`` holds when it is not a pyspark.ml model folder (it has no
    ``metadata`` folder): a SparkModel folder (``SparkModel.load``, as ``jobs/train_classifier.py`` writes its
    model), a job's output folder (its model is ``PATH/model``), nothing at all. Instead of Spark's
    ``PATH_NOT_FOUND .../metadata``. Paths of other file systems (``files`` not on the local disk) are left to
    Spark."""
    if not files.on_local_disk:
        return
    folder = files.local(path)
    if os.path.isdir(os.path.join(folder, "metadata")):
        return
    if not os.path.exists(folder):
        raise ConfigError("%s: no such model folder" % path)
    if os.path.isfile(os.path.join(folder, "metadata.json")):
        raise ConfigError("%s holds a SparkModel (the model jobs/train_classifier.py and SparkTrainer.fit save), not "
                          "a pyspark.ml model: load it with sparkps.spark.SparkModel.load(%r)" % (path, path))
    inner = os.path.join(folder, "model")
    if os.path.isdir(inner):
        model = os.path.join(str(path), "model")
        raise ConfigError("%s is a job's output folder, not a model: its model is %s (load it with %s(%r))"
                          % (path, model, saved_loader(inner), model))
    raise ConfigError("%s holds no saved pyspark.ml model (no metadata folder): give the folder a model's "
                      "write().save(path) wrote" % path)


def saved_loader(folder):
    """The call that loads the local model ``folder``: ``SparkModel.load`` for a SparkModel folder, else the
    ``load`` of the pyspark.ml class its metadata records."""
    import glob
    import json
    if os.path.isfile(os.path.join(folder, "metadata.json")):
        return "SparkModel.load"
    for part in sorted(glob.glob(os.path.join(folder, "metadata", "part-*"))):
        try:
            with open(part, encoding="utf-8") as handle:
                return "%s.load" % json.loads(handle.readline())["class"].rsplit(".", 1)[-1]
        except (OSError, ValueError, KeyError, AttributeError):
            continue
    return "its class's load"


def check_class(path, metadata, cls):
    """ConfigError naming the class a saved model's ``metadata`` records when it is not ``cls`` (or a subclass
    of it): the folder holds another kind of model, and which class loads it."""
    saved = str(metadata.get("class", ""))
    name = saved.rsplit(".", 1)[-1]
    if not name or any(klass.__name__ == name for klass in cls.__mro__):
        return
    raise ConfigError("%s holds a %s, not a %s: load it with %s.load(%r)" % (path, name, cls.__name__, name, path))


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


def check_writable(path, files):
    """Create the local folder ``path`` (and its parents) where the model is about to be written; ConfigError naming
    ``path`` and the file system's cause when it cannot be (``/proc/x``, a file in the way, no permission), instead
    of the metadata's Spark job failing with a Java trace. Paths of other file systems (``files`` not on the local
    disk) are left to Spark."""
    if not files.on_local_disk:
        return
    folder = files.local(path)
    try:
        os.makedirs(folder, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise ConfigError("cannot save the model to %s: %s" % (path, exc.strerror or exc)) from None


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

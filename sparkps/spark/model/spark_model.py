"""SparkModel: a trained network that predicts on RDDs and DataFrames and saves in FeedForward's format.

    model = trainer.fit(rdd)                       # or SparkModel.load('/models/digits')
    probs = model.predict(features_rdd)            # RDD of output arrays, input order (classic sessions)
    scored = model.transform(df)                   # + 'prediction' and 'probability' columns (either session kind)
    model.save('/models/digits')                   # model-symbol.json, model-NNNN.params, metadata.json
    ff = sparkps.FeedForward.load('/models/digits/model', model.epoch)

``transform`` needs no SparkContext: a model of up to ``INLINE_BYTES`` travels inside the pandas UDF; a larger one
is read by each Python worker from a folder every executor can read (where the model was saved or loaded from,
else ``spark.sparkps.modelDir``, else a temporary folder on a local master).

Every path is a Spark URI or a plain path (:mod:`sparkps.spark.model.storage`): ``save`` and ``load`` of an
``hdfs://``, ``s3a://``, ``abfss://``, ``gs://`` or ``viewfs://`` folder go through Spark's Hadoop file systems
(the files written in place, ``metadata.json`` last; shard files copied file by file, their manifest after them),
and ``transform`` reads such a model's shard files with Spark's Parquet reader.
"""
import os
import posixpath
import tempfile
import uuid

import numpy as np

from sparkps.errors import ConfigError, DataError
from sparkps.spark.common.batches import iter_batches
from sparkps.spark.common.typed_inputs import TypedInputs
from sparkps.spark.common.worker_python import settle_worker_python
from sparkps.spark.model.model_folder import METADATA, local_path, read_folder, write_folder
from sparkps.spark.model.predictor import (
    Predictor,
    data_input_name,
    float_row_width,
    model_payload,
    params_from_bytes,
    predictor_for,
)
from sparkps.spark.model.sharded_tables import TABLES_FOLDER
from sparkps.spark.model.storage import files_for, get_folder, is_uri, put_folder, recorded_files

MAX_BROADCAST_BYTES = 1 << 30     # the largest model shipped to the executors, in a UDF's closure or broadcast
# a model up to this size ships inside the UDF: Spark Connect sends the UDF in a plan message, which gRPC caps
# at 128 MB by default (spark.connect.grpc.maxInboundMessageSize)
INLINE_BYTES = 32 << 20
MODEL_DIR_CONF = "spark.sparkps.modelDir"     # a folder every executor reads, for models above INLINE_BYTES


class SparkModel:
    """A symbol with its trained parameters plus what prediction needs (input shape, label name).

    ``history`` holds per-epoch training metrics, e.g. ``[{'epoch': 0, 'accuracy': 0.9, ...}, ...]``;
    ``best_epoch`` (counted from 0, None without early stopping) is the epoch whose weights the model holds
    when a validation set chose them.
    """

    def __init__(self, symbol, arg_params, aux_params=None, input_shape=None, label_name="softmax_label",
                 batch_size=256, epoch=0, history=None, ctx="cpu", best_epoch=None, input_layout=None):
        self.symbol_json = symbol if isinstance(symbol, str) else symbol.tojson()
        self.arg_params = dict(arg_params)
        self.aux_params = dict(aux_params or {})
        if input_shape is None:
            raise ConfigError("SparkModel needs input_shape, e.g. (784,)")
        self.input_shape = tuple(int(d) for d in input_shape)
        self.label_name, self.batch_size, self.ctx = label_name, int(batch_size), ctx
        self.epoch, self.history = int(epoch), list(history or [])
        self.best_epoch = None if best_epoch is None else int(best_epoch)
        self.input_layout = TypedInputs.of(input_layout)     # the named inputs of a CTR network (TypedInputs)
        self.table_counts = {}                # {table: (ids, counts)}: how often training saw each id (CTR)
        # {table: {"added", "kept", "dropped"}}: the ids the fit added to, kept of and dropped from its initial model
        self.table_ids = {}
        self.initial_model = None             # the path (or "the given model") the fit started from; None: cold
        # a larger model is refused, whether it ships in transform's UDF or in a Spark broadcast (None: no limit)
        self.max_broadcast_bytes = MAX_BROADCAST_BYTES
        self.inline_bytes = INLINE_BYTES      # transform ships a model up to this size inside its UDF
        self.saved_path = None                # the folder this model was saved to or loaded from (its files)
        # sharded tables (format 4): the folder of their shard files and its manifest's tables map; None: inline
        self.tables_folder, self.table_manifest = None, None
        self.broadcast_table_rows = None      # transform's broadcast-join limit in rows (None: join_scoring's)
        self.model_id = uuid.uuid4().hex
        self._local = None
        self._broadcasts = {}
        self._payloads = {}
        self._staged = None                   # the staging folder of a fit's shard files this model owns

    def __getstate__(self):
        state = dict(self.__dict__)
        # bound executors, broadcasts and the staging folder's removal stay with their owner
        state.update(_local=None, _broadcasts={}, _payloads={}, _staged=None)
        return state

    def own_staged_tables(self, folder, manifest):
        """Hold the shard files the servers wrote into the staging ``folder`` at the end of a fit (``manifest``: its
        tables map) as this model's tables. The model owns the folder: ``save`` moves it into the model's folder;
        otherwise it is removed when this model is garbage or the program ends (``weakref.finalize``). A copy of
        the model (pickled, or a DataFrame its ``transform`` gave) reads the folder only while this model lives."""
        import shutil
        import weakref
        self.tables_folder, self.table_manifest = os.path.abspath(folder), manifest
        self._staged = weakref.finalize(self, shutil.rmtree, self.tables_folder, True)

    @property
    def symbol(self):
        """The network as a Symbol."""
        from sparkps import symbol as sym
        return sym.load_json(self.symbol_json)

    def payload(self, batch_size=None):
        """The form the model ships to the executors in (inside transform's UDF closure, or as the value of
        ``broadcast`` for an RDD): plain strings, numbers and .npz bytes."""
        return model_payload(self.model_id, self.symbol_json, self.arg_params, self.aux_params, self.input_shape,
                             batch_size or self.batch_size, self.label_name, self._layout_list())

    def source(self, session=None, batch_size=None):
        """How ``transform`` ships this model to the executors, a dict of plain values for the UDF's closure: the
        payload itself when its params are at most ``inline_bytes``, else ``{"id", "path", "batch_size"}`` naming
        a folder of the saved model that every executor reads (``saved_path``, else ``spark.sparkps.modelDir`` of
        ``session``, else a temporary folder when the master is local). ConfigError when the model is above
        ``max_broadcast_bytes`` (naming its tables), or too large to inline with no such folder. Needs no
        SparkContext (either session kind); blocks on writing the model's files when it must."""
        from sparkps.spark.model.table_rows import check_broadcast_size
        batch = int(batch_size or self.batch_size)
        if batch not in self._payloads:
            self._payloads[batch] = self.payload(batch)
        payload = self._payloads[batch]
        size = len(payload["params"])
        check_broadcast_size(size, self.max_broadcast_bytes, self.arg_params)
        if size <= self.inline_bytes:
            return payload
        return {"id": self.model_id, "path": self._shared_folder(session, size), "batch_size": batch,
                "input_shape": list(self.input_shape), "input_layout": self._layout_list()}

    def _shared_folder(self, session, size):
        """A folder holding this model's files that the executors can read (written here when needed)."""
        if self.saved_path and not is_uri(self.saved_path):
            return self.saved_path
        from sparkps.spark.common.session import conf
        folder = conf(session, MODEL_DIR_CONF) if session is not None else None
        master = (conf(session, "spark.master", "") if session is not None else "") or ""
        if folder and is_uri(folder):
            folder = None      # an executor's Python reads model files with open(): a store it cannot reach
        if folder:
            path = os.path.join(local_path(folder), "sparkps-model-" + self.model_id)
        elif master.startswith("local"):
            path = tempfile.mkdtemp(prefix="sparkps-model-")
        else:
            raise ConfigError(
                "the model is %.1f MB, more than ships inside a Spark task (%.1f MB): save it where every executor's "
                "Python can read it with plain file I/O (model.save(path) or write().save(path) on a shared, mounted "
                "file system) and transform the loaded model, or set %s to such a folder (a %s URI is read through "
                "Spark's JVM, which an executor's Python worker has not)" % (
                    size / 2**20, self.inline_bytes / 2**20, MODEL_DIR_CONF, self.saved_path or "hdfs://"))
        self.save(path)
        return self.saved_path

    def _layout_list(self):
        return None if self.input_layout is None else self.input_layout.to_list()

    def broadcast(self, sc, batch_size=None):
        """The payload broadcast on ``sc`` (made once per context and batch size, reused after)."""
        from sparkps.spark.model.table_rows import check_broadcast_size
        key = (id(sc), int(batch_size or self.batch_size))
        if key not in self._broadcasts:
            payload = self.payload(batch_size)
            check_broadcast_size(len(payload["params"]), self.max_broadcast_bytes, self.arg_params)
            self._broadcasts[key] = sc.broadcast(payload)
            self._broadcast_bytes = len(payload["params"])
        check_broadcast_size(self._broadcast_bytes, self.max_broadcast_bytes, self.arg_params)  # the limit may change
        return self._broadcasts[key]

    def shrink(self, min_seen=None, *, min_count=None):
        """A copy without the table rows of ids seen fewer than ``min_seen`` times in training (``table_counts``; a
        smaller model to ship to the executors and save; such ids then read as unseen ids do). ``min_count`` is the
        earlier name of ``min_seen``, still taken as a keyword (not the table option ``min_count``, which admits an
        id on the servers). ConfigError when the model has no counts, or when both names are given."""
        from sparkps.spark.model.table_rows import shrunk_params
        if min_count is not None:
            if min_seen is not None:
                raise ConfigError("shrink: give min_seen or its earlier name min_count, not both")
            min_seen = min_count
        small = SparkModel(self.symbol_json, shrunk_params(self.arg_params, self.table_counts, min_seen),
                           self.aux_params, self.input_shape, self.label_name, self.batch_size, self.epoch,
                           self.history, self.ctx, best_epoch=self.best_epoch, input_layout=self.input_layout)
        small.table_counts, small.max_broadcast_bytes = self.table_counts, self.max_broadcast_bytes
        return small

    def unpersist(self):
        """Drop this model's broadcasts from the executors (later predictions broadcast again)."""
        for broadcast in self._broadcasts.values():
            broadcast.unpersist()
        self._broadcasts = {}

    def predict_numpy(self, X):
        """Outputs for the rows of a numpy array, on the driver (no Spark). A model whose tables are shard files
        reads the rows of ``X``'s ids only, streamed from the shards (blocks on reading them)."""
        if self._local is None:
            payload = self.payload()
            self._local = Predictor(payload["symbol"], payload["params"], self.input_shape, self.batch_size,
                                    self.label_name, typed=self.input_layout)
        if self.table_manifest:
            return self._local.predict_with_rows(X, self._rows_of(X))
        return self._local.predict(X)

    def _rows_of(self, X):
        """{table: RowSparse} of the shard rows of the ids that the float or typed rows ``X`` read."""
        from sparkps.rows.config import TableConfig
        from sparkps.spark.model.join_scoring import batch_ids
        from sparkps.spark.model.sharded_tables import rows_for_ids
        if self.input_layout is None:
            raise ConfigError("a model with sharded tables predicts CTR rows (a model with an input layout)")
        X = np.asarray(X)
        if X.dtype == self.input_layout.dtype:
            inputs = self.input_layout.split(X)
        else:
            from sparkps.ctr.packed import PackedLayout
            inputs = PackedLayout(self._layout_list()).split(X.reshape(len(X), -1))
        out = {}
        folder, manifest, _ = self.checked_tables()
        files = recorded_files(folder)
        for name, entry in manifest.items():
            spec = TableConfig.from_dict(entry["options"])
            out[name] = rows_for_ids(folder, name, batch_ids(inputs, spec), spec.dim, spec.input_dim, files=files)
        return out

    def predict(self, rdd, batch_size=None):
        """RDD of output arrays (e.g. class probabilities), one per input row, in input order.

        Rows are features (array, list, Vector), ``(features, label)`` pairs or LabeledPoints; a 2-D numpy
        block gives a 2-D block of outputs.  The model is broadcast once; each Python worker binds it once.
        Lazy: nothing runs until an action.
        """
        if self.table_manifest:
            raise ConfigError("this model's tables are shard files (%s): score a DataFrame with transform, which "
                              "joins each row's ids with their rows" % self.tables_folder)
        settle_worker_python(rdd)      # before the function is wrapped: a freshly loaded model in a new program too
        broadcast = self.broadcast(rdd.context, batch_size)
        num_features = float_row_width(self.input_shape, self._layout_list())

        def predict_partition(rows):
            predictor = predictor_for(broadcast.value)
            block_rows = []
            for row in rows:
                block_rows.append(row)
                if len(block_rows) == predictor.batch_size:
                    yield from _predict_rows(predictor, block_rows, num_features)
                    block_rows = []
            if block_rows:
                yield from _predict_rows(predictor, block_rows, num_features)

        return rdd.mapPartitions(predict_partition, preservesPartitioning=True)

    def transform(self, df, featuresCol="features", predictionCol="prediction", probabilityCol="probability",
                  batch_size=None, rawPredictionCol=None):
        """``df`` plus a double ``predictionCol`` (arg-max class), a Vector ``probabilityCol`` and, when named,
        a Vector ``rawPredictionCol`` of log-probabilities (pyspark.ml's rawPrediction).

        Vectorised with a pandas UDF: features go to Arrow as float32 arrays, each Arrow batch is predicted
        in executor batches with the worker's cached Predictor.  The model travels as ``source`` says (inside
        the UDF, or read from a shared folder), never by ``sc.broadcast``: classic and Spark Connect sessions
        alike.  Lazy (a model above ``inline_bytes`` may be written to its folder first).
        """
        from sparkps.spark.common.sparse_inputs import data_dtype
        from sparkps.spark.model.udf_scoring import add_predictions
        data_name = None if self.input_layout is not None else \
            data_input_name(self.symbol, self.arg_params, self.label_name)
        if data_name is not None and data_dtype(self.symbol, data_name) != np.float32:   # (a layout: float planes)
            raise ConfigError("input %r holds the 64-bit ids of a hashed embedding table, which a DataFrame's float "
                              "features cannot carry; predict an RDD of int64 id rows instead (SparkModel.predict)"
                              % data_name)
        source = self.source(df.sparkSession, batch_size)      # no SparkContext: works on Spark Connect too
        if self.table_manifest:
            from sparkps.spark.model.join_scoring import add_joined_predictions
            folder, manifest, limit = self.checked_tables(df.sparkSession)
            return add_joined_predictions(df, source, folder, manifest, featuresCol, predictionCol, probabilityCol,
                                          rawPredictionCol, limit)
        return add_predictions(df, source, featuresCol, predictionCol, probabilityCol, rawPredictionCol)

    def checked_tables(self, session=None):
        """(tables folder, manifest's tables map, broadcast-join limit in rows: None for join_scoring's) of a model
        whose tables are shard files, its shards checked first (a missing or damaged one: one DataError naming it
        and its table, before any task scores a row); a folder on a Hadoop store is read through ``session``'s (None:
        the active session's) file systems. Blocks on reading the shard files."""
        from sparkps.rows.shards import check_shards
        check_shards(self.tables_folder, {"version": 1, "tables": self.table_manifest},
                     recorded_files(self.tables_folder, session))
        return self.tables_folder, self.table_manifest, self.broadcast_table_rows

    def save(self, path, session=None):
        """Write ``path/model-symbol.json``, ``path/model-%04d.params`` (FeedForward's format) and
        ``path/metadata.json`` (whose ``format`` is ``sparkps.SparkModel/3``, see docs/saved_models.md: its
        ``history`` and ``best_epoch`` count epochs from 1, as the jobs' summaries and the screen do); a model whose
        tables are shard files is format 4, its shard files copied file by file into ``path/tables`` (no table
        is read), their manifest after them. ``path`` is a local (or mounted) folder or a Spark URI
        (:mod:`sparkps.spark.model.storage`, through ``session``'s Hadoop file systems; None: the active session):
        a store Python cannot reach is one ConfigError naming it before anything is written. ``path`` becomes
        ``saved_path``. Blocks on the writes."""
        files = files_for(path, session)
        meta = {"epoch": self.epoch, "input_shape": self.input_shape, "label_name": self.label_name,
                "batch_size": self.batch_size, "history": self.history, "best_epoch": self.best_epoch,
                "input_layout": self._layout_list(), "table_ids": self.table_ids,
                "initial_model": self.initial_model}
        if files.python_reads:
            tables = self._place_tables(files.local(path)) if self.table_manifest else None
            self.saved_path = write_folder(files.local(path), self.to_feedforward(), meta, self.table_counts, tables)
            if tables:
                self.tables_folder = os.path.join(self.saved_path, TABLES_FOLDER)
            return
        target = files.qualified(path)
        tables = self._put_tables(files, files.join(target, TABLES_FOLDER)) if self.table_manifest else None
        with tempfile.TemporaryDirectory(prefix="sparkps-save-") as local:
            write_folder(local, self.to_feedforward(), meta, self.table_counts, tables)
            put_folder(files, local, target, last=(METADATA,))     # metadata.json last: it commits the model
        self.saved_path = target
        if tables:
            self.tables_folder = files.join(target, TABLES_FOLDER)
            if self._staged is not None:         # the fit's staging folder: its files are on the store now
                self._staged()
                self._staged = None

    def _put_tables(self, files, target):
        """The manifest path (relative to the model's folder) of this model's shard files, copied file by file from
        ``tables_folder`` (a local folder or a URI) into ``target`` on the Hadoop store of ``files`` and their
        manifest written after them (it commits the folder: no rename), unless they are there already."""
        from sparkps.rows.shards import manifest_bytes
        if self.tables_folder.rstrip("/") != target.rstrip("/"):
            files.delete(target)
            local_source = not is_uri(self.tables_folder)
            for entry in self.table_manifest.values():
                for shard in entry["shards"]:
                    source = posixpath.join(self.tables_folder, shard["path"])
                    if local_source:
                        files.put_file(local_path(source), files.join(target, shard["path"]))
                    else:
                        files.copy_file(source, files.join(target, shard["path"]))
            files.write_bytes(files.join(target, "manifest.json"), manifest_bytes(self.table_manifest))
        return TABLES_FOLDER + "/manifest.json"

    def _place_tables(self, path):
        """The manifest path (relative to ``path``) of this model's shard files, moved from the fit's staging folder
        (the model owns it) or else copied file by file into ``path/tables``, unless they are there already.
        Blocks on the copies (a move within one file system is a rename)."""
        import shutil

        from sparkps.rows.shards import copy_listed, match_mode
        target = os.path.join(os.path.abspath(path), TABLES_FOLDER)
        if is_uri(self.tables_folder):        # loaded from a Hadoop store: copied down through it
            from sparkps.rows.shards import write_manifest
            files = recorded_files(self.tables_folder)
            if os.path.exists(target):
                shutil.rmtree(target)
            for entry in self.table_manifest.values():
                for shard in entry["shards"]:
                    os.makedirs(os.path.dirname(os.path.join(target, shard["path"])), exist_ok=True)
                    files.get_file(files.join(self.tables_folder, shard["path"]), os.path.join(target, shard["path"]))
            write_manifest(target, self.table_manifest)
        elif os.path.abspath(self.tables_folder) != target:
            if os.path.exists(target):
                shutil.rmtree(target)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if self._staged is not None and self._staged.alive:
                shutil.move(self.tables_folder, target)
                self._staged.detach()
                self._staged = None
            else:       # the manifest and the files it lists: nothing else of the folder is part of the model
                copy_listed(self.tables_folder, target)
        match_mode(target, os.path.dirname(target))     # a fit's staging folder is private (0700), the model not
        return TABLES_FOLDER + "/manifest.json"

    def with_sharded_tables(self, path, num_shards=2):
        """This model saved in folder ``path`` with its sparse tables as ``num_shards`` shard files each
        (``tables/manifest.json``, SparkModel format 4; see :mod:`sparkps.spark.model.sharded_tables`), returned as
        the model of that folder: its ``arg_params`` hold the dense parameters only, ``transform`` joins the shard
        files' rows with the input's ids. For a model whose tables are too large to ship to every executor.
        ConfigError when the model has no sparse table rows. Blocks on writing the files."""
        from sparkps.spark.model.sharded_tables import sharded_table_names, write_table_shards
        names = sharded_table_names(self.symbol, self.arg_params)
        if not names:
            raise ConfigError("with_sharded_tables: the model holds no sparse table rows to shard")
        files = files_for(path)
        local = not is_uri(files.qualified(path))
        path = files.qualified(path)
        folder = os.path.join(path, TABLES_FOLDER) if local else tempfile.mkdtemp(prefix="sparkps-tables-")
        manifest = write_table_shards(folder, self.symbol, self.arg_params, self.table_counts, num_shards)
        dense = {name: value for name, value in self.arg_params.items() if name not in names}
        model = SparkModel(self.symbol_json, dense, self.aux_params, self.input_shape, self.label_name,
                           self.batch_size, self.epoch, self.history, self.ctx, best_epoch=self.best_epoch,
                           input_layout=self.input_layout)
        model.table_counts, model.max_broadcast_bytes = self.table_counts, self.max_broadcast_bytes
        if local:
            model.tables_folder, model.table_manifest = folder, manifest
        else:                 # written here, then copied to the store by save (the local folder then removed)
            model.own_staged_tables(folder, manifest)
        model.save(path)
        return model

    @classmethod
    def load(cls, path, epoch=None, from_mxnet=False, session=None, **meta):
        """Read a model written by ``save`` (by this version or an earlier one); or, with ``epoch``, the
        checkpoint ``path-symbol.json`` + ``path-%04d.params`` of ``FeedForward.save`` or of MXNet's
        ``mx.model.save_checkpoint`` (the params format is chosen by content), with ``meta`` (``input_shape``,
        ``label_name``, ...) as ``save`` would have recorded it.  ``from_mxnet=True`` (needs ``epoch``) accepts
        MXNet's params format only, so a file of another kind is a DataError naming it rather than a silent
        guess.  A model saved by a newer sparkps (a ``format`` version above this one's) is a DataError naming
        ``metadata.json`` and both versions. ``path`` of a saved folder may be a Spark URI, read through
        ``session``'s (None: the active session's) Hadoop file systems; its shard files stay on the store."""
        if from_mxnet and epoch is None:
            raise ConfigError("SparkModel.load(from_mxnet=True) needs the epoch of the MXNet checkpoint "
                              "(PREFIX-%04d.params)")
        files = files_for(path, session)
        if epoch is not None:
            from sparkps.model_files import load_checkpoint
            if files.python_reads:
                symbol, arg_params, aux_params = load_checkpoint(files.local(path), epoch, from_mxnet=from_mxnet)
            else:          # the checkpoint's two files copied down from the store first
                with tempfile.TemporaryDirectory(prefix="sparkps-load-") as local:
                    prefix = os.path.join(local, posixpath.basename(str(path).rstrip("/")))
                    for suffix in ("-symbol.json", "-%04d.params" % int(epoch)):
                        files.get_file(str(path) + suffix, prefix + suffix)
                    symbol, arg_params, aux_params = load_checkpoint(prefix, epoch, from_mxnet=from_mxnet)
            return cls(symbol, arg_params, aux_params, epoch=epoch, **meta)
        saved = read_folder(path) if files.python_reads else _read_stored_folder(files, files.qualified(path))
        meta = saved.meta
        model = cls(saved.symbol, saved.arg_params, saved.aux_params,
                    input_shape=meta["input_shape"], label_name=meta["label_name"],
                    batch_size=meta["batch_size"], epoch=meta["epoch"], history=meta.get("history"),
                    best_epoch=meta.get("best_epoch"), input_layout=TypedInputs.from_list(meta.get("input_layout")))
        model.table_counts, model.saved_path = saved.table_counts, saved.path
        model.table_ids, model.initial_model = dict(meta.get("table_ids") or {}), meta.get("initial_model")
        if meta.get("tables"):
            from sparkps.rows.shards import check_shards, read_manifest, tables_folder_of
            folder = tables_folder_of(saved.path, meta["tables"], files)
            manifest = read_manifest(folder, files)
            check_shards(folder, manifest, files)
            model.tables_folder, model.table_manifest = folder, manifest["tables"]
        return model

    @classmethod
    def from_mxnet(cls, prefix, epoch, input_shape, **meta):
        """The model of MXNet's checkpoint ``prefix-symbol.json`` + ``prefix-%04d.params`` (what
        ``mx.model.save_checkpoint(prefix, epoch, ...)`` wrote), ready to predict on rows of ``input_shape``.

            model = SparkModel.from_mxnet('/models/resnet', 10, input_shape=(3, 224, 224))
        """
        return cls.load(prefix, epoch=epoch, from_mxnet=True, input_shape=input_shape, **meta)

    def to_feedforward(self):
        """This model as a single-machine ``sparkps.FeedForward``."""
        from sparkps.train.feedforward import FeedForward
        return FeedForward(self.symbol, arg_params=self.arg_params, aux_params=self.aux_params,
                           num_epoch=self.epoch)

    @classmethod
    def from_bytes(cls, symbol_json, params_bytes, **meta):
        """A model from the symbol JSON and the .npz bytes a training task returned."""
        arg_params, aux_params = params_from_bytes(params_bytes)
        return cls(symbol_json, arg_params, aux_params, **meta)


def _read_stored_folder(files, path):
    """``read_folder`` of a model folder on a Hadoop store: its files but the shard files copied into a temporary
    local folder first (removed after), the SavedModel's ``path`` the store's URI. ConfigError or DataError name the
    store's paths."""
    if not files.exists(files.join(path, METADATA)):
        raise ConfigError("%s is not a saved SparkModel: %s is missing" % (path, METADATA))
    with tempfile.TemporaryDirectory(prefix="sparkps-load-") as local:
        get_folder(files, path, local, skip=(TABLES_FOLDER,))
        try:
            saved = read_folder(local)
        except (ConfigError, DataError) as exc:
            raise type(exc)(str(exc).replace(os.path.abspath(local), path)) from None
    return saved._replace(path=path)


def _predict_rows(predictor, rows, num_features):
    """Predict a list of rows; blocks (2-D arrays) come back as blocks, rows as single arrays."""
    if any(_row_is_block(row) for row in rows):
        for row in rows:
            if _row_is_block(row):
                yield predictor.predict(_block_features(row))
            else:
                yield from predictor.predict(_features_matrix([row], num_features, predictor.dtype))
        return
    yield from predictor.predict(_features_matrix(rows, num_features, predictor.dtype))


def _row_is_block(row):
    features = row[0] if isinstance(row, tuple) and len(row) == 2 and not np.isscalar(row[0]) else row
    return isinstance(features, np.ndarray) and features.ndim == 2


def _block_features(row):
    return row[0] if isinstance(row, tuple) else row


def _features_matrix(rows, num_features, dtype=np.float32):
    return np.concatenate([X for X, _ in iter_batches(iter(rows), max(len(rows), 1), num_features,
                                                      with_label=False, dtype=dtype)])

"""The folder of a saved SparkModel, written and read with plain file I/O (no Spark, no SparkModel):

    path/model-symbol.json, path/model-NNNN.params    FeedForward's files (the network and its weights)
    path/metadata.json                               format version, epoch, input shape, label name, batch size,
                                                     history, best epoch, input layout (docs/saved_models.md),
                                                     the ids added/kept/dropped and the initial model of a warm
                                                     start (docs/warm_start.md)
    path/table-counts.npz                            how often training saw each id of each sparse table (CTR)
    path/tables/manifest.json, path/tables/T/...     the sparse tables as shard files (format 4, sparkps.rows.shards)

``write_folder`` writes the newest format; ``read_folder`` reads it and every earlier one, giving the metadata in the
model's own terms (epochs counted from 0). SparkModel.save / SparkModel.load and the Python workers that read a
model too large to ship inside a task (:mod:`sparkps.spark.model.predictor`) all come here.
"""
import json
import os
from collections import namedtuple

import numpy as np

from sparkps.errors import ConfigError, DataError

PREFIX = "model"
METADATA = "metadata.json"
TABLE_COUNTS = "table-counts.npz"
FORMAT_NAME, FORMAT = "sparkps.SparkModel", 4
TABLES_FORMAT = 4        # the first format whose tables may be shard files (``"tables"`` in metadata.json)
PLAIN_FORMAT = 3         # what a model with its tables inline is written as

# symbol, arg_params, aux_params: the network and its weights; meta: metadata.json in the model's terms (epochs
# from 0); table_counts: {table: (ids, counts)} ({} without the file); path: the folder, absolute
SavedModel = namedtuple("SavedModel", ["symbol", "arg_params", "aux_params", "meta", "table_counts", "path"])


def local_path(path):
    """``path`` without a ``file:`` scheme (models are written with plain file I/O)."""
    path = str(path)
    return path[len("file:"):] if path.startswith("file:") else path


def write_folder(path, feedforward, meta, table_counts=None, tables=None):
    """Write a model into folder ``path`` (made when missing) in format ``PLAIN_FORMAT``, or ``TABLES_FORMAT`` with
    ``tables`` (the manifest of its shard files, relative to ``path``: ``tables/manifest.json``, already written
    there), recorded as ``"tables"`` in metadata.json: ``feedforward``'s files at
    ``meta['epoch']``, ``metadata.json`` from ``meta`` (epoch, input_shape, label_name, batch_size, history,
    best_epoch counted from 0, and input_layout, a list or None) with ``history`` and ``best_epoch`` counted
    from 1, and ``table-counts.npz`` when ``table_counts`` holds any. Returns the folder's absolute path.
    Blocks on the writes."""
    path = local_path(path)
    os.makedirs(path, exist_ok=True)
    feedforward.save(os.path.join(path, PREFIX), meta["epoch"])
    best = meta.get("best_epoch")
    version = TABLES_FORMAT if tables else PLAIN_FORMAT
    saved = {"format": "%s/%d" % (FORMAT_NAME, version), "prefix": PREFIX, "epoch": meta["epoch"],
             "input_shape": list(meta["input_shape"]), "label_name": meta["label_name"],
             "batch_size": meta["batch_size"], "history": [dict(h, epoch=h["epoch"] + 1) for h in meta["history"]],
             "best_epoch": None if best is None else best + 1}
    if meta.get("input_layout") is not None:
        saved["input_layout"] = meta["input_layout"]
    if meta.get("table_ids"):         # a fit's ids added, kept and dropped against its initial model, by table
        saved["table_ids"] = meta["table_ids"]
    if meta.get("initial_model"):
        saved["initial_model"] = meta["initial_model"]
    if tables:
        saved["tables"] = tables
    if table_counts:
        np.savez(os.path.join(path, TABLE_COUNTS), **{"%s:%s" % (part, name): array
                                                      for name, pair in table_counts.items()
                                                      for part, array in zip(("ids", "counts"), pair)})
    with open(os.path.join(path, METADATA), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    return os.path.abspath(path)


def read_folder(path):
    """The SavedModel in folder ``path`` (a ``file:`` path too), written by ``write_folder`` of this version or an
    earlier one. ConfigError when ``path`` holds no ``metadata.json``; DataError naming ``metadata.json`` when it
    cannot be read, lacks a field, or is of a newer or foreign format. Blocks on reading the files."""
    path = local_path(path)
    meta_path = os.path.join(path, METADATA)
    if not os.path.exists(meta_path):
        raise ConfigError("%s is not a saved SparkModel: %s is missing" % (path, METADATA))
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as exc:
        raise DataError("cannot read %s: %s" % (meta_path, exc)) from None
    meta = _METADATA_LOADERS[saved_format(meta_path, meta)](meta_path, meta)
    from sparkps.train.feedforward import FeedForward
    feedforward = FeedForward.load(os.path.join(path, meta["prefix"]), meta["epoch"])
    table_counts = {}
    counts = os.path.join(path, TABLE_COUNTS)
    if os.path.exists(counts):
        with np.load(counts, allow_pickle=False) as saved:
            names = {key.split(":", 1)[1] for key in saved.files}
            table_counts = {n: (saved["ids:" + n], saved["counts:" + n]) for n in names}
    return SavedModel(feedforward.symbol, feedforward.arg_params, feedforward.aux_params, meta, table_counts,
                      os.path.abspath(path))


def saved_format(meta_path, meta):
    """The format version of a SparkModel's ``metadata.json`` (``"format": "sparkps.SparkModel/N"``).

    1: sparkps 0.1.0 (params file of params format 1); 2: the params file carries its own format
    (``meta:format``, :mod:`sparkps.model_files`); 3: ``history`` and ``best_epoch`` count epochs from 1
    (the model in memory counts from 0, as MXNet's ``Epoch[0]`` lines do). Metadata without ``format`` is
    version 1. A newer version, or a foreign format, is a DataError naming the file."""
    if not isinstance(meta, dict):
        raise DataError("%s is not SparkModel metadata (a JSON object expected)" % meta_path)
    text = meta.get("format", "%s/1" % FORMAT_NAME)
    name, _, version = str(text).rpartition("/")
    if name != FORMAT_NAME or not version.isdigit() or int(version) < 1:
        raise DataError("%s: format %r is not a sparkps SparkModel (%s/N expected)" % (meta_path, text, FORMAT_NAME))
    if int(version) > FORMAT:
        raise DataError("%s: the model was saved in SparkModel format %d by a newer sparkps; this version reads "
                        "formats 1 to %d (upgrade sparkps to load it)" % (meta_path, int(version), FORMAT))
    return int(version)


def _metadata_v1(meta_path, meta):
    """0.1.0's metadata: every field ``load`` reads is there (the params file's own format says how to read it)."""
    missing = [k for k in ("prefix", "epoch", "input_shape", "label_name", "batch_size") if k not in meta]
    if missing:
        raise DataError("%s misses %s" % (meta_path, ", ".join(missing)))
    return meta


def _metadata_v3(meta_path, meta):
    """Epochs counted from 1 in ``history`` and ``best_epoch``: back to the model's count from 0."""
    meta = _metadata_v1(meta_path, meta)
    history = meta.get("history") or []
    if any(not isinstance(h, dict) or not isinstance(h.get("epoch"), int) or h["epoch"] < 1 for h in history):
        raise DataError("%s: every history entry needs an epoch counted from 1" % meta_path)
    best = meta.get("best_epoch")
    return dict(meta, history=[dict(h, epoch=h["epoch"] - 1) for h in history],
                best_epoch=None if best is None else int(best) - 1)


_METADATA_LOADERS = {1: _metadata_v1, 2: _metadata_v1, 3: _metadata_v3, 4: _metadata_v3}  # 2, 4: other files

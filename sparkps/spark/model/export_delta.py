"""The rows a table export leaves out when it is a delta: what a checkpoint folder holds, and what changed since.

A fitted model keeps its tables' final rows and each id's training count, not which rows changed when: the
servers track that (``SparseTable.export_rows(changed_only=True)``) only until they stop. So a delta is taken
against a saved model (the model a warm fit started from: yesterday's, for a day-over-day export) or a checkpoint
folder (one written with ``checkpointDir``, e.g. ``<checkpointDir>/epoch-0001``): its table
generations are replayed (the base, then each delta: rows overwritten, evicted ids dropped) exactly as a server
loading it would, and a row of the model is *changed* when the checkpoint lacks its id or holds other values.

    held = checkpoint_tables('/ckpt/epoch-0001', model.arg_params)   # DataError: another model's checkpoint
    changed, removed = changed_rows(model.arg_params['embedding_weight'], held['embedding_weight'])

Reads ``.npz`` files only (``sparkps.comm.manifest``: nothing unpickled, digests checked). Blocks on file I/O.
"""
import os

import numpy as np

from sparkps.comm.manifest import MANIFEST, read_manifest, read_piece
from sparkps.errors import DataError
from sparkps.rows.values import RowSparse


def baseline_tables(since, arg_params):
    """{table: (ids int64 sorted, values float32)} of every sparse table of ``arg_params`` in ``since``: a checkpoint
    folder (:func:`checkpoint_tables`), or a saved model (a SparkModel folder, or a pyspark.ml model's folder holding
    one in ``weights``): the model a warm fit started from, for a day-over-day delta (:func:`saved_model_tables`)."""
    folder = saved_model_folder(since)
    if folder is not None:
        return saved_model_tables(since, folder, arg_params)
    return checkpoint_tables(since, arg_params)


def saved_model_folder(since):
    """The SparkModel folder ``since`` names (itself, or its ``weights`` folder), or None when it holds none."""
    for folder in (os.fspath(since), os.path.join(os.fspath(since), "weights")):
        if os.path.isfile(os.path.join(folder, "metadata.json")):
            return folder
    return None


def saved_model_tables(since, folder, arg_params):
    """{table: (ids sorted, values)} of the saved model in ``folder`` (its inline rows, or its shard files read whole:
    the driver holds the baseline's rows while the delta is written). DataError naming ``since`` when it is another
    model's (other tables or row widths)."""
    from sparkps.spark.model.spark_model import SparkModel
    baseline = SparkModel.load(folder)
    sharded = baseline.table_manifest or {}
    held = {name: value.dim for name, value in _tables(baseline.arg_params).items()}
    held.update({name: int(entry["dim"]) for name, entry in sharded.items()})
    tables = {name: value.dim for name, value in _tables(arg_params).items()}
    if held != tables:
        raise DataError("since=%s is another model: it holds tables %s; the exported model has %s"
                        % (since, _dims(held), _dims(tables)))
    out = {}
    for name in tables:
        if name in sharded:
            from sparkps.rows.shards import iter_shard_rows
            parts = list(iter_shard_rows(baseline.tables_folder, name))
            ids = np.concatenate([p[0] for p in parts]).view(np.int64) if parts else np.empty(0, np.int64)
            values = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, tables[name]), np.float32)
        else:
            ids, values = baseline.arg_params[name].ids, np.asarray(baseline.arg_params[name].rows, np.float32)
        order = np.argsort(ids, kind="stable")
        out[name] = (np.asarray(ids, np.int64)[order], values[order])
    return out


def checkpoint_tables(directory, arg_params):
    """{table: (ids int64 sorted, values float32)} of every sparse table of ``arg_params`` as the checkpoint in
    ``directory`` holds it. DataError naming the folder when it is not a checkpoint (a folder of checkpoints names
    those inside it), and naming both when it is another model's: other tables or row widths, or dense parameters
    of other names or shapes."""
    directory = os.fspath(directory)
    if not os.path.exists(os.path.join(directory, MANIFEST)):
        inside = sorted(n for n in os.listdir(directory) if os.path.exists(os.path.join(directory, n, MANIFEST))) \
            if os.path.isdir(directory) else []
        hint = "; it holds the checkpoints %s: give one of them" % inside if inside else ""
        raise DataError("since=%s is not a checkpoint folder (no %s)%s" % (directory, MANIFEST, hint))
    manifest = read_manifest(directory)
    check_same_model(directory, manifest, arg_params)
    return {name: _replayed(directory, manifest["tables"][name], name) for name in _tables(arg_params)}


def _tables(arg_params):
    return {name: value for name, value in arg_params.items() if isinstance(value, RowSparse)}


def model_shape(arg_params):
    """(tables {name: dim}, dense {name: shape}) of a model's parameters: what tells one model from another."""
    tables = {name: value.dim for name, value in _tables(arg_params).items()}
    dense = {name: tuple(np.shape(value)) for name, value in arg_params.items() if name not in tables}
    return tables, dense


def check_same_model(directory, manifest, arg_params):
    """DataError naming the checkpoint and the model when the checkpoint's tables (names, row widths) or its dense
    keys (by the names its optimizer recorded, and their shapes) are not this model's."""
    tables, dense = model_shape(arg_params)
    held = {name: int(entry.get("options", {}).get("dim") or 0) for name, entry in manifest.get("tables", {}).items()}
    names = ((manifest.get("optimizer") or {}).get("params") or {}).get("param_idx2name") or {}
    saved = {names.get(key, "key %s" % key): tuple(entry["shape"]) for key, entry in manifest.get("keys", {}).items()}
    saved = {name: shape for name, shape in saved.items() if name not in held}
    differ = sorted(name for name in saved if dense.get(name) != saved[name])
    if held != tables or differ:
        what = ("tables %s" % _dims(held)) if held != tables else \
            "dense parameters %s" % ", ".join("%s %s" % (n, list(saved[n])) for n in differ)
        mine = ("tables %s" % _dims(tables)) if held != tables else \
            ", ".join("%s %s" % (n, list(dense[n]) if n in dense else "(absent)") for n in differ)
        raise DataError("since=%s is a checkpoint of another model: it holds %s; the exported model has %s"
                        % (directory, what, mine))


def _dims(tables):
    return "{%s}" % ", ".join("%s: dim %d" % (name, dim) for name, dim in sorted(tables.items())) if tables else "{}"


def _replayed(directory, entry, name):
    """(ids int64 sorted, values) of table ``name`` after its base and every delta of ``entry`` (a manifest's
    ``tables[name]``)."""
    ids, values = np.empty(0, np.int64), None
    for generation in entry.get("generations", ()):
        digests = generation.get("digests") or {}
        for file_name in generation["files"]:
            arrays = read_piece(directory, file_name, digests.get(file_name))
            path = os.path.join(directory, os.path.basename(file_name))
            held = str(arrays["table"]) if "table" in arrays else name
            if held != name or "ids" not in arrays or "values" not in arrays:
                raise DataError("table %r: checkpoint file %s holds no rows of it" % (name, path))
            new_ids = arrays["ids"].astype(np.uint64).view(np.int64)
            gone = np.concatenate([arrays.get("removed", np.zeros(0, np.uint64)).astype(np.uint64).view(np.int64),
                                   new_ids])
            keep = ~np.isin(ids, gone)
            ids = np.concatenate([ids[keep], new_ids])
            values = arrays["values"] if values is None else np.concatenate([values[keep], arrays["values"]])
    order = np.argsort(ids, kind="stable")
    return ids[order], (values[order] if values is not None else np.empty((0, 0), np.float32))


def changed_rows(table, held):
    """(mask over ``table``'s rows: changed or new since ``held``, ids ``held`` has and ``table`` lacks) for a
    RowSparse ``table`` and ``held`` = (sorted ids, values) from :func:`checkpoint_tables`."""
    old_ids, old_values = held
    ids, rows = table.ids, np.asarray(table.rows)
    if old_ids.size == 0:
        return np.ones(ids.size, bool), np.empty(0, np.int64)
    where = np.clip(np.searchsorted(old_ids, ids), 0, old_ids.size - 1)
    found = old_ids[where] == ids
    same = np.zeros(ids.size, bool)
    same[found] = (old_values[where[found]] == rows[found]).all(axis=1)
    return ~same, old_ids[~np.isin(old_ids, ids)]

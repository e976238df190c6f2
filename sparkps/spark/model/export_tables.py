"""A CTR model's sparse tables as Parquet rows, with a manifest and the featurization a serving stack needs
(docs/export.md, "Parquet table rows").

    export_ctr_tables('/export/ctr', spark_model, featurizer, spec, stats)
    export_ctr_tables('/export/ctr-delta', spark_model, featurizer, spec, stats, since='/ckpt/epoch-0001')

writes into the folder ``path``::

    <table>.parquet          id int64, vector array<float>, count int64 (when the model kept training counts)
    <table>.removed.parquet  (a delta only) id int64: ids the checkpoint held that the model no longer does
    featurization.json       (field, value) -> id, numeric standardisation, multi-valued fields, ONNX inputs
    manifest.json            tables, dims, row counts, files, the model's format and sparkps version, delta/since

Parquet is written with pyarrow (a dependency of sparkps). Decisions (what goes in each file) are made before any
file is opened; a non-empty ``path`` without ``overwrite=True`` is refused before anything is written. Blocks on
file I/O (and, with ``since``, on reading the checkpoint's files).

A model whose tables are shard files (SparkModel format 4, ``sparkps.rows.shards``) is exported by streaming its
shards ``SHARD_BATCH_ROWS`` rows at a time into each table's Parquet file (the counts are the shards' own): no
process holds a whole table (a delta holds the checkpoint's table, as for an inline model, plus one batch).

``path`` (and the model's shard files) may be a Spark URI (``hdfs://``, ``s3a://``, ``viewfs://``;
:mod:`sparkps.spark.model.storage`): the export is then written into a temporary local folder and copied to the
store file by file through Spark's Hadoop file systems, ``manifest.json`` last (it commits the folder: no rename).
"""
import json
import os
import shutil
import tempfile

import numpy as np

from sparkps.errors import ConfigError
from sparkps.rows.values import RowSparse
from sparkps.spark.model import export_delta
from sparkps.spark.model.export_featurization import featurization
from sparkps.spark.model.storage import files_for, put_folder, recorded_files

FORMAT = "sparkps.TableRows/1"
MANIFEST, FEATURIZATION = "manifest.json", "featurization.json"
SHARD_BATCH_ROWS = 65536      # rows of a sharded table read and written at a time


def export_ctr_tables(path, spark_model, featurizer, spec, stats, since=None, overwrite=False, model_name=None):
    """Write the tables of ``spark_model`` (a SparkModel of a CTR network) under ``path`` and return the manifest
    (a dict). ``featurizer``: ``CTRFeaturizer.to_dict()``; ``spec``: the FeatureSpec; ``stats``: the NumericStats;
    ``since``: a checkpoint folder of this model, or a saved model (the one a warm fit started from): only rows
    changed since it (and the ids it held that the model lost). ConfigError naming ``path`` when it is a non-empty
    folder (or a file) and ``overwrite`` is not set; DataError naming ``since`` and the model when it is not a
    checkpoint of this model."""
    path = os.fspath(path)
    files = files_for(path)
    if not files.python_reads:
        _check_stored_target(files, path, overwrite)
        with tempfile.TemporaryDirectory(prefix="sparkps-export-") as local:
            manifest = export_ctr_tables(local, spark_model, featurizer, spec, stats, since, True, model_name)
            files.delete(path)
            put_folder(files, local, path, last=(MANIFEST,))
        return manifest
    path = files.local(path)
    _check_target(path, overwrite)
    from sparkps.spark.model.sharded_tables import with_table_stand_ins
    sharded = spark_model.table_manifest or {}
    if sharded:
        spark_model.checked_tables()
    arg_params = with_table_stand_ins(spark_model.arg_params, sharded)
    tables = {name: value for name, value in arg_params.items() if isinstance(value, RowSparse) and name not in sharded}
    held = export_delta.baseline_tables(since, arg_params) if since is not None else None
    doc = featurization(featurizer, spec, stats, spark_model.symbol, arg_params)
    plans = {name: _plan(name, table, spark_model.table_counts.get(name), held) for name, table in tables.items()}
    if os.path.exists(path):
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    os.makedirs(path)
    for plan in plans.values():
        _write_rows(path, plan)
    for name, entry in sharded.items():
        plans[name] = _write_sharded_rows(path, name, spark_model.tables_folder, int(entry["dim"]),
                                          None if held is None else held[name])
    _write_json(path, FEATURIZATION, doc)
    manifest = _manifest(spark_model, plans, since, model_name)
    _write_json(path, MANIFEST, manifest)
    return manifest


def _check_stored_target(files, path, overwrite):
    """``_check_target`` of a folder on a Hadoop store."""
    if overwrite or not files.exists(path):
        return
    if not files.isdir(path):
        raise ConfigError("export_tables: %s exists and is a file; pass overwrite=True to replace it" % path)
    if files.listdir(path):
        raise ConfigError("export_tables: %s is not empty; pass overwrite=True to replace what it holds" % path)


def _check_target(path, overwrite):
    if not os.path.exists(path) or overwrite:
        return
    if not os.path.isdir(path):
        raise ConfigError("export_tables: %s exists and is a file; pass overwrite=True to replace it" % path)
    if os.listdir(path):
        raise ConfigError("export_tables: %s is not empty; pass overwrite=True to replace what it holds" % path)


def _plan(name, table, counts, held):
    """What one table's files hold: ``{"name", "ids", "rows", "counts" (or None), "removed" (or None)}``."""
    ids, rows = table.ids, np.asarray(table.rows, np.float32)
    removed = None
    if held is not None:
        changed, removed = export_delta.changed_rows(table, held[name])
        ids, rows = ids[changed], rows[changed]
    kept = None
    if counts is not None:          # (sorted ids, counts): 0 for an id training never counted
        count_ids, values = counts
        kept = np.zeros(ids.size, np.int64)
        if count_ids.size:
            where = np.clip(np.searchsorted(count_ids, ids), 0, count_ids.size - 1)
            found = count_ids[where] == ids
            kept[found] = values[where[found]]
    return {"name": name, "ids": ids, "rows": rows, "counts": kept, "removed": removed, "dim": table.dim}


def _write_rows(path, plan):
    import pyarrow as pa
    import pyarrow.parquet as pq
    rows = plan["rows"]
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1), pa.float32()), plan["dim"])
    columns = {"id": pa.array(plan["ids"], pa.int64()), "vector": vectors.cast(pa.list_(pa.float32()))}
    if plan["counts"] is not None:
        columns["count"] = pa.array(plan["counts"], pa.int64())
    pq.write_table(pa.table(columns), os.path.join(path, plan["name"] + ".parquet"))
    if plan["removed"] is not None:
        pq.write_table(pa.table({"id": pa.array(plan["removed"], pa.int64())}),
                       os.path.join(path, plan["name"] + ".removed.parquet"))


def _write_sharded_rows(path, name, folder, dim, held):
    """Stream table ``name``'s shard files (under ``folder``) into ``path/<name>.parquet`` (only the rows changed
    since ``held`` = (sorted ids, values) when given, and the removed ids beside); returns its plan for the
    manifest (``rows`` the count written)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sparkps.rows.shards import iter_shard_rows
    schema = pa.schema([("id", pa.int64()), ("vector", pa.list_(pa.float32())), ("count", pa.int64())])
    seen = None if held is None else np.zeros(held[0].size, bool)
    written = 0
    shards = iter_shard_rows(folder, name, batch_rows=SHARD_BATCH_ROWS, files=recorded_files(folder))
    with pq.ParquetWriter(os.path.join(path, name + ".parquet"), schema) as writer:
        for ids, rows, counts in shards:
            ids, rows, counts = ids.view(np.int64), np.asarray(rows, np.float32), np.asarray(counts, np.int64)
            if held is not None:
                order = np.argsort(ids, kind="stable")
                ids, rows, counts = ids[order], rows[order], counts[order]
                if held[0].size:
                    where = np.clip(np.searchsorted(held[0], ids), 0, held[0].size - 1)
                    seen[where[held[0][where] == ids]] = True
                changed, _ = export_delta.changed_rows(RowSparse(ids, rows, (None, dim)), held)
                ids, rows, counts = ids[changed], rows[changed], counts[changed]
            vectors = pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1), pa.float32()), dim)
            writer.write_table(pa.table({"id": pa.array(ids, pa.int64()), "vector": vectors.cast(schema[1].type),
                                         "count": pa.array(counts, pa.int64())}, schema=schema))
            written += int(ids.size)
    removed = None
    if held is not None:
        removed = held[0][~seen]
        pq.write_table(pa.table({"id": pa.array(removed, pa.int64())}),
                       os.path.join(path, name + ".removed.parquet"))
    return {"name": name, "rows_written": written, "counts": True, "removed": removed, "dim": dim}


def _write_json(path, name, value):
    with open(os.path.join(path, name), "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1, sort_keys=True)


def _manifest(spark_model, plans, since, model_name):
    from sparkps import __version__
    from sparkps.spark.model.model_folder import FORMAT_NAME as MODEL_FORMAT_NAME
    from sparkps.spark.model.model_folder import PLAIN_FORMAT, TABLES_FORMAT
    model_format = TABLES_FORMAT if spark_model.table_manifest else PLAIN_FORMAT
    tables = {}
    for name, plan in plans.items():
        rows = plan["rows_written"] if "rows_written" in plan else int(plan["ids"].size)
        entry = {"dim": plan["dim"], "rows": rows, "file": name + ".parquet",
                 "columns": ["id", "vector"] + (["count"] if plan["counts"] is not None else [])}
        if plan["removed"] is not None:
            entry.update(removed=int(plan["removed"].size), removed_file=name + ".removed.parquet")
        tables[name] = entry
    return {"format": FORMAT, "sparkps_version": __version__, "model": model_name,
            "model_format": "%s/%d" % (MODEL_FORMAT_NAME, model_format), "epoch": spark_model.epoch,
            "delta": since is not None, "since": None if since is None else os.path.abspath(os.fspath(since)),
            "last_seen": "not kept by a fitted model (the servers' checkpoint files hold it)",
            "tables": tables, "featurization": FEATURIZATION}

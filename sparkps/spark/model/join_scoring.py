"""DataFrame scoring of a model whose sparse tables are shard files (``tables/manifest.json``): Spark SQL gathers
each input row's table rows, and the dense network scores the assembled rows in an Arrow UDF. No process ever holds
a whole table.

The tables are taken in groups of those that read the same id inputs (an FM's embedding and its first-order
weights: one group), and for each group:

1. an Arrow UDF reads each input row's distinct ids of the group's fields (padding ids left out): vectorised over
   the Arrow batch (one sort along the rows of the batch's id block, no Python loop per row), the list column
   built from its offsets and values;
2. they are exploded with the row's position (``monotonically_increasing_id``) and joined with each table's Parquet
   rows (``id``, ``vector``): Spark's ``broadcast`` hint when the table's rows take at most ``BROADCAST_BYTES`` as
   Spark rows (a broadcast hash join, no shuffle of the input), a sort-merge join otherwise (the group's tables
   after the first join on the ids already partitioned by id);
3. the pairs that found a row in some table are gathered back per input row (``groupBy`` position): once per
   group, not once per table.

Then the scoring UDF gives the network each batch's gathered rows as they are (``Predictor.predict_with_rows``, the
network bound once per Python worker, ``sparkps.rows.gathered``: no store or table object per batch): the network's
own embedding ops pool multi-valued fields exactly as in training and inline scoring, and an id the join did not
find (unseen in training) reads its initial row (``sparkps.rows.init``, from the table and the id) as it does on the
inline path, so both paths give the same probabilities. A scoring worker holds its Arrow batch and that batch's
gathered rows, never a table. Lazy; works on classic and Spark Connect sessions (no SparkContext, the model's dense
part travels inside the UDF).
"""
import numpy as np

from sparkps.errors import ConfigError
from sparkps.spark.common.feature_blocks import FEATURES_TMP, arrow_features, features_as_arrays
from sparkps.spark.common.worker_python import settle_worker_python

# a table whose rows take at most this many bytes as Spark holds them joins as a broadcast (the driver and every
# executor hold it; a 1 GB driver ran out at 1.2M rows of dim 8 and of dim 1); above it, a sort-merge join. Set per
# model in rows with SparkModel.broadcast_table_rows.
BROADCAST_BYTES = 16 << 20
POSITION = "__sparkps_row"
IDS_PREFIX, ROWS_PREFIX = "__sparkps_ids_", "__sparkps_rows_"


# bytes a table row costs in Spark's broadcast beside its float32 values: the row's header and null bits, the id,
# the vector's offset, the array's header, and the hashed relation's slot for the id
SPARK_ROW_BYTES = 64


def broadcast_rows_for(dim):
    """The largest table of ``dim``-wide float32 rows that joins as a broadcast (``BROADCAST_BYTES`` as Spark
    holds them)."""
    return BROADCAST_BYTES // (SPARK_ROW_BYTES + 4 * int(dim))


def id_block(inputs, spec):
    """The (rows, ids per row) int64 block of table ``spec``'s (a TableConfig) fields in the named ``inputs`` of a
    batch (uint64 ids by their bits), or None when the inputs hold none of them."""
    parts = [_ids_of(inputs[field]) for field in spec.fields if field in inputs]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)


def _ids_of(values):
    """One field's ids as an int64 (rows, ids per row) block (a single-valued field: one column)."""
    values = np.asarray(values).view(np.int64)
    return values.reshape(len(values), int(np.prod(values.shape[1:], dtype=np.int64)))


def row_ids(inputs, spec):
    """(offsets int32 (rows + 1,), ids int64): each row's distinct ids of table ``spec`` in the named ``inputs`` of a
    batch, row after row (row ``i``'s are ``ids[offsets[i]:offsets[i + 1]]``, ascending), padding ids left out.
    Vectorised: one sort along the rows of the batch's id block."""
    block = id_block(inputs, spec)
    rows = len(next(iter(inputs.values()))) if inputs else 0
    if block is None or not block.size:
        return np.zeros(rows + 1, np.int32), np.empty(0, np.int64)
    ordered = np.sort(block, axis=1)
    keep = np.ones(ordered.shape, bool)
    keep[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    if spec.padding_id is not None:
        keep &= ordered != np.int64(spec.padding_id)
    offsets = np.zeros(len(ordered) + 1, np.int32)
    np.cumsum(keep.sum(axis=1), out=offsets[1:])
    return offsets, ordered[keep]


def batch_ids(inputs, spec):
    """The distinct ids (int64, ascending) of table ``spec`` that the named ``inputs`` of a batch read, padding ids
    left out."""
    block = id_block(inputs, spec)
    if block is None:
        return np.empty(0, np.int64)
    ids = np.unique(block)
    return ids if spec.padding_id is None else ids[ids != np.int64(spec.padding_id)]


def table_groups(manifest):
    """[[(table, TableConfig, manifest entry)]]: the tables of a manifest's tables map in groups of those that read
    the same id inputs (fields and padding id), in the manifest's order."""
    from sparkps.rows.config import TableConfig
    groups = {}
    for name, entry in manifest.items():
        spec = TableConfig.from_dict(entry["options"])
        groups.setdefault((spec.fields, spec.padding_id), []).append((name, spec, entry))
    return list(groups.values())


def gather_table_rows(frame, input_cols, inputs_of, tables_folder, manifest, broadcast_rows=None):
    """``frame`` plus one column per group of tables that read the same ids (``table_groups``): for each input row,
    a list of structs (``id``, and per table of the group ``v<k>``: the id's vector, null where that table has no
    row of it), null where no table of the group holds any of the row's ids. ``inputs_of(*arrays)`` gives the named
    network inputs of an Arrow batch of ``input_cols``; ``broadcast_rows`` the broadcast-join limit in rows (None:
    ``broadcast_rows_for`` the table's width). Returns (frame, [(column, [TableConfig of the group])]). Lazy."""
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, LongType
    settle_worker_python(frame)      # before the UDFs are wrapped: a freshly loaded model in a new program too

    from sparkps.rows.shards import shard_files
    from sparkps.spark.model.model_folder import local_path
    from sparkps.spark.model.shard_lookup import lookup_pairs
    from sparkps.spark.model.storage import recorded_files
    frame = frame.withColumn(POSITION, F.monotonically_increasing_id())
    session = frame.sparkSession
    gathered_cols = []
    for number, group in enumerate(table_groups(manifest)):
        ids_col, rows_col = IDS_PREFIX + str(number), ROWS_PREFIX + str(number)

        def ids_of(*arrays, spec=group[0][1]):
            if not len(arrays[0]):
                return pa.array([], pa.list_(pa.int64()))
            offsets, ids = row_ids(inputs_of(arrays), spec)
            return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(ids, pa.int64()))

        frame = frame.withColumn(ids_col, F.arrow_udf(ids_of, ArrayType(LongType()))(*input_cols))
        found = frame.select(POSITION, F.explode(F.col(ids_col)).alias("id"))
        vectors, looked_up = [], []
        limits = [broadcast_rows_for(entry["dim"]) if broadcast_rows is None else broadcast_rows
                  for _, _, entry in group]
        by_shard = lookup_by_shard(tables_folder, [t for t, limit in zip(group, limits) if t[2]["rows"] > limit])
        for k, ((name, _, entry), limit) in enumerate(zip(group, limits)):
            # the shard files the manifest lists, and no other file of the folder (a planted file, a killed write's
            # leftover: docs/tables.md)
            files = shard_files(tables_folder, {"tables": manifest}, name, recorded_files(tables_folder, session))
            vectors.append(F.col("v%d" % k))
            if entry["rows"] > limit and by_shard:
                looked_up.append(("v%d" % k, name, int(entry["dim"]), [local_path(f) for f in files],
                                  [shard["sha256"] for shard in entry["shards"]]))
                continue
            rows = session.read.parquet(*files).select("id", F.col("vector").alias("v%d" % k))
            # the plan is given, not left to Spark's size estimates: they see the input's small file and would
            # broadcast the exploded ids (or the gathered rows below), many times larger once read
            rows = F.broadcast(rows) if entry["rows"] <= limit else rows.hint("merge")
            found = found.join(rows, "id", "left")
        if looked_up:       # the tables too large to broadcast: each id looked up in its own shard, no table shuffled
            found = lookup_pairs(found, looked_up, found.columns)
        found = found.select(POSITION, "id", *vectors)
        held = vectors[0].isNotNull()
        for vector in vectors[1:]:
            held = held | vector.isNotNull()
        # the rows found are hash-partitioned by input row before they are gathered: the gathering then runs on
        # spark.sql.shuffle.partitions small partitions (a map-side gathering over a whole input partition held
        # every vector of its rows in the heap at once), for the same bytes shuffled
        found = (found.where(held).repartition(POSITION).groupBy(POSITION)
                 .agg(F.collect_list(F.struct("id", *vectors)).alias(rows_col)))
        frame = frame.drop(ids_col).join(found.hint("merge"), POSITION, "left")
        gathered_cols.append((rows_col, [spec for _, spec, _ in group]))
    return frame.drop(POSITION), gathered_cols


def lookup_by_shard(tables_folder, group):
    """True when the tables of ``group`` (``table_groups``) are looked up shard by shard (``shard_lookup``) rather
    than joined: their folder is read by Python's file I/O (not a Hadoop store), and they are split into the same
    number of shards, each listed by its server rank in order."""
    from sparkps.spark.model.storage import is_uri
    if is_uri(tables_folder):
        return False
    counts = set()
    for _, _, entry in group:      # (none: nothing to look up)
        servers = [int(shard.get("server", -1)) for shard in entry["shards"]]
        if servers != list(range(len(servers))):
            return False
        counts.add(len(servers))
    return len(counts) == 1


def batch_tables(gathered_cols, cells):
    """{table: RowSparse} of one Arrow batch: ``cells`` the batch's gathered columns, in ``gathered_cols``' order."""
    out = {}
    for (_, specs), column in zip(gathered_cols, cells):
        out.update(_batch_tables(specs, column))
    return out


def add_joined_predictions(df, source, tables_folder, manifest, features_col, prediction_col, probability_col,
                           raw_prediction_col=None, broadcast_rows=None):
    """``df`` plus the columns of ``udf_scoring.add_predictions``, for a model whose dense part is ``source`` (its
    payload without the tables: ``input_layout`` needed) and whose tables are the shard files of ``tables_folder``
    listed in ``manifest`` ({table: manifest entry}). Lazy."""
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, FloatType, StructField, StructType

    from sparkps.ctr.packed import PackedLayout
    from sparkps.spark.model.udf_scoring import PROBABILITY_TMP, check_outputs, with_outputs
    if source.get("input_layout") is None:
        raise ConfigError("a model with sharded tables scores DataFrames of CTR rows (a model with an input "
                          "layout); this one has none")
    check_outputs(df, prediction_col, probability_col, raw_prediction_col)
    layout = PackedLayout(source["input_layout"])
    num_features = layout.width

    def features_of(arrays):
        return arrow_features(arrays[0], num_features, features_col)

    prepared = features_as_arrays(df, features_col)
    prepared, gathered_cols = gather_table_rows(prepared, [F.col(FEATURES_TMP)],
                                                lambda arrays: layout.split(features_of(arrays)),
                                                tables_folder, manifest, broadcast_rows)
    result_type = StructType([StructField("prediction", DoubleType()),
                              StructField("probability", ArrayType(FloatType()))])

    def score(features, *cells):
        from sparkps.spark.model.predictor import predictor_for
        X = features_of([features])
        outputs = predictor_for(source).predict_with_rows(X, batch_tables(gathered_cols, cells))
        outputs = outputs.reshape(len(X), -1).astype(np.float32)
        return pa.StructArray.from_arrays(
            [pa.array(outputs.argmax(axis=1).astype(np.float64)),
             pa.array(list(outputs), pa.list_(pa.float32()))], ["prediction", "probability"])

    columns = [F.col(FEATURES_TMP)] + [F.col(name) for name, _ in gathered_cols]
    scored = prepared.withColumn(PROBABILITY_TMP, F.arrow_udf(score, result_type)(*columns))
    scored = with_outputs(scored, prediction_col, probability_col, raw_prediction_col)
    return scored.drop(FEATURES_TMP, *[name for name, _ in gathered_cols])


def add_joined_click_probability(df, source, columns, feature_columns, output_col, tables_folder, manifest,
                                 broadcast_rows=None):
    """``udf_scoring.add_click_probability`` for a CTR model whose tables are the shard files of ``tables_folder``
    (``manifest``: {table: manifest entry}); ``source`` its dense part. Lazy."""
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType

    from sparkps.errors import DataError
    if output_col in df.columns:
        raise DataError("output column %r already exists in the DataFrame" % output_col)
    count = len(feature_columns)
    prepared, gathered_cols = gather_table_rows(df, list(feature_columns), columns.inputs, tables_folder, manifest,
                                                broadcast_rows)

    def score(*arrays):
        from sparkps.spark.model.predictor import predictor_for
        inputs = columns.inputs(arrays[:count])
        outputs = predictor_for(source).predict_with_rows(inputs, batch_tables(gathered_cols, arrays[count:]))
        return pa.array(outputs[:, 0].astype(np.float64), pa.float64())

    scored = prepared.withColumn(output_col, F.arrow_udf(score, DoubleType())(
        *feature_columns, *[F.col(name) for name, _ in gathered_cols]))
    return scored.drop(*[name for name, _ in gathered_cols])


def _batch_tables(specs, column):
    """{table: RowSparse} of the tables ``specs`` of one group holding the rows gathered for one batch (``column``:
    the batch's Arrow list of structs ``id``, ``v0``, ``v1``, ... per input row, null where a row found none), each
    id once. Read column-wise from Arrow's buffers: no Python object per id or value."""
    import pyarrow as pa

    from sparkps.rows.values import RowSparse
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    pairs = column.flatten()                    # the rows' structs, null rows skipped
    all_ids = pairs.field("id").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    out = {}
    for k, spec in enumerate(specs):
        vectors = pairs.field("v%d" % k)
        held = vectors.is_valid().to_numpy(zero_copy_only=False)
        ids = all_ids[held]
        rows = vectors.filter(pa.array(held)).flatten().to_numpy(zero_copy_only=False)
        rows = rows.astype(np.float32, copy=False).reshape(-1, spec.dim)
        unique, first = np.unique(ids, return_index=True)
        out[spec.name] = RowSparse(unique, rows[first], (spec.input_dim, spec.dim))
    return out

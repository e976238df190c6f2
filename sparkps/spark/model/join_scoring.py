"""DataFrame scoring of a model whose sparse tables are shard files (``tables/manifest.json``): Spark SQL gathers
each input row's table rows, and the dense network scores the assembled rows in a pandas UDF. No process ever holds
a whole table.

For each table:

1. a pandas UDF reads each input row's ids of the table's fields (padding ids left out, each id once per row);
2. they are exploded with the row's position (``monotonically_increasing_id``), joined with the table's Parquet
   rows (``id``, ``vector``): Spark's ``broadcast`` hint when the table has at most ``BROADCAST_ROWS`` rows (a
   broadcast hash join, no shuffle of the input), a shuffle join otherwise;
3. the rows found are gathered back per input row (``groupBy`` position: the ids and their vectors, flattened).

Then the scoring UDF gives the network each batch's gathered rows as a tiny local table (``Predictor.
predict_with_rows``): the network's own embedding ops pool multi-valued fields exactly as in training and inline
scoring, and an id the join did not find (unseen in training) reads its initial row (``sparkps.rows.init``, from
the table and the id) as it does on the inline path, so both paths give the same probabilities. Lazy; works on
classic and Spark Connect sessions (no SparkContext, the model's dense part travels inside the UDF).
"""
import os

import numpy as np

from sparkps.errors import ConfigError
from sparkps.spark.common.feature_blocks import FEATURES_TMP, features_as_arrays, stack_features

# a table of at most this many rows joins as a broadcast (each executor holds it: 2M rows x dim 16 float32 ~ 128 MB
# plus the ids); above it, a shuffle join. Set per model with SparkModel.broadcast_table_rows.
BROADCAST_ROWS = 2_000_000
POSITION = "__sparkps_row"
IDS_PREFIX, ROWS_PREFIX = "__sparkps_ids_", "__sparkps_rows_"


def table_ids_per_row(inputs, spec):
    """Each row's distinct ids (int64 bits) of table ``spec`` (a TableConfig) from the named ``inputs`` of a batch:
    a list of arrays, padding ids left out."""
    parts = [np.asarray(inputs[field]).view(np.int64).reshape(len(inputs[field]), -1)
             for field in spec.fields if field in inputs]
    if not parts:
        return [np.empty(0, np.int64)] * len(next(iter(inputs.values())))
    block = np.concatenate(parts, axis=1)
    rows = []
    for row in block:
        row = np.unique(row)
        rows.append(row if spec.padding_id is None else row[row != np.int64(spec.padding_id)])
    return rows


def add_joined_predictions(df, source, tables_folder, manifest, features_col, prediction_col, probability_col,
                           raw_prediction_col=None, broadcast_rows=BROADCAST_ROWS):
    """``df`` plus the columns of ``udf_scoring.add_predictions``, for a model whose dense part is ``source`` (its
    payload without the tables: ``input_layout`` needed) and whose tables are the shard files of ``tables_folder``
    listed in ``manifest`` ({table: manifest entry}). Lazy."""
    import pandas as pd
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, FloatType, LongType, StructField, StructType

    from sparkps.ctr.packed import PackedLayout
    from sparkps.rows.config import TableConfig
    from sparkps.spark.model.udf_scoring import PROBABILITY_TMP, check_outputs, with_outputs
    if source.get("input_layout") is None:
        raise ConfigError("a model with sharded tables scores DataFrames of CTR rows (a model with an input "
                          "layout); this one has none")
    check_outputs(df, prediction_col, probability_col, raw_prediction_col)
    layout = PackedLayout(source["input_layout"])
    specs = {name: TableConfig.from_dict(entry["options"]) for name, entry in manifest.items()}
    prepared = features_as_arrays(df, features_col).withColumn(POSITION, F.monotonically_increasing_id())
    num_features = layout.width
    session = df.sparkSession
    for number, (name, spec) in enumerate(specs.items()):
        ids_col, rows_col = IDS_PREFIX + str(number), ROWS_PREFIX + str(number)

        def row_ids(features, spec=spec):
            inputs = layout.split(stack_features(features, num_features))
            return pd.Series([list(r) for r in table_ids_per_row(inputs, spec)] if len(features) else [])

        prepared = prepared.withColumn(ids_col, F.pandas_udf(row_ids, ArrayType(LongType()))(F.col(FEATURES_TMP)))
        rows = session.read.parquet(os.path.join(tables_folder, name)).select("id", "vector")
        if manifest[name]["rows"] <= broadcast_rows:
            rows = F.broadcast(rows)
        wanted = prepared.select(POSITION, F.explode(F.col(ids_col)).alias("id"))
        gathered = (wanted.join(rows, "id", "inner").groupBy(POSITION)
                    .agg(F.collect_list(F.struct("id", "vector")).alias("pairs"))
                    .select(POSITION, F.struct(F.transform("pairs", lambda p: p["id"]).alias("ids"),
                                               F.flatten(F.transform("pairs", lambda p: p["vector"])).alias("rows"))
                            .alias(rows_col)))
        prepared = prepared.drop(ids_col).join(gathered, POSITION, "left")
    result_type = StructType([StructField("prediction", DoubleType()),
                              StructField("probability", ArrayType(FloatType()))])
    names = list(specs)

    def score(features, *gathered):
        from sparkps.spark.model.predictor import predictor_for
        predictor = predictor_for(source)
        table_rows = {name: _batch_table(specs[name], cells) for name, cells in zip(names, gathered)}
        outputs = predictor.predict_with_rows(stack_features(features, num_features), table_rows)
        outputs = outputs.reshape(len(features), -1)
        return pd.DataFrame({"prediction": outputs.argmax(axis=1).astype(np.float64) if len(features) else [],
                             "probability": list(outputs.astype(np.float32))})

    columns = [F.col(FEATURES_TMP)] + [F.col(ROWS_PREFIX + str(n)) for n in range(len(names))]
    scored = prepared.withColumn(PROBABILITY_TMP, F.pandas_udf(score, result_type)(*columns))
    scored = with_outputs(scored, prediction_col, probability_col, raw_prediction_col)
    return scored.drop(POSITION, *[ROWS_PREFIX + str(n) for n in range(len(names))])


def _batch_table(spec, cells):
    """The RowSparse of table ``spec`` holding the rows gathered for one batch (``cells``: a pandas frame of
    ``ids``, ``rows`` per input row, null where a row found none), each id once."""
    from sparkps.rows.values import RowSparse
    ids, rows = [], []
    for ids_cell, rows_cell in zip(cells["ids"], cells["rows"]):
        if ids_cell is None or (isinstance(ids_cell, float) and np.isnan(ids_cell)) or not len(ids_cell):
            continue
        ids.append(np.asarray(ids_cell, np.int64))
        rows.append(np.asarray(rows_cell, np.float32).reshape(-1, spec.dim))
    shape = (spec.input_dim, spec.dim)
    if not ids:
        return RowSparse(np.empty(0, np.int64), np.empty((0, spec.dim), np.float32), shape)
    ids, rows = np.concatenate(ids), np.concatenate(rows)
    unique, first = np.unique(ids, return_index=True)
    return RowSparse(unique, rows[first], shape)

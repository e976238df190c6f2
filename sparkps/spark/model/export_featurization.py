"""What a serving stack needs, besides the table rows and the ONNX graph, to score a CTR model's raw columns: the
featurization as plain JSON (docs/export.md, "Parquet table rows").

    doc = featurization(featurizer.to_dict(), spec, stats, symbol, arg_params)
    # {"format": "sparkps.CTRFeaturization/1", "hash": {...}, "fields": [...], "numeric": {...}, "tables": {...},
    #  "onnx": {"inputs": [...], "outputs": [...]}}

Every value is derived from the code that trains and scores (``sparkps.ctr.hashing`` for the ids,
``NumericStats`` for the numeric columns, the FeatureSpec for the fields, ``sparkps.onnx.graph_walk`` for the ONNX
input names, ``sparkps.rows.init`` for an unseen id's row), so the document cannot drift from the model. Nothing
here blocks or writes.
"""
from sparkps.ctr import hashing
from sparkps.ctr.features import PADDING_ID
from sparkps.rows.ids import table_seed

FORMAT = "sparkps.CTRFeaturization/1"

HASH = {
    "function": "BLAKE2b",
    "id": "int.from_bytes(blake2b(text(value).encode('utf-8'), digest_size=8, person=person, "
          "salt=blake2b(field.encode('utf-8'), digest_size=16).digest()).digest(), 'little')",
    "digest_size": 8,
    "person": hashing.FEATURE_PERSON.decode("ascii"),
    "salt": "the first 16 bytes of BLAKE2b (digest_size=16, no key, salt or person) of the field name in UTF-8",
    "byte_order": "little: the 8 digest bytes read as an unsigned 64-bit little-endian integer",
    "signed": "the Parquet id column holds the same 64 bits as int64 (two's complement)",
    "text": {"string": "as is", "integer": "decimal, no sign for >= 0 ('7', '-3')", "boolean": "'1' or '0'",
             "float": "an integral float as the integer ('7.0' -> '7'); any other as Python's repr (shortest "
                      "round-trip: '0.5', '1e-05')",
             "bytes": "decoded as UTF-8", "missing": "null, NaN or the empty string: '' (one id per field)"},
}


def featurization(featurizer, spec, stats, symbol, arg_params):
    """The featurization document of a CTR model: ``featurizer`` is ``CTRFeaturizer.to_dict()``, ``spec`` the
    model's FeatureSpec, ``stats`` its NumericStats, ``symbol`` and ``arg_params`` the network (for the ONNX input
    names and each table's row initializer)."""
    inputs = onnx_inputs(symbol, arg_params, spec)
    by_field = {}
    for item in inputs:
        by_field.setdefault(item.field, {})[item.table] = item.name
    fields = []
    for name in spec.categorical:
        fields.append({"name": name, "kind": "single", "onnx_inputs": by_field.get(name, {})})
    for name, width in spec.multi_valued.items():
        fields.append({"name": name, "kind": "multi", "width": width, "separator": featurizer["separator"],
                       "pooling": spec.pooling, "onnx_inputs": by_field.get(name, {})})
    return {
        "format": FORMAT,
        "hash_ids": featurizer["hash_ids"],
        "hash": dict(HASH),
        "num_buckets": spec.num_buckets,
        "bucket": "with num_buckets n: id = ((id >> 32) * n) >> 32 in unsigned 64-bit arithmetic (the rows' ids "
                  "are then these bucket numbers)",
        "fields": fields,
        "multi_valued": "a string cell is split on the separator, empty pieces dropped; an array cell's items are "
                        "taken in order (a null item is the missing value); the first 'width' ids are kept; pooling "
                        "'sum' adds their rows, 'mean' divides the sum by the number of ids kept; no ids: zeros",
        "numeric": numeric_section(stats),
        "tables": tables_section(symbol, arg_params),
        "onnx": {"inputs": [{"name": i.name, "table": i.table, "field": i.field, "pooling": i.pooling,
                             "dim": i.dim} for i in inputs]
                 + ([{"name": "dense", "columns": list(spec.numeric)}] if spec.numeric else []),
                 "outputs": list(symbol.list_outputs())},
        "padding_id": PADDING_ID,
    }


def numeric_section(stats):
    """The numeric columns' standardisation: ``x' = (f(x) - mean) / std`` with ``f(x) = sign(x) log1p(|x|)`` when
    ``log`` (else ``f(x) = x``), and 0 for a null or NaN cell."""
    return {"input": "dense", "log": bool(stats.log),
            "transform": "x' = (f(x) - mean) / std, f(x) = sign(x) * log1p(|x|) if log else x; a null or NaN "
                         "cell is 0; the columns in this order form the 'dense' input (float32)",
            "columns": [{"name": name, "mean": float(mean), "std": float(std), "count": float(count)}
                        for name, mean, std, count in zip(stats.names, stats.mean, stats.std, stats.count)]}


def tables_section(symbol, arg_params):
    """{table: {"dim", "unseen"}}: how the model reads an id its table does not hold (the row it would be created
    with, ``sparkps.rows.init``)."""
    from sparkps.symbol.ops.embedding import sparse_tables
    out = {}
    for name, config in sparse_tables(symbol).items():
        init = dict(config.init or {"kind": "uniform", "scale": 0.01})
        out[name] = {"dim": int(config.dim), "unseen": dict(init, seed=str(table_seed(name)),
                                                             rule=UNSEEN_RULE)}
    return out


UNSEEN_RULE = ("the row it would be created with, a pure function of (table, id): mix64 = splitmix64's finaliser, "
               "GOLDEN = 0x9E3779B97F4A7C15, wrapping uint64 arithmetic; element c (0-based) of stream s has bits = "
               "mix64(mix64(mix64(id ^ seed) + s) + (c + 1) * GOLDEN), u = (bits >> 11) * 2**-53; 'uniform': "
               "(2u - 1) * scale from stream 0, rounded to float32; 'zeros': 0; 'constant': value; 'normal': "
               "sqrt(-2 log(1 - u0)) cos(2 pi u1) * sigma (streams 0 and 1)")


def onnx_inputs(symbol, arg_params, spec):
    """The TableInputs (``sparkps.onnx.graph_walk``) of ``symbol``'s table reads, named as ``export_model`` names
    them for ``fields=spec``: the walk's own cut, without translating (or needing onnx for) the rest."""
    from sparkps.onnx.graph_walk import GraphWalk, is_table_read
    walk = GraphWalk(symbol, dict(arg_params), spec.input_shapes(1), spec)
    found = []
    for node in walk.nodes:
        if node.op is not None and is_table_read(node.op):
            found.extend(walk.cut(node)[0])
    return list({item.name: item for item in found}.values())


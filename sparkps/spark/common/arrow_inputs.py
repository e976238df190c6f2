"""Arrow record batches of a DataFrame to a training task's arrays, typed as they travel: ids as 64-bit integers,
numbers as float32, with no Python object per row.

A reader turns one record batch into ``(X, y)``: X is ``(n, width)`` float32 (or int64 ids) for a network with
one data input, or ``(n, 1)`` structured rows of a :class:`~sparkps.spark.common.typed_inputs.TypedInputs`; y is
float32 labels. Ids are checked once, here, where they enter: a null, or a value that is not an integer, is one
DataError naming the column and the row.

    reader = FeatureReader(64)                          # columns: features array<float>, label float
    reader = TypedReader(TypedInputs([('ids', 3, 'ids'), ('dense', 2, 'float')]))
    X, y = reader.read(record_batch, start=0)           # start: the partition's rows before this batch

Readers are plain values (a task closure captures them). Nothing here blocks.
"""
import numpy as np

from sparkps.errors import DataError


def list_values(column, width, kind, name, start=0):
    """(n, width) values of an Arrow list column ``name`` (every cell ``width`` long): int64 for ``kind`` 'ids'
    (integers only), float32 for 'float'. DataError naming the column and the row (``start`` + index in this
    batch) of a null cell, a null value, a cell of another length or, for ids, a value that is not an integer."""
    import pyarrow as pa
    import pyarrow.compute as pc
    column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    rows = len(column)
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)
            or pa.types.is_fixed_size_list(column.type)):
        if width != 1 or pa.types.is_nested(column.type):
            raise DataError("column %r must hold arrays of %d values, got %s" % (name, width, column.type))
        values, lengths = column, None
    else:
        if column.null_count:
            bad = _first(np.asarray(column.is_null()))
            raise DataError("column %r, row %d: the cell is null" % (name, start + bad))
        lengths = np.asarray(pc.list_value_length(column).fill_null(0))
        if rows and (lengths != width).any():
            bad = _first(lengths != width)
            raise DataError("column %r, row %d: %d values, expected %d" % (name, start + bad, lengths[bad], width))
        values = column.flatten()
    if values.null_count:
        bad = _first(np.asarray(values.is_null())) // width
        raise DataError("column %r, row %d: %s is null" % (name, start + bad, "an id" if kind == "ids" else "a value"))
    if kind == "ids":
        out = _ids(values, name, width, start)
    else:
        if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
            raise DataError("column %r must hold numbers, got %s" % (name, values.type))
        out = values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return out.reshape(rows, width)


def _ids(values, name, width, start):
    """int64 ids of an Arrow array of integers (uint64 kept bit for bit); floats only when whole numbers."""
    import pyarrow as pa
    if pa.types.is_integer(values.type):
        ids = values.to_numpy(zero_copy_only=False)
        return ids.view(np.int64) if ids.dtype == np.uint64 else ids.astype(np.int64, copy=False)
    if pa.types.is_floating(values.type):
        numbers = values.to_numpy(zero_copy_only=False).astype(np.float64)
        whole = np.isfinite(numbers) & (numbers == np.floor(numbers)) & (np.abs(numbers) < 2.0 ** 53)
        if not whole.all():
            bad = _first(~whole)
            raise DataError("column %r, row %d: id %r is not an integer (64-bit ids travel as bigint columns)"
                            % (name, start + bad // width, float(numbers[bad])))
        return numbers.astype(np.int64)
    raise DataError("column %r must hold integer ids (bigint), got %s" % (name, values.type))


def labels(column, name, start=0):
    """float32 labels of an Arrow column; DataError naming the column and row of a null."""
    import pyarrow as pa
    column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    if column.null_count:
        bad = _first(np.asarray(column.is_null()))
        raise DataError("column %r, row %d: the label is null" % (name, start + bad))
    if column.type != pa.float32():
        column = column.cast(pa.float32())
    return column.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)


def _first(mask):
    return int(np.flatnonzero(mask)[0])


class FeatureReader:
    """One data input: columns (features array, label[, weight]); X is ``(n, num_features)`` float32, or int64
    ids with ``ids``; with ``weight`` X has one more float32 column, each row's weight."""

    def __init__(self, num_features, ids=False, weight=False, names=("features", "label", "weight")):
        self.num_features, self.ids, self.weight = int(num_features), bool(ids), bool(weight)
        self.names = tuple(names)

    def read(self, batch, start=0):
        X = list_values(batch.column(0), self.num_features, "ids" if self.ids else "float", self.names[0], start)
        y = labels(batch.column(1), self.names[1], start)
        if self.weight:
            w = labels(batch.column(2), self.names[2], start).reshape(-1, 1)
            X = np.concatenate([X, w], axis=1)
        return X, y


class TypedReader:
    """Named inputs: columns (one array column per input of ``inputs``, in its order, then the label); X is the
    structured rows of ``inputs`` (a TypedInputs), shaped ``(n, 1)``."""

    def __init__(self, inputs, label_name="label"):
        self.inputs, self.label_name = inputs, label_name

    def read(self, batch, start=0):
        arrays = {name: list_values(batch.column(j), columns, kind, name, start)
                  for j, (name, columns, kind) in enumerate(self.inputs.parts)}
        X = self.inputs.rows(arrays).reshape(-1, 1)      # one structured value a row: a block of width 1
        return X, labels(batch.column(len(self.inputs.parts)), self.label_name, start)


def read_blocks(reader, batches):
    """``(X, y)`` blocks of an iterator of record batches (empty ones skipped), rows counted for the errors."""
    start = 0
    for batch in batches:
        if batch.num_rows:
            yield reader.read(batch, start)
            start += batch.num_rows

"""Arrow columns of CTR features to a network's typed inputs, one record batch at a time, with no Python object per
row.

A categorical column is dictionary-encoded by Arrow (C++), so only its distinct values become Python objects and
are hashed (``sparkps.ctr.hashing.hash_codes``: the same ids as hashing the column value by value); numeric
columns are read as float64 arrays and standardised; multi-valued cells (arrays, or strings joined by a separator)
are the one per-row Python step. The rows come out as a FeatureSpec's named inputs (``inputs``: ids uint64, numbers
float32); ``CTRReader`` reads a fit's record batches so, and a CTR model's scoring UDF its columns.

    columns = ColumnFeaturizer(['C1', 'C2'], ['I1'], [], stats.to_dict(), spec)
    inputs = columns.inputs([c1, c2, i1])        # pyarrow arrays of one batch -> {'ids': uint64, 'dense': float32}

Plain values only: it is captured by Spark task closures (``CTRFeaturizer.training_input``'s reader, the model's
scoring UDF). Nothing here blocks.
"""
import numpy as np

from sparkps.errors import DataError

MAX_KNOWN = 1 << 20      # distinct values of one field whose ids a task keeps between batches


class ColumnFeaturizer:
    """The typed inputs of the columns of one batch: ``categorical`` names, then ``multi`` names, then
    ``numeric_count`` numeric columns (already cast to double), in that order; ``saved`` is
    NumericStats.to_dict() of the training data."""

    def __init__(self, categorical, multi, numeric_count, saved, spec, hash_ids=True, index_range=None,
                 separator=","):
        self.categorical, self.multi = list(categorical), list(multi)
        self.numeric_count, self.saved, self.spec = int(numeric_count), saved, spec
        self.hash_ids, self.index_range, self.separator = bool(hash_ids), index_range, str(separator)
        self._stats, self._known = None, {}

    @property
    def width(self):
        return len(self.categorical) + len(self.multi) + self.numeric_count

    def inputs(self, columns):
        """{input name: array} of one batch's columns (pyarrow Arrays or ChunkedArrays): the network's inputs, ids
        as uint64 and numbers as float32 (``FeatureSpec.inputs``)."""
        columns = [_whole(c) for c in columns]
        rows = len(columns[0]) if columns else 0
        cats = columns[:len(self.categorical)]
        multis = columns[len(self.categorical):len(self.categorical) + len(self.multi)]
        nums = columns[len(self.categorical) + len(self.multi):]
        ids = np.stack([self._ids(n, c) for n, c in zip(self.categorical, cats)], axis=1) if self.categorical \
            else np.zeros((rows, 0), np.uint64)
        lists = {n: self._multi_ids(n, c) for n, c in zip(self.multi, multis)}
        numeric = None
        if self.numeric_count:
            numeric = self.stats().transform(np.stack([_floats(c) for c in nums], axis=1))
        return self.spec.inputs(ids, numeric, multi=lists)

    def stats(self):
        if self._stats is None:
            from sparkps.ctr.numeric import NumericStats
            self._stats = NumericStats.from_dict(self.saved)
        return self._stats

    def _ids(self, name, column):
        if self.hash_ids:
            return hashed(name, column, self._known.setdefault(name, {}))
        import pyarrow as pa
        try:
            index = _floats(column.cast(pa.float64()))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise DataError("categorical column %r must hold feature indices (hash_ids=False), got %s values"
                            % (name, column.type)) from None
        index = np.where(np.isnan(index), -1.0, index)
        if index.size and (index.min() < 0 or index.max() >= self.index_range or (index != np.floor(index)).any()):
            raise DataError("categorical column %r must hold feature indices in [0, %d) (hash_ids=False), got "
                            "values in [%s, %s]" % (name, self.index_range, index.min(), index.max()))
        return index.astype(np.uint64)

    def _multi_ids(self, name, column):
        from sparkps.ctr.features import pad_lists
        from sparkps.ctr.hashing import hash_column, split_multi
        flat, offsets = split_multi(column.to_pylist(), self.separator)
        return pad_lists(hash_column(name, flat), offsets, self.spec.multi_valued[name])


def hashed(field, column, known=None):
    """uint64 ids of one Arrow column of categorical values of ``field`` (nulls are the missing value): the
    distinct values come from Arrow's dictionary encoding, each hashed once. ``known``: a dict {value: id} of this
    field kept from batch to batch (values equal in Python have one text, so one id), at most MAX_KNOWN values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from sparkps.ctr.hashing import hash_codes, hash_column, hash_value
    try:
        encoded = pc.dictionary_encode(_whole(column))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):      # e.g. nested values: one text per cell
        return hash_column(field, column.to_pylist())
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    values = encoded.dictionary.to_pylist()
    if known is None:
        return hash_codes(field, codes, values)
    found = [known.get(v) for v in values]
    new = [v for v, i in zip(values, found) if i is None]
    if new:
        fresh = hash_column(field, new)
        if len(known) + len(new) > MAX_KNOWN:
            known.clear()
        known.update((v, i) for v, i in zip(new, fresh.tolist()) if v == v)     # NaN is never found again
        fresh = iter(fresh.tolist())
        found = [next(fresh) if i is None else i for i in found]
    table = np.array(found + [hash_value(field, None)], dtype=np.uint64)     # the last: a missing value (code -1)
    return table[codes]


def _whole(column):
    """One contiguous Array of a ChunkedArray (or the Array itself)."""
    return column.combine_chunks() if hasattr(column, "combine_chunks") else column


def _floats(column):
    """float64 values of a numeric Arrow column, NaN where null."""
    import pyarrow as pa
    column = _whole(column)
    if column.type != pa.float64():
        column = column.cast(pa.float64())
    return column.to_numpy(zero_copy_only=False)


class CTRReader:
    """The reader of a CTR fit's record batches (``sparkps.spark.common.arrow_inputs``): the featurizer's columns,
    then the label; X is the structured rows of ``typed`` (a TypedInputs of the spec's ``input_parts``), shaped
    (n, 1): ids as 64-bit integers, numbers as float32, never packed."""

    def __init__(self, columns, typed, label_name="label"):
        self.columns, self.typed, self.label_name = columns, typed, label_name

    def read(self, batch, start=0):
        from sparkps.spark.common.arrow_inputs import labels
        width = self.columns.width
        X = self.typed.rows(self.columns.inputs([batch.column(j) for j in range(width)])).reshape(-1, 1)
        return X, labels(batch.column(width), self.label_name, start)

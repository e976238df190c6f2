"""Rows of a Spark partition -> float32 mini-batches, for training tasks and prediction alike.

A row is ``(features, label)`` where features is a numpy array, a list/tuple of numbers, a pyspark.ml or
pyspark.mllib Vector (dense or sparse), or a ``LabeledPoint``.  A row whose features are a 2-D array and whose
label is a 1-D array is a *block* of rows (``(X_block, y_block)``): caching an RDD as blocks of float32 arrays
skips all per-row Python work.  Nothing here imports pyspark: vectors are recognised by their attributes.
"""
import numpy as np

from sparkps.errors import DataError
from sparkps.spark.common.row_places import RowPlaces


def split_row(row, with_label=True):
    """Return ``(features, label)`` of one row (label None when ``with_label`` is False and absent)."""
    if hasattr(row, "features") and hasattr(row, "label") and not isinstance(row, (tuple, list)):
        return row.features, row.label                       # LabeledPoint
    if isinstance(row, (tuple, list)) and len(row) == 2 and not _is_scalar(row[0]):
        return row[0], row[1]
    if with_label:
        raise DataError("a training row must be (features, label) or a LabeledPoint, got %s"
                        % _describe(row))
    return row, None


def _is_scalar(value):
    return isinstance(value, (int, float, np.number))


def _describe(value):
    text = repr(value)
    return "%s %s" % (type(value).__name__, text if len(text) < 80 else text[:77] + "...")


def is_block(features):
    """True when ``features`` holds several rows at once (a 2-D numpy array)."""
    return isinstance(features, np.ndarray) and features.ndim == 2


def _where(place):
    """'row 5' for a row count; a RowPlaces describes its current row (only now, on the error path)."""
    if isinstance(place, (int, np.integer)):
        return "row %d" % place
    return place.describe() if isinstance(place, RowPlaces) else str(place)


def write_features(features, out, row_index):
    """Copy one row's features into the float32 vector ``out`` (zeroing it for sparse vectors); an integer
    ``out`` takes integer ids (:func:`write_ids`).  ``row_index`` (a count, or a RowPlaces at this row) names
    the row in errors."""
    if out.dtype.kind == "i":
        return write_ids(features, out, row_index)
    width = out.shape[0]
    if hasattr(features, "indices") and hasattr(features, "values") and hasattr(features, "size"):
        if features.size != width:
            raise DataError("%s: sparse vector of size %d, expected %d features"
                            % (_where(row_index), features.size, width))
        out[:] = 0.0
        out[np.asarray(features.indices)] = features.values
        return
    if hasattr(features, "toArray"):
        features = features.toArray()
    try:
        values = np.asarray(features, dtype=np.float32)
    except (TypeError, ValueError):
        raise DataError("%s: features are not numbers: %s" % (_where(row_index), _describe(features))) from None
    if values.ndim != 1 or values.shape[0] != width:
        raise DataError("%s: features of shape %s, expected (%d,)" % (_where(row_index), values.shape, width))
    out[:] = values


def write_ids(features, out, row_index):
    """Copy one row's ids (integers; uint64 taken bit for bit) into the int64 vector ``out``: the features of a
    network whose data input feeds a hashed embedding table (:mod:`sparkps.spark.common.sparse_inputs`)."""
    values = np.asarray(features)
    if values.dtype == np.uint64:
        values = values.view(np.int64)
    if values.dtype.kind not in "iu" or values.ndim != 1 or values.shape[0] != out.shape[0]:
        raise DataError("%s: features must be %d integer ids (the network reads them into a hashed "
                        "embedding table; floats cannot hold 64-bit ids), got %s"
                        % (_where(row_index), out.shape[0], _describe(features)))
    out[:] = values


def to_label(label, row_index):
    """The label of one row as a float; raises DataError for non-numbers."""
    try:
        return float(label)
    except (TypeError, ValueError):
        raise DataError("%s: label %s is not a number" % (_where(row_index), _describe(label))) from None


def iter_batches(rows, batch_size, num_features, with_label=True, places=None, dtype=np.float32):
    """Yield ``(X, y)`` batches of at most ``batch_size`` rows, X of ``dtype`` (float32, or int64 for ids) and y
    float32 (None without labels).

    Only the last batch may be short.  Streams: holds one batch at a time.  NaN or infinite values raise
    DataError naming the row: by its place in the input when ``places`` (a RowPlaces) knows it, else by
    its count among ``rows``.  Never blocks beyond the iteration of ``rows``.
    """
    places = places if places is not None else RowPlaces()
    X = np.empty((batch_size, num_features), dtype)
    y = np.empty(batch_size, np.float32)
    filled = 0
    for row in places.read(rows):
        features, label = split_row(row, with_label)
        if is_block(features):
            bx, by = _checked_block(features, label, num_features, with_label, places)
            if X.dtype.names is not None and bx.dtype != X.dtype:
                raise DataError("%s: a block of %s rows; the network reads typed inputs %s"
                                % (places.describe(block_row=0), bx.dtype, X.dtype))
            if X.dtype.kind == "i" and bx.dtype.kind not in "iu":
                raise DataError("%s: a block of %s features; the network reads integer ids into a hashed "
                                "embedding table" % (places.describe(block_row=0), bx.dtype))
            done = 0
            while done < len(bx):
                take = min(batch_size - filled, len(bx) - done)
                places.placed(filled, done)
                X[filled:filled + take] = bx[done:done + take]
                if with_label:
                    y[filled:filled + take] = by[done:done + take]
                filled, done = filled + take, done + take
                if filled == batch_size:
                    yield _checked(X, y, filled, with_label, places)
                    filled = 0
            continue
        places.placed(filled)
        write_features(features, X[filled], places)
        if with_label:
            y[filled] = to_label(label, places)
        filled += 1
        if filled == batch_size:
            yield _checked(X, y, filled, with_label, places)
            filled = 0
    if filled:
        yield _checked(X, y, filled, with_label, places)


def _checked_block(features, label, num_features, with_label, places):
    """``(X, y)`` of a block row, y None without labels; DataError when widths or row counts differ."""
    if features.shape[1] != num_features:
        raise DataError("%s: block of shape %s, expected %d features"
                        % (places.describe(block_row=0), features.shape, num_features))
    if not with_label:
        return features, None
    labels = np.asarray(label, dtype=np.float32).reshape(-1)
    if labels.shape[0] != features.shape[0]:
        raise DataError("%s: block of %d feature rows but %d labels"
                        % (places.describe(block_row=0), features.shape[0], labels.shape[0]))
    return features, labels


def _checked(X, y, filled, with_label, places):
    Xb = X[:filled].copy()
    yb = y[:filled].copy() if with_label else None
    if X.dtype.names is None and not np.isfinite(Xb).all():     # typed rows were checked where they entered
        bad = int(np.nonzero(~np.isfinite(Xb).all(axis=1))[0][0])
        raise DataError("%s: features contain NaN or infinity" % places.describe(bad))
    if with_label and not np.isfinite(yb).all():
        bad = int(np.nonzero(~np.isfinite(yb))[0][0])
        raise DataError("%s: label is NaN or infinite" % places.describe(bad))
    places.new_batch()
    return Xb, yb

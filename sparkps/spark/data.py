"""Rows of a Spark partition -> float32 mini-batches, and the compact local copy kept for later epochs.

A row is ``(features, label)`` where features is a numpy array, a list/tuple of numbers, a pyspark.ml or
pyspark.mllib Vector (dense or sparse), or a ``LabeledPoint``.  A row whose features are a 2-D array and whose
label is a 1-D array is a *block* of rows (``(X_block, y_block)``): caching an RDD as blocks of float32 arrays
skips all per-row Python work.  Nothing here imports pyspark: vectors are recognised by their attributes.
"""
import os
import tempfile

import numpy as np

from sparkps.errors import DataError
from sparkps.spark.row_places import RowPlaces

SPILL_BYTES = 256 << 20   # a partition's local copy larger than this goes to a memory-mapped file


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
    return place.describe() if hasattr(place, "describe") else str(place)


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
    network whose data input feeds a hashed embedding table (:mod:`sparkps.spark.sparse_inputs`)."""
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
    if not np.isfinite(Xb).all():
        bad = int(np.nonzero(~np.isfinite(Xb).all(axis=1))[0][0])
        raise DataError("%s: features contain NaN or infinity" % places.describe(bad))
    if with_label and not np.isfinite(yb).all():
        bad = int(np.nonzero(~np.isfinite(yb))[0][0])
        raise DataError("%s: label is NaN or infinite" % places.describe(bad))
    places.new_batch()
    return Xb, yb


def local_dir():
    """The executor's local scratch directory (SPARK_LOCAL_DIRS), or the system temp dir."""
    dirs = os.environ.get("SPARK_LOCAL_DIRS", "")
    first = dirs.split(",")[0] if dirs else ""
    return first if first and os.path.isdir(first) else tempfile.gettempdir()


class LocalCopy:
    """The rows of one partition kept compactly (float32) for epochs after the first.

    Batches are appended as they stream in; past ``spill_bytes`` everything moves to a file in the
    executor's local dir and ``finish()`` returns a read-only memory map of it.  ``close()`` removes the file.
    """

    def __init__(self, num_features, spill_bytes=SPILL_BYTES, directory=None, dtype=np.float32):
        self.num_features, self.dtype = num_features, np.dtype(dtype)
        self.spill_bytes = spill_bytes
        self.directory = directory
        self.rows = 0
        self._chunks_x, self._chunks_y = [], []
        self._files = None          # (x_path, y_path, x_file, y_file) once spilled
        self.X = self.y = None

    @property
    def spilled(self):
        return self._files is not None

    def append(self, X, y):
        """Keep a copy of one batch; never blocks except on local disk writes."""
        self.rows += len(X)
        if self._files is None:
            self._chunks_x.append(X)
            self._chunks_y.append(y)
            if self.rows * (self.num_features * self.dtype.itemsize + 4) > self.spill_bytes:
                self._spill()
        else:
            self._files[2].write(np.ascontiguousarray(X, self.dtype).tobytes())
            self._files[3].write(np.ascontiguousarray(y, np.float32).tobytes())

    def _spill(self):
        folder = tempfile.mkdtemp(prefix="sparkps-copy-", dir=self.directory or local_dir())
        x_path, y_path = os.path.join(folder, "x.f32"), os.path.join(folder, "y.f32")
        self._files = (x_path, y_path, open(x_path, "wb"), open(y_path, "wb"))
        for X, y in zip(self._chunks_x, self._chunks_y):
            self._files[2].write(np.ascontiguousarray(X, self.dtype).tobytes())
            self._files[3].write(np.ascontiguousarray(y, np.float32).tobytes())
        self._chunks_x, self._chunks_y = [], []

    def finish(self):
        """Return ``(X, y)`` of every appended row: in-memory arrays or read-only memory maps."""
        if self.X is not None:
            return self.X, self.y
        if self._files is None:
            if self._chunks_x:
                self.X, self.y = np.concatenate(self._chunks_x), np.concatenate(self._chunks_y)
            else:
                self.X = np.empty((0, self.num_features), self.dtype)
                self.y = np.empty(0, np.float32)
            self._chunks_x, self._chunks_y = [], []
        else:
            self._files[2].close()
            self._files[3].close()
            self.X = np.memmap(self._files[0], self.dtype, "r", shape=(self.rows, self.num_features))
            self.y = np.memmap(self._files[1], np.float32, "r", shape=(self.rows,))
        return self.X, self.y

    def close(self):
        """Drop the rows and delete the spill files, if any."""
        self.X = self.y = None
        self._chunks_x, self._chunks_y = [], []
        if self._files is not None:
            for handle in self._files[2:]:
                handle.close()
            for path in self._files[:2]:
                if os.path.exists(path):
                    os.remove(path)
            os.rmdir(os.path.dirname(self._files[0]))
            self._files = None


class PartitionBatches:
    """Full-size mini-batches of one partition, epoch after epoch.

    The first epoch streams ``rows`` (keeping a LocalCopy); later epochs replay the copy, in a shuffled
    order when ``shuffle`` is set.  The last batch of an epoch is padded with rows from the start of the
    partition; ``pad`` says how many rows of it are padding.  An empty partition yields no batches.  ``dtype``:
    float32 features, or int64 ids (see :mod:`sparkps.spark.sparse_inputs`).
    """

    def __init__(self, rows, batch_size, num_features, shuffle=True, seed=0, spill_bytes=SPILL_BYTES,
                 places=None, dtype=np.float32):
        if batch_size < 1:
            raise DataError("batch_size must be >= 1, got %r" % (batch_size,))
        self.batch_size = batch_size
        self.num_features = num_features
        self.shuffle = shuffle
        self.copy = LocalCopy(num_features, spill_bytes, dtype=dtype)
        self._rows = rows
        self.places = places          # a RowPlaces: where the partition's rows sit in the input (errors)
        self._rng = np.random.default_rng(seed)
        self.epochs_started = 0
        self.streaming = False      # True while the first epoch is still reading the partition

    @property
    def num_rows(self):
        """Rows seen so far (all of them once the first epoch is over)."""
        return self.copy.rows

    def epoch(self):
        """Yield ``(X, y, pad)`` for one epoch; X is (batch_size, num_features) float32."""
        self.epochs_started += 1
        if self._rows is not None:
            yield from self._first_epoch()
        else:
            yield from self._replay()

    def _first_epoch(self):
        rows, self._rows = self._rows, None
        self.streaming = True
        for X, y in iter_batches(rows, self.batch_size, self.num_features, places=self.places,
                                 dtype=self.copy.dtype):
            self.copy.append(X, y)
            if len(X) < self.batch_size:
                X, y, pad = self._padded(X, y)
                yield X, y, pad
            else:
                yield X, y, 0
        self.copy.finish()
        self.streaming = False

    def _replay(self):
        X_all, y_all = self.copy.finish()
        n = len(X_all)
        if n == 0:
            return
        if self.shuffle and not self.copy.spilled:
            order = self._rng.permutation(n)
        else:
            order = None
        starts = np.arange(0, n, self.batch_size)
        if self.shuffle and self.copy.spilled:
            starts = self._rng.permutation(starts)       # memory maps: shuffle batches, read contiguously
        for start in starts:
            stop = min(start + self.batch_size, n)
            index = order[start:stop] if order is not None else slice(start, stop)
            X, y = np.asarray(X_all[index]), np.asarray(y_all[index])
            if len(X) < self.batch_size:
                yield self._padded(X, y)
            else:
                yield X, y, 0

    def _padded(self, X, y):
        pad = self.batch_size - len(X)
        X_all, y_all = (self.copy.X, self.copy.y) if self.copy.X is not None else (X, y)
        if len(X_all) == 0:
            X_all, y_all = X, y
        take = np.arange(pad) % len(X_all)
        return (np.concatenate([X, np.asarray(X_all[take])]),
                np.concatenate([y, np.asarray(y_all[take])]), pad)

    def close(self):
        """Delete the local copy (and its spill files)."""
        self.copy.close()

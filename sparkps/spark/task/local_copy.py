"""The compact local copy of a partition a training task keeps for epochs after the first, and the batches
it reads from it (``PartitionBatches``: the first epoch streams from Spark, later ones from the copy)."""
import itertools
import os
import tempfile

import numpy as np

from sparkps.errors import DataError
from sparkps.spark.common.batches import iter_batches

SPILL_BYTES = 256 << 20   # a partition's local copy larger than this goes to a memory-mapped file


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


def read_ahead(rows):
    """An iterator of ``rows`` whose first item is read now (blocks on that read: a task reads its first record
    batch while its server process starts and the nodes register). An error reading it is raised where the first
    item is reached, as it would have been without the read-ahead; an empty ``rows`` stays empty."""
    rows = iter(rows)
    try:
        first = next(rows)
    except StopIteration:
        return iter(())
    except Exception as exc:       # raised on the fit's first read, after registration, like any error in the data
        return _raising(exc)
    return itertools.chain((first,), rows)


def _raising(exc):
    raise exc
    yield      # a generator: nothing is raised until it is read

"""Readers for LibSVM and CSV files, whole or one shard (lines ``i % num_parts == part_index``).

    X, y = read_libsvm('train.svm', num_features=784)             # dense float32
    X, y = read_csv('train.csv', label_column=0, part_index=1, num_parts=4)

Line numbers for sharding count every physical line of the file from 0 (blank, comment and header lines
included), so every worker agrees on the split without coordination. Bad lines raise DataError naming
``file:line``.
"""
from collections import namedtuple

import numpy as np

from sparkps.errors import ConfigError, DataError
from sparkps.io.iterators import NDArrayIter


class CSRMatrix(namedtuple('CSRMatrix', ['data', 'indices', 'indptr', 'shape'])):
    """Compressed sparse rows: row r holds ``data[indptr[r]:indptr[r+1]]`` at ``indices[...]``."""

    def toarray(self, dtype=np.float32):
        """Return the dense ``shape`` array (later duplicates of an index win)."""
        dense = np.zeros(self.shape, dtype=dtype)
        rows = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        dense[rows, self.indices] = self.data
        return dense


def _check_shard(part_index, num_parts):
    if not (isinstance(num_parts, int) and num_parts >= 1 and isinstance(part_index, int)
            and 0 <= part_index < num_parts):
        raise ConfigError(f"need 0 <= part_index < num_parts, got part_index={part_index!r}, "
                          f"num_parts={num_parts!r}")


def _shard_lines(path, part_index, num_parts, skip_first=False):
    """Yield (1-based line number, text) of the lines of this shard that hold data."""
    _check_shard(part_index, num_parts)
    with open(path, encoding='utf-8') as handle:
        for i, line in enumerate(handle):
            if i % num_parts != part_index or (skip_first and i == 0):
                continue
            text = line.split('#', 1)[0].strip()
            if text:
                yield i + 1, text


def _libsvm_row(path, lineno, text):
    tokens = text.split()
    where = f"{path}:{lineno}"
    try:
        label = float(tokens[0])
    except ValueError:
        raise DataError(f"{where}: label {tokens[0]!r} is not a number") from None
    indices, values = [], []
    for token in tokens[1:]:
        if token.startswith('qid:'):
            continue
        index, sep, value = token.partition(':')
        try:
            if not sep:
                raise ValueError
            indices.append(int(index))
            values.append(float(value))
        except ValueError:
            raise DataError(f"{where}: malformed feature {token!r} (expected index:value)") from None
    return label, indices, values


def _check_indices(path, lines, indptr, indices, num_features, zero_based):
    offset = 0 if zero_based else 1
    bad = np.flatnonzero((indices < offset) | (indices - offset >= num_features))
    if bad.size == 0:
        return indices - offset
    pos = bad[0]
    row = int(np.searchsorted(indptr, pos, side='right')) - 1
    index = int(indices[pos])
    if index < offset:
        hint = ' (a 0-based file? pass zero_based=True)' if index == 0 else ''
        raise DataError(f"{path}:{lines[row]}: feature index {index} below {offset}{hint}")
    raise DataError(f"{path}:{lines[row]}: feature index {index} is beyond num_features={num_features}"
                    f"{' (indices are 1-based)' if offset else ''}")


def read_libsvm(path, num_features=None, zero_based=False, part_index=0, num_parts=1, sparse=False,
                dtype=np.float32):
    """Read a LibSVM file ``label idx:val ...`` into ``(X, y)``.

    Indices are 1-based unless ``zero_based=True`` (``'auto'``: 0-based if the shard holds an index 0).
    ``num_features=None`` takes the largest index seen. ``X`` is a dense ``dtype`` array, or a CSRMatrix
    with ``sparse=True``; ``y`` is float32. Malformed lines and indices out of range -> DataError.
    """
    labels, lines, indptr, indices, values = [], [], [0], [], []
    for lineno, text in _shard_lines(path, part_index, num_parts):
        label, row_indices, row_values = _libsvm_row(path, lineno, text)
        labels.append(label)
        lines.append(lineno)
        indices.extend(row_indices)
        values.extend(row_values)
        indptr.append(len(indices))
    indices = np.asarray(indices, dtype=np.int64)
    indptr = np.asarray(indptr, dtype=np.int64)
    if zero_based == 'auto':
        zero_based = bool(indices.size and indices.min() == 0)
    if num_features is None:
        if not indices.size:
            raise DataError(f"{path}: no features in shard {part_index} of {num_parts}; pass num_features")
        num_features = int(indices.max()) + (1 if zero_based else 0)
    indices = _check_indices(path, lines, indptr, indices, int(num_features), bool(zero_based))
    matrix = CSRMatrix(np.asarray(values, dtype=dtype), indices, indptr, (len(labels), int(num_features)))
    y = np.asarray(labels, dtype=np.float32)
    return (matrix if sparse else matrix.toarray(dtype)), y


def _is_header(fields):
    for field in fields:
        try:
            float(field)
            return False
        except ValueError:
            pass
    return True


def _first_line(path):
    with open(path, encoding='utf-8') as handle:
        return handle.readline()


def _csv_row(path, lineno, text, delimiter, width):
    fields = text.split(delimiter)
    if width is not None and len(fields) != width:
        raise DataError(f"{path}:{lineno}: expected {width} columns, got {len(fields)}")
    try:
        return [float(f) for f in fields]
    except ValueError:
        bad = next(f for f in fields if not _parses(f))
        raise DataError(f"{path}:{lineno}: field {bad.strip()!r} is not a number") from None


def _parses(field):
    try:
        float(field)
        return True
    except ValueError:
        return False


def read_csv(path, label_column=0, delimiter=',', header='auto', part_index=0, num_parts=1,
             dtype=np.float32):
    """Read a numeric CSV file into ``(X, y)``; ``y`` is the ``label_column`` (None: no label, y is None).

    ``header``: True skips line 1, False reads it as data, 'auto' skips it when none of its fields is a
    number. Rows of another width than the first, and non-numeric fields -> DataError naming file:line.
    """
    if header == 'auto':
        header = _is_header(_first_line(path).strip().split(delimiter))
    rows, width = [], None
    for lineno, text in _shard_lines(path, part_index, num_parts, skip_first=bool(header)):
        rows.append(_csv_row(path, lineno, text, delimiter, width))
        width = len(rows[0])
    table = np.asarray(rows, dtype=np.float64).reshape(len(rows), width or 0)
    if label_column is None:
        return table.astype(dtype), None
    if width is not None and not -width <= label_column < width:
        raise ConfigError(f"{path}: label_column {label_column} out of range for {width} columns")
    column = label_column % width if width else 0
    y = table[:, column].astype(np.float32) if width else np.zeros(0, np.float32)
    X = np.delete(table, column, axis=1).astype(dtype) if width else np.zeros((0, 0), dtype)
    return X, y


class LibSVMIter(NDArrayIter):
    """NDArrayIter over ``read_libsvm(path, num_features, ...)`` (dense rows)."""

    def __init__(self, path, num_features, batch_size=128, zero_based=False, part_index=0, num_parts=1,
                 **iter_kwargs):
        X, y = read_libsvm(path, num_features, zero_based=zero_based, part_index=part_index,
                           num_parts=num_parts)
        super().__init__(X, y, batch_size=batch_size, **iter_kwargs)


class CSVIter(NDArrayIter):
    """NDArrayIter over ``read_csv(path, label_column, ...)``."""

    def __init__(self, path, batch_size=128, label_column=0, delimiter=',', header='auto', part_index=0,
                 num_parts=1, **iter_kwargs):
        X, y = read_csv(path, label_column=label_column, delimiter=delimiter, header=header,
                        part_index=part_index, num_parts=num_parts)
        super().__init__(X, y, batch_size=batch_size, **iter_kwargs)


def shard_row_line(path, row, part_index=0, num_parts=1, skip_first=False):
    """The 1-based file line of data row ``row`` (0-based) of a shard, as the readers above count them
    (``skip_first``: a CSV header); None when the shard has fewer rows."""
    for number, (lineno, _) in enumerate(_shard_lines(path, part_index, num_parts, skip_first)):
        if number == row:
            return lineno
    return None


def with_file_line(exc, path, part_index=0, num_parts=1, csv=False):
    """``exc`` (a DataError saying ``at row N`` of a shard's rows) as a DataError starting ``path:line:``; ``exc``
    itself when it names no row or the row is not found.  ``csv``: the file is CSV (a header line is skipped as
    read_csv skips it)."""
    import re
    skip_first = bool(csv) and _is_header(_first_line(path).strip().split(','))
    found = re.search(r"\bat row (\d+)", str(exc))
    line = shard_row_line(path, int(found.group(1)), part_index, num_parts, skip_first) if found else None
    if line is None:
        return exc
    return DataError("%s:%d: %s" % (path, line, re.sub(r" at row \d+", "", str(exc), count=1)))

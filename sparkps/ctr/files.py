"""Readers for the file formats of click-through-rate data, whole or one shard (lines
``i % num_parts == part_index``, counted from 0 over every physical line, as the other readers).

* Criteo's TSV: label, 13 integer columns, 26 hexadecimal categorical columns; any cell but the label may be
  empty (a missing integer reads as NaN, a missing categorical as the field's "missing" id).
* libffm: ``label field:feature:value ...``.
* Angel's ``dummy``: ``label index index ...``, the indices of the features equal to 1; labels -1/1 or 0/1.

    table = read_criteo('day_0.tsv')           # CTRTable: labels, ids (n, 26) uint64, numeric (n, 13)
    rows = read_libffm('train.ffm')            # ParsedRows: labels, fields, ids, values, indptr

Categorical values become ids by ``hashing.hash_column`` (field and value together); Angel's dummy indices
are ids already and stay as they are. Every bad line raises DataError naming ``file:line``, or, read with
``bad_lines=LinePolicy("skip")``, is dropped and counted in the policy's ``skipped``.
"""
from collections import namedtuple

import numpy as np

from sparkps.ctr.hashing import hash_column, hash_fields
from sparkps.errors import ConfigError, DataError

CRITEO_NUMERIC = tuple("I%d" % i for i in range(1, 14))
CRITEO_CATEGORICAL = tuple("C%d" % i for i in range(1, 27))


class CTRTable(namedtuple("CTRTable", ["labels", "ids", "numeric", "fields", "numeric_names", "lines"])):
    """One row per example: ``ids`` (rows, fields) uint64, ``numeric`` (rows, columns) float32 with NaN
    where a cell was empty, ``labels`` float32 0/1, ``lines`` the 1-based file line of each row."""


class ParsedRows(namedtuple("ParsedRows", ["labels", "fields", "ids", "values", "indptr", "lines"])):
    """Variable-length rows: row r holds features ``[indptr[r], indptr[r+1])`` with ids (uint64 or int64),
    field numbers (int32, the position in the row where a format has no fields) and values (float32)."""

    def per_field(self, num_fields, path="<rows>"):
        """(ids, values), each (rows, num_fields), for rows holding exactly one feature per field, given in
        field order; DataError naming the first row that does not."""
        counts = np.diff(self.indptr)
        bad = np.flatnonzero(counts != num_fields)
        if bad.size:
            r = bad[0]
            raise DataError("%s:%d: expected %d features (one per field), got %d"
                            % (path, self.lines[r], num_fields, counts[r]))
        shape = (len(self.labels), num_fields)
        return self.ids.reshape(shape), self.values.reshape(shape)

    def by_field(self):
        """{field: (ids of that field in row order, count per row)} in field order: a field that occurs more than
        once in a row (or not at all) is multi-valued, as libffm allows."""
        rows = np.repeat(np.arange(len(self.labels)), np.diff(self.indptr))
        out = {}
        for field in np.unique(self.fields):
            at = self.fields == field
            out[int(field)] = (self.ids[at], np.bincount(rows[at], minlength=len(self.labels)))
        return out


BAD_LINES = ("error", "skip")


class LinePolicy:
    """What a reader does with a bad line: ``error`` raises its DataError (naming ``file:line`` and the column),
    ``skip`` drops it and counts it in ``skipped``."""

    def __init__(self, policy="error"):
        if policy not in BAD_LINES:
            raise ConfigError("bad-lines policy must be one of %s, got %r" % (", ".join(BAD_LINES), policy))
        self.policy, self.skipped = policy, 0

    def parsed(self, parse, where, text):
        """``parse(where, text)``, or None for a bad line under ``skip``."""
        try:
            return parse(where, text)
        except DataError:
            if self.policy == "error":
                raise
            self.skipped += 1
            return None


def _check_shard(part_index, num_parts):
    if not (isinstance(num_parts, int) and num_parts >= 1 and isinstance(part_index, int)
            and 0 <= part_index < num_parts):
        raise ConfigError("need 0 <= part_index < num_parts, got part_index=%r, num_parts=%r"
                          % (part_index, num_parts))


def shard_lines(path, part_index=0, num_parts=1):
    """Yield (1-based line number, line without its end of line) of this shard's non-blank lines. Unlike
    ``strip()``, trailing tabs stay: they are empty cells."""
    _check_shard(part_index, num_parts)
    with open(path, encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if i % num_parts == part_index:
                text = line.rstrip("\r\n")
                if text.strip():
                    yield i + 1, text


def parse_label(where, text):
    """A click label: 0/1, or -1/1 (Angel) read as 0/1."""
    try:
        value = float(text)
    except ValueError:
        raise DataError("%s: label %r is not a number" % (where, text)) from None
    if value not in (0.0, 1.0, -1.0):
        raise DataError("%s: label %r must be 0 or 1 (or -1 for a negative)" % (where, text))
    return 1.0 if value == 1.0 else 0.0


def _criteo_numeric(where, cells):
    out = []
    for name, cell in zip(CRITEO_NUMERIC, cells):
        if cell == "":
            out.append(np.nan)
            continue
        try:
            out.append(float(int(cell)))
        except ValueError:
            raise DataError("%s: column %s holds %r, expected an integer or an empty cell"
                            % (where, name, cell)) from None
    return out


def check_criteo_line(where, text):
    """Raise DataError naming ``where`` (``file:line``) and the column at fault when ``text`` is not a Criteo line:
    40 tab-separated cells, a 0/1 (or -1) label, integers or empty cells in I1-I13."""
    width = 1 + len(CRITEO_NUMERIC) + len(CRITEO_CATEGORICAL)
    cells = text.split("\t")
    if len(cells) != width:
        raise DataError("%s: expected %d tab-separated columns (label, I1-I13, C1-C26), got %d"
                        % (where, width, len(cells)))
    parse_label(where, cells[0])
    _criteo_numeric(where, cells[1:14])


def read_criteo(path, part_index=0, num_parts=1):
    """Read Criteo's TSV (40 tab-separated columns) into a CTRTable."""
    labels, numeric, categorical, lines = [], [], [], []
    width = 1 + len(CRITEO_NUMERIC) + len(CRITEO_CATEGORICAL)
    for lineno, text in shard_lines(path, part_index, num_parts):
        where = "%s:%d" % (path, lineno)
        cells = text.split("\t")
        if len(cells) != width:
            raise DataError("%s: expected %d tab-separated columns (label, I1-I13, C1-C26), got %d"
                            % (where, width, len(cells)))
        labels.append(parse_label(where, cells[0]))
        numeric.append(_criteo_numeric(where, cells[1:14]))
        categorical.append(cells[14:])
        lines.append(lineno)
    columns = [[row[j] for row in categorical] for j in range(len(CRITEO_CATEGORICAL))]
    ids = hash_fields(CRITEO_CATEGORICAL, columns) if categorical else np.zeros((0, 26), np.uint64)
    return CTRTable(np.asarray(labels, np.float32), ids,
                    np.asarray(numeric, np.float32).reshape(len(labels), len(CRITEO_NUMERIC)),
                    CRITEO_CATEGORICAL, CRITEO_NUMERIC, np.asarray(lines, np.int64))


def _ffm_token(where, token, column=None):
    at = "" if column is None else "column %d; " % column
    parts = token.split(":")
    if len(parts) != 3 or not parts[1]:
        raise DataError("%s: malformed feature %r (%sexpected field:feature:value)" % (where, token, at))
    try:
        return int(parts[0]), parts[1], float(parts[2])
    except ValueError:
        raise DataError("%s: malformed feature %r (%sfield must be an integer, value a number)"
                        % (where, token, at)) from None


def _ffm_line(where, text):
    tokens = text.split()
    return parse_label(where, tokens[0]), [_ffm_token(where, token, column)
                                           for column, token in enumerate(tokens[1:], 2)]


def read_libffm(path, part_index=0, num_parts=1, bad_lines=None):
    """Read libffm (``label field:feature:value ...``) into ParsedRows; each id hashes (field, feature).
    ``bad_lines``: a LinePolicy (default: raise at the first bad line)."""
    policy = bad_lines or LinePolicy()
    labels, fields, features, values, indptr, lines = [], [], [], [], [0], []
    for lineno, text in shard_lines(path, part_index, num_parts):
        row = policy.parsed(_ffm_line, "%s:%d" % (path, lineno), text)
        if row is None:
            continue
        labels.append(row[0])
        for field, feature, value in row[1]:
            fields.append(field)
            features.append(feature)
            values.append(value)
        indptr.append(len(features))
        lines.append(lineno)
    fields = np.asarray(fields, np.int32)
    ids = np.zeros(len(features), np.uint64)
    features = np.asarray(features, dtype=object)
    for field in np.unique(fields):
        at = fields == field
        ids[at] = hash_column(str(field), features[at])
    return ParsedRows(np.asarray(labels, np.float32), fields, ids, np.asarray(values, np.float32),
                      np.asarray(indptr, np.int64), np.asarray(lines, np.int64))


def _dummy_line(where, text, index_range=None):
    tokens = text.replace(",", " ").split()
    label, indices = parse_label(where, tokens[0]), []
    for position, token in enumerate(tokens[1:]):
        try:
            index = int(token)
        except ValueError:
            raise DataError("%s: feature index %r is not an integer (column %d)" % (where, token, position + 2)) \
                from None
        if index < 0 or (index_range is not None and index >= index_range):
            raise DataError("%s: feature index %d outside [0, %s) (column %d)"
                            % (where, index, index_range or "2**63", position + 2))
        indices.append(index)
    return label, indices


def read_dummy(path, part_index=0, num_parts=1, index_range=None, bad_lines=None):
    """Read Angel's dummy format into ParsedRows (values 1, field = position in the row). With
    ``index_range`` every index must lie in [0, index_range).  ``bad_lines``: a LinePolicy (default: raise)."""
    return _positional_rows(path, part_index, num_parts, bad_lines,
                            lambda where, line: _dummy_line(where, line, index_range))


def _positional_rows(path, part_index, num_parts, bad_lines, parse_line, skip_blank=False):
    """ParsedRows of lines ``parse_line(where, text) -> (label, ids)`` gives, field = position in the row,
    values 1; bad lines go to ``bad_lines`` (a LinePolicy, default: raise)."""
    policy = bad_lines or LinePolicy()
    labels, ids, positions, indptr, lines = [], [], [], [0], []
    for lineno, text in shard_lines(path, part_index, num_parts):
        if skip_blank and not text.split("#", 1)[0].strip():
            continue
        row = policy.parsed(parse_line, "%s:%d" % (path, lineno), text)
        if row is None:
            continue
        labels.append(row[0])
        ids.extend(row[1])
        positions.extend(range(len(row[1])))
        indptr.append(len(ids))
        lines.append(lineno)
    return ParsedRows(np.asarray(labels, np.float32), np.asarray(positions, np.int32), np.asarray(ids, np.int64),
                      np.ones(len(ids), np.float32), np.asarray(indptr, np.int64), np.asarray(lines, np.int64))


def _libsvm_line(where, text):
    tokens = text.split("#", 1)[0].split()
    label, indices = parse_label(where, tokens[0]), []
    for position, token in enumerate(tokens[1:]):
        index, sep, value = token.partition(":")
        try:
            if not sep or int(index) < 0:
                raise ValueError
            float(value)
        except ValueError:
            raise DataError("%s: malformed feature %r (column %d; expected index:value)"
                            % (where, token, position + 2)) from None
        indices.append(int(index))
    return label, indices


def read_libsvm_ids(path, part_index=0, num_parts=1, bad_lines=None):
    """Read libsvm (``label index:value ...``) as CTR rows: ParsedRows of the indices as they are written (ids,
    field = position in the row, values 1), the label 0/1 or -1/1.  ``bad_lines``: a LinePolicy (default: raise)."""
    return _positional_rows(path, part_index, num_parts, bad_lines, _libsvm_line, skip_blank=True)


def one_feature_per_field(rows, path, bad_lines=None):
    """(rows, width): the rows holding the most common number of features (one per field); a row with another
    count is a bad line (DataError naming ``file:line`` under ``error``, dropped and counted under ``skip``)."""
    policy = bad_lines or LinePolicy()
    counts = np.diff(rows.indptr)
    if not counts.size:
        return rows, 0
    values, seen = np.unique(counts, return_counts=True)
    width = int(values[np.argmax(seen)])
    keep = counts == width
    if keep.all():
        return rows, width
    if policy.policy == "error":
        r = int(np.flatnonzero(~keep)[0])
        raise DataError("%s:%d: expected %d features (one per field, as most rows hold), got %d"
                        % (path, rows.lines[r], width, counts[r]))
    policy.skipped += int((~keep).sum())
    at = np.repeat(keep, counts)
    indptr = np.concatenate([[0], np.cumsum(counts[keep])]).astype(np.int64)
    return ParsedRows(rows.labels[keep], rows.fields[at], rows.ids[at], rows.values[at], indptr,
                      rows.lines[keep]), width

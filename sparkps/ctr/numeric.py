"""Standardisation of numeric CTR columns from statistics computed once on the training data.

    stats = NumericStats.fit(train.numeric, names=train.numeric_names, log=True)
    X = stats.transform(test.numeric)           # (x - mean) / std, missing cells -> 0 (the mean)
    saved = stats.to_dict()                     # plain JSON, kept with the model
    stats = NumericStats.from_dict(saved)

With ``log=True`` a value is first mapped to sign(x) * log1p(|x|), which tames the heavy tails of counts
such as Criteo's integer columns. Statistics ignore missing (NaN) cells; a column that is constant or
entirely missing gets std 1. Statistics from several shards merge exactly (``merge``), so a distributed
job computes them in one pass over its partitions.
"""
import numpy as np

from sparkps.errors import DataError


class NumericStats:
    """Per-column count, mean and standard deviation of the (optionally log-mapped) training values; ``widths``:
    the most values a row of each multi-valued column holds (``{column: width}``, filled where the data is read)."""

    def __init__(self, names, count, total, total_sq, log=False):
        self.widths = {}
        self.names = tuple(names)
        self.count = np.asarray(count, np.float64)
        self.total = np.asarray(total, np.float64)
        self.total_sq = np.asarray(total_sq, np.float64)
        self.log = bool(log)

    @staticmethod
    def _mapped(X, log):
        X = np.asarray(X, np.float64)
        return np.sign(X) * np.log1p(np.abs(X)) if log else X

    @classmethod
    def fit(cls, X, names=None, log=False):
        """Statistics of the columns of ``X`` (rows, columns), NaN meaning missing."""
        X = cls._mapped(X, log)
        if X.ndim != 2:
            raise DataError("NumericStats.fit: numeric data must be (rows, columns), got shape %s" % (X.shape,))
        names = tuple(names) if names is not None else tuple("x%d" % j for j in range(X.shape[1]))
        if len(names) != X.shape[1]:
            raise DataError("NumericStats.fit: %d names for %d columns" % (len(names), X.shape[1]))
        seen = ~np.isnan(X)
        filled = np.where(seen, X, 0.0)
        return cls(names, seen.sum(axis=0), filled.sum(axis=0), (filled * filled).sum(axis=0), log)

    def merge(self, other):
        """Statistics of both shards together (same columns)."""
        if self.names != other.names or self.log != other.log:
            raise DataError("NumericStats.merge: columns %s (log=%s) and %s (log=%s) differ"
                            % (self.names, self.log, other.names, other.log))
        return NumericStats(self.names, self.count + other.count, self.total + other.total,
                            self.total_sq + other.total_sq, self.log)

    @property
    def mean(self):
        return np.where(self.count > 0, self.total / np.maximum(self.count, 1), 0.0)

    @property
    def std(self):
        var = self.total_sq / np.maximum(self.count, 1) - self.mean ** 2
        std = np.sqrt(np.maximum(var, 0.0))
        return np.where(std > 1e-12, std, 1.0)

    def transform(self, X):
        """Standardised float32 copy of ``X``; missing cells become 0."""
        X = self._mapped(X, self.log)
        if X.ndim != 2 or X.shape[1] != len(self.names):
            raise DataError("NumericStats.transform: expected (rows, %d) numeric columns %s, got shape %s"
                            % (len(self.names), list(self.names), X.shape))
        out = (X - self.mean) / self.std
        return np.where(np.isnan(out), 0.0, out).astype(np.float32)

    def to_dict(self):
        """A JSON-ready dict (saved with the model)."""
        return {"names": list(self.names), "count": self.count.tolist(), "total": self.total.tolist(),
                "total_sq": self.total_sq.tolist(), "log": self.log}

    @classmethod
    def from_dict(cls, saved):
        return cls(saved["names"], saved["count"], saved["total"], saved["total_sq"], saved.get("log", False))

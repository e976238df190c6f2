"""What a CTR model reads: its categorical fields, numeric columns and widths, and how rows become the
network's input arrays.

    spec = FeatureSpec(categorical=['C1', 'C2'], numeric=['I1'], embedding_dim=8, hidden_units=(64, 32))
    inputs = spec.inputs(ids, numeric)     # {'ids': (rows, 2) float32 rows of the table, 'dense': (rows, 1)}

Every categorical field shares one embedding table of ``num_buckets`` rows: a value's 64-bit id (see
``sparkps.train.io.hashing``, which already mixes the field in) is reduced to a row by ``bucket``. The
network's inputs are named ``ids`` (rows, fields) and ``dense`` (rows, numeric columns; absent without
numeric columns); its label is ``ctr_label`` (0/1). With ``packed=True`` there is one input, ``data``
(rows, fields + numeric columns): the bucket rows then the numeric columns side by side, as a single feature
vector per row (how SparkTrainer and SparkModel feed a network); the network slices it.
"""
from dataclasses import dataclass, field

import numpy as np

from sparkps.errors import ConfigError, DataError
from sparkps.train.io.hashing import bucket

IDS, DENSE, LABEL, PACKED = "ids", "dense", "ctr_label", "data"


@dataclass(frozen=True)
class FeatureSpec:
    """Fields and widths of a CTR network (see the module docstring)."""
    categorical: tuple
    numeric: tuple = ()
    embedding_dim: int = 8
    hidden_units: tuple = (64, 32)
    num_buckets: int = 1 << 18
    cross_layers: int = 2
    packed: bool = False
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "categorical", tuple(self.categorical))
        object.__setattr__(self, "numeric", tuple(self.numeric))
        object.__setattr__(self, "hidden_units", tuple(int(h) for h in self.hidden_units))
        if not self.categorical:
            raise ConfigError("FeatureSpec: a CTR model needs at least one categorical field")
        if self.embedding_dim < 1 or self.num_buckets < 2 or any(h < 1 for h in self.hidden_units):
            raise ConfigError("FeatureSpec: embedding_dim, num_buckets and hidden_units must be positive, got "
                              "%d, %d, %s" % (self.embedding_dim, self.num_buckets, self.hidden_units))
        if self.num_buckets > 1 << 24:
            raise ConfigError("FeatureSpec: num_buckets %d above 2**24 (rows travel as float32 ids)"
                              % self.num_buckets)

    @property
    def num_fields(self):
        return len(self.categorical)

    @property
    def width(self):
        """Features per row in the packed layout."""
        return self.num_fields + len(self.numeric)

    def input_shapes(self, batch_size):
        """{input name: shape} for ``simple_bind``."""
        if self.packed:
            return {PACKED: (batch_size, self.width)}
        shapes = {IDS: (batch_size, self.num_fields)}
        if self.numeric:
            shapes[DENSE] = (batch_size, len(self.numeric))
        return shapes

    def inputs(self, ids, numeric=None):
        """The network's input arrays from hashed ids (rows, fields) uint64 and standardised numeric
        columns (rows, columns)."""
        ids = np.asarray(ids)
        if ids.ndim != 2 or ids.shape[1] != self.num_fields:
            raise DataError("FeatureSpec: expected ids of shape (rows, %d) for fields %s, got %s"
                            % (self.num_fields, list(self.categorical), ids.shape))
        out = {IDS: bucket(ids.astype(np.uint64), self.num_buckets).astype(np.float32)}
        if self.numeric:
            if numeric is None or np.shape(numeric) != (ids.shape[0], len(self.numeric)):
                raise DataError("FeatureSpec: expected numeric columns %s as (%d, %d), got %s"
                                % (list(self.numeric), ids.shape[0], len(self.numeric),
                                   None if numeric is None else np.shape(numeric)))
            out[DENSE] = np.asarray(numeric, np.float32)
        if self.packed:
            return {PACKED: np.concatenate([out[IDS]] + ([out[DENSE]] if self.numeric else []), axis=1)}
        return out

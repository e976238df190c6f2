"""What a CTR model reads: its categorical fields (single- and multi-valued), numeric columns and widths, its
sparse tables, and how rows become the network's input arrays.

    spec = FeatureSpec(categorical=['C1', 'C2'], numeric=['I1'], multi_valued={'tags': 5}, embedding_dim=8)
    inputs = spec.inputs(ids, numeric, multi={'tags': tag_lists})
    # {'ids': (rows, 2) uint64, 'ids_tags': (rows, 5) uint64 (PADDING_ID where a row has fewer), 'dense': (rows, 1)}

Ids are the 64-bit ids of ``sparkps.ctr.hashing`` (the hash already mixes the field in). They are read from
sparse tables on the parameter server (``contrib.HashEmbedding``: a row exists only once an id was seen, a step
pulls only the rows of its batch): with ``tables='shared'`` one table for all fields (``embedding_weight``, and
``linear_embedding_weight`` of width 1 for the first-order term), with ``tables='per_field'`` one pair per field
(``embedding_<field>_weight``, ``linear_<field>_weight``). ``num_buckets`` (optional) reduces ids to that many
values first (bounded tables, e.g. to compare with a dense model). A multi-valued field of at most ``n`` ids a row
is one input ``ids_<field>`` of width ``n``, pooled (``pooling``: sum or mean over the row's ids) into one
embedding like a single-valued field; the absent slots hold ``PADDING_ID``.

The network's inputs are ``ids`` (the single-valued fields, shared tables), ``ids_<field>`` (multi-valued fields,
and every field with per-field tables) and ``dense`` (numeric columns; absent without them); its label is
``ctr_label`` (0/1). ``spec.input_parts()`` names and types them (``TypedInputs``: ids stay 64-bit integers) for
a Spark fit and for scoring.
"""
from dataclasses import dataclass, field

import numpy as np

from sparkps.ctr.hashing import bucket, split_multi
from sparkps.errors import ConfigError, DataError
from sparkps.rows.config import TableConfig

IDS, DENSE, LABEL = "ids", "dense", "ctr_label"
PADDING_ID = -1          # as int64; 2**64 - 1 as uint64: the id of an empty slot of a multi-valued field
POOLINGS = ("sum", "mean")
TABLE_MODES = ("shared", "per_field")


@dataclass(frozen=True)
class IdInput:
    """One id input of a network: its name, the fields it holds, its width, pooling and the TableConfigs of the
    tables it reads (``sparkps.rows.config``)."""
    name: str
    fields: tuple
    width: int
    pooling: str                # 'none' (one id per field) or the pooling of a multi-valued field
    table: TableConfig          # the embedding table
    linear_table: TableConfig   # the first-order (width 1) table


@dataclass(frozen=True)
class FeatureSpec:
    """Fields and widths of a CTR network (see the module docstring). ``table_options`` maps a table kind
    ('embedding', 'linear') to the options its tables declare (sparkps.rows.config: e.g. its own optimizer); the
    tables themselves are the TableConfigs of ``id_inputs()``."""
    categorical: tuple
    numeric: tuple = ()
    embedding_dim: int = 8
    hidden_units: tuple = (64, 32)
    num_buckets: int = None
    cross_layers: int = 2
    multi_valued: dict = field(default_factory=dict)
    pooling: str = "mean"
    tables: str = "shared"
    table_options: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "categorical", tuple(self.categorical))
        object.__setattr__(self, "numeric", tuple(self.numeric))
        object.__setattr__(self, "hidden_units", tuple(int(h) for h in self.hidden_units))
        object.__setattr__(self, "multi_valued", {str(k): int(v) for k, v in dict(self.multi_valued).items()})
        if not self.categorical and not self.multi_valued:
            raise ConfigError("FeatureSpec: a CTR model needs at least one categorical field")
        if self.embedding_dim < 1 or any(h < 1 for h in self.hidden_units):
            raise ConfigError("FeatureSpec: embedding_dim and hidden_units must be positive, got %d, %s"
                              % (self.embedding_dim, self.hidden_units))
        if self.num_buckets is not None and self.num_buckets < 2:
            raise ConfigError("FeatureSpec: num_buckets must be >= 2 (or None for 64-bit ids), got %r"
                              % (self.num_buckets,))
        bad = {f: n for f, n in self.multi_valued.items() if n < 1}
        if bad:
            raise ConfigError("FeatureSpec: multi-valued field(s) %s need a width >= 1" % bad)
        both = set(self.categorical) & set(self.multi_valued)
        if both:
            raise ConfigError("FeatureSpec: field(s) %s are both single- and multi-valued" % sorted(both))
        if self.pooling not in POOLINGS or self.tables not in TABLE_MODES:
            raise ConfigError("FeatureSpec: pooling must be one of %s and tables one of %s, got %r, %r"
                              % (POOLINGS, TABLE_MODES, self.pooling, self.tables))
        unknown = sorted(set(self.table_options) - {"embedding", "linear"})
        if unknown:
            raise ConfigError("FeatureSpec: table_options keys are 'embedding' and 'linear', got %s" % unknown)

    @property
    def num_fields(self):
        """Fields the network embeds (single- and multi-valued)."""
        return len(self.categorical) + len(self.multi_valued)

    def table_config(self, name, kind):
        """The TableConfig of table ``name`` of ``kind`` ('embedding': ``embedding_dim`` wide, or 'linear': one
        wide), with the options ``table_options[kind]`` declares."""
        dim = self.embedding_dim if kind == "embedding" else 1
        return TableConfig.from_options(name, self.table_options.get(kind), dim=dim)

    def id_inputs(self):
        """The network's id inputs, in field order: single-valued fields first, then multi-valued ones."""
        out = []

        def add(name, fields, width, pooling, table, linear):
            out.append(IdInput(name, fields, width, pooling, self.table_config(table, "embedding"),
                               self.table_config(linear, "linear")))

        if self.tables == "shared" and self.categorical:
            add(IDS, self.categorical, len(self.categorical), "none", "embedding_weight", "linear_embedding_weight")
        singles = self.categorical if self.tables == "per_field" else ()
        for name in singles:
            add("ids_" + name, (name,), 1, "none", "embedding_%s_weight" % name, "linear_%s_weight" % name)
        for name, width in self.multi_valued.items():
            shared = self.tables == "shared"
            add("ids_" + name, (name,), width, self.pooling,
                "embedding_weight" if shared else "embedding_%s_weight" % name,
                "linear_embedding_weight" if shared else "linear_%s_weight" % name)
        return out

    def input_shapes(self, batch_size):
        """{input name: shape} for ``simple_bind``."""
        shapes = {i.name: (batch_size, i.width) for i in self.id_inputs()}
        if self.numeric:
            shapes[DENSE] = (batch_size, len(self.numeric))
        return shapes

    def input_parts(self):
        """The network's inputs as ``[(name, columns, kind)]``, kind 'ids' (64-bit ids) or 'float': the named, typed
        inputs a Spark fit reads (``sparkps.spark.common.typed_inputs.TypedInputs``)."""
        parts = [(i.name, i.width, "ids") for i in self.id_inputs()]
        if self.numeric:
            parts.append((DENSE, len(self.numeric), "float"))
        return parts

    def inputs(self, ids, numeric=None, multi=None):
        """The network's input arrays from hashed ids (rows, single-valued fields) uint64, standardised numeric
        columns (rows, columns) and ``multi``: {multi-valued field: (rows, width) ids padded with PADDING_ID,
        or a list of id sequences per row}."""
        ids = np.asarray(ids) if ids is not None else np.zeros((0, 0), np.uint64)
        rows = ids.shape[0] if self.categorical else _rows_of_multi(multi)
        if self.categorical and (ids.ndim != 2 or ids.shape[1] != len(self.categorical)):
            raise DataError("FeatureSpec: expected ids of shape (rows, %d) for fields %s, got %s"
                            % (len(self.categorical), list(self.categorical), ids.shape))
        columns = {name: self._reduced(ids[:, [j]]) for j, name in enumerate(self.categorical)}
        for name, width in self.multi_valued.items():
            columns[name] = self._reduced(padded_ids(name, (multi or {}).get(name), width, rows), keep_padding=True)
        out = {}
        for item in self.id_inputs():
            out[item.name] = np.concatenate([columns[f] for f in item.fields], axis=1)
        if self.numeric:
            if numeric is None or np.shape(numeric) != (rows, len(self.numeric)):
                raise DataError("FeatureSpec: expected numeric columns %s as (%d, %d), got %s"
                                % (list(self.numeric), rows, len(self.numeric),
                                   None if numeric is None else np.shape(numeric)))
            out[DENSE] = np.asarray(numeric, np.float32)
        return out

    def _reduced(self, ids, keep_padding=False):
        ids = np.asarray(ids).astype(np.uint64)
        if self.num_buckets is None:
            return ids
        reduced = bucket(ids, self.num_buckets).astype(np.uint64)
        if keep_padding:
            reduced[ids == np.uint64(2**64 - 1)] = np.uint64(2**64 - 1)
        return reduced


def _rows_of_multi(multi):
    for value in (multi or {}).values():
        return len(value)
    raise DataError("FeatureSpec: no ids given")


def padded_ids(field_name, value, width, rows):
    """(rows, width) uint64 ids of a multi-valued field, absent slots PADDING_ID: from such an array, or from one
    sequence of ids per row (a row with more than ``width`` ids keeps its first ``width``)."""
    if value is None:
        raise DataError("multi-valued field %r: no ids given" % field_name)
    if isinstance(value, np.ndarray) and value.ndim == 2:
        if value.shape != (rows, width):
            raise DataError("multi-valued field %r: expected (%d, %d) ids, got %s"
                            % (field_name, rows, width, value.shape))
        return value.astype(np.uint64)
    flat, offsets = split_multi(value, None)
    return pad_lists(np.asarray(flat, dtype=np.uint64), offsets, width)


def pad_lists(flat, offsets, width):
    """(rows, width) uint64 from ids ``flat`` where row r holds ``flat[offsets[r]:offsets[r + 1]]``; the slots a row
    does not fill hold PADDING_ID, ids past ``width`` are dropped."""
    rows = len(offsets) - 1
    out = np.full((rows, width), np.uint64(2**64 - 1), dtype=np.uint64)
    counts = np.minimum(np.diff(offsets), width)
    row_of = np.repeat(np.arange(rows), counts)
    slot = np.arange(row_of.size) - np.repeat(np.cumsum(counts) - counts, counts)
    source = np.repeat(offsets[:-1], counts) + slot
    out[row_of, slot] = np.asarray(flat, dtype=np.uint64)[source]
    return out

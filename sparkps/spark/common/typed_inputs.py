"""The named, typed inputs of a network fed from Spark: each input a fixed number of columns of one type, ids as
64-bit integers and numbers as float32, side by side in one numpy structured row (no packing: every value keeps
its own type and bits).

    inputs = TypedInputs([('ids', 26, 'ids'), ('dense', 13, 'float')])
    rows = inputs.rows({'ids': ids, 'dense': numeric})   # (n,) structured: rows['ids'] uint64 (n, 26)
    inputs.split(rows)                                     # {'ids': uint64 (n, 26), 'dense': float32 (n, 13)}

A training task keeps its partition as such rows (one local copy, one dtype) and hands each batch's inputs to the
network by name. It travels as a plain list (``to_list`` / ``from_list``: ``[name, columns, kind]`` parts, the
list format model metadata records as ``input_layout``). It is the one input layout of a CTR network: a fit's
tasks, its SparkModel and scoring all read it; the float rows of earlier versions (ids as float planes) are read by
``sparkps.ctr.packed`` only, for models and rows that recorded them. Nothing here blocks.
"""
import numpy as np

from sparkps.errors import ConfigError, DataError

KINDS = {"ids": np.uint64, "float": np.float32}


class TypedInputs:
    """The named inputs of one row (see the module docstring): parts ``(name, columns, kind)``, kind 'ids' (64-bit
    integer ids, kept as uint64 bit for bit) or 'float' (float32)."""

    def __init__(self, parts):
        self.parts = []
        for part in parts:
            name, columns, kind = part
            if kind not in KINDS or int(columns) < 1:
                raise ConfigError("input %r: kind must be one of %s and columns >= 1, got %r, %r"
                                  % (name, sorted(KINDS), kind, columns))
            self.parts.append((str(name), int(columns), str(kind)))
        names = [p[0] for p in self.parts]
        if not names or len(set(names)) != len(names):
            raise ConfigError("typed inputs need distinct names, got %s" % names)
        self.dtype = np.dtype([(name, KINDS[kind], (columns,)) for name, columns, kind in self.parts])

    @classmethod
    def from_list(cls, parts):
        """A TypedInputs of ``to_list``'s parts (None for None)."""
        return None if parts is None else cls(parts)

    @classmethod
    def of(cls, layout):
        """``layout`` as a TypedInputs: itself, or one of the same parts for a part list or for the PackedLayout
        of an earlier version (None for None)."""
        if layout is None or isinstance(layout, cls):
            return layout
        from sparkps.ctr.packed import PackedLayout
        return cls(layout.to_list() if isinstance(layout, PackedLayout) else layout)

    def to_list(self):
        return [list(p) for p in self.parts]

    @property
    def names(self):
        return [p[0] for p in self.parts]

    @property
    def columns(self):
        """Values in one row, over every input."""
        return sum(p[1] for p in self.parts)

    def kind(self, name):
        return {p[0]: p[2] for p in self.parts}[name]

    def shapes(self, batch_size):
        """{input name: shape} of a batch of ``batch_size`` rows."""
        return {name: (int(batch_size), columns) for name, columns, _ in self.parts}

    def split(self, rows):
        """{input name: array} of structured ``rows`` (any shape of rows): uint64 ids, float32 values, each
        (n, columns) and contiguous."""
        rows = np.asarray(rows)
        if rows.dtype != self.dtype:
            raise DataError("rows of inputs %s must have dtype %s, got %s" % (self.names, self.dtype, rows.dtype))
        flat = rows.reshape(-1)
        return {name: np.ascontiguousarray(flat[name]).reshape(len(flat), columns)
                for name, columns, _ in self.parts}

    def rows(self, inputs):
        """(n,) structured rows of the named ``inputs`` ({name: (n, columns) array}); int64 ids are kept bit for
        bit (as uint64). The ids are trusted: they were checked where they entered the process (a fit's Arrow
        columns, ``arrow_inputs``; the featurizer's hashing, ``ctr_columns``). DataError naming a missing input or
        one of the wrong shape."""
        first = np.asarray(inputs[self.parts[0][0]])
        out = np.empty(len(first), self.dtype)
        for name, columns, kind in self.parts:
            if name not in inputs:
                raise DataError("input %r is missing; inputs are %s" % (name, sorted(inputs)))
            value = np.asarray(inputs[name])
            if value.ndim == 1 and columns == 1:
                value = value.reshape(-1, 1)
            if value.shape != (len(out), columns):
                raise DataError("input %r must be (%d, %d), got %s" % (name, len(out), columns, value.shape))
            if kind == "ids" and value.dtype.kind == "i":
                value = value.astype(np.int64, copy=False).view(np.uint64)
            out[name] = value
        return out

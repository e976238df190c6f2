"""The float rows of earlier versions: a CTR network's named inputs packed into one float vector a row.

A CTR network's inputs are ``sparkps.spark.common.typed_inputs.TypedInputs`` (ids as 64-bit integers, never
packed). Earlier versions moved them as one float vector a row, and a CTR model still reads such a row where a float
vector reaches it (``SparkModel.predict_numpy``, an RDD, a Vector column; ``Predictor.predict``): this module reads
them. A ``PackedLayout`` lists the inputs side by side in the row, each ``(name, columns, kind)``:

* ``'ids'``: ``columns`` ids, each as ``ID_PLANES`` float columns of ``PLANE_BITS`` bits (low bits first), so
  every plane is a whole number below 2**22, exact in float32: ``id = p0 + p1 * 2**22 + p2 * 2**44``;
* ``'float'``: ``columns`` values as they are.

    layout = PackedLayout([('ids', 26, 'ids'), ('dense', 13, 'float')])
    row = layout.pack({'ids': ids, 'dense': numeric})     # (rows, 26 * 3 + 13) float32
    layout.split(row)                                      # {'ids': uint64 (rows, 26), 'dense': float32 (rows, 13)}

Its part list is the one ``TypedInputs`` and a model's metadata (``input_layout``) hold; ``pack`` writes rows of
the earlier format (for tests and benchmark baselines). Nothing here blocks.
"""
import numpy as np

from sparkps.errors import ConfigError, DataError

PLANE_BITS, ID_PLANES = 22, 3
KINDS = {"ids": ID_PLANES, "float": 1}


def ids_to_planes(ids):
    """(rows, k) 64-bit ids -> (rows, k * ID_PLANES) float32 planes, the planes of one id side by side."""
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise DataError("ids_to_planes: ids must be integers, got %s" % ids.dtype)
    bits = ids.astype(np.int64).view(np.uint64) if ids.dtype.kind == "i" else ids.astype(np.uint64)
    mask = np.uint64((1 << PLANE_BITS) - 1)
    planes = [((bits >> np.uint64(PLANE_BITS * p)) & mask) for p in range(ID_PLANES)]
    return np.stack(planes, axis=-1).reshape(ids.shape[:-1] + (ids.shape[-1] * ID_PLANES,)).astype(np.float32)


def planes_to_ids(planes):
    """The inverse of ``ids_to_planes``: (rows, k * ID_PLANES) float planes -> (rows, k) uint64."""
    planes = np.asarray(planes)
    whole = planes.astype(np.uint64).reshape(planes.shape[:-1] + (-1, ID_PLANES))
    ids = whole[..., 0].copy()
    for p in range(1, ID_PLANES):
        ids |= whole[..., p] << np.uint64(PLANE_BITS * p)
    return ids


class PackedLayout:
    """The named inputs of one float row of the earlier format (see the module docstring)."""

    def __init__(self, parts):
        self.parts = []
        for part in parts:
            name, columns, kind = part
            if kind not in KINDS or int(columns) < 1:
                raise ConfigError("packed input %r: kind must be one of %s and columns >= 1, got %r, %r"
                                  % (name, sorted(KINDS), kind, columns))
            self.parts.append((str(name), int(columns), str(kind)))
        names = [p[0] for p in self.parts]
        if len(set(names)) != len(names):
            raise ConfigError("packed inputs repeat a name: %s" % names)

    @classmethod
    def from_list(cls, parts):
        return None if parts is None else cls(parts)

    def to_list(self):
        return [list(p) for p in self.parts]

    @property
    def width(self):
        """Float columns of a packed row."""
        return sum(columns * KINDS[kind] for _, columns, kind in self.parts)

    def shapes(self, batch_size):
        """{input name: shape} of a batch of ``batch_size`` rows."""
        return {name: (int(batch_size), columns) for name, columns, _ in self.parts}

    def split(self, rows):
        """{input name: array} of packed ``rows`` (n, width): uint64 ids and float32 values."""
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != self.width:
            raise DataError("packed CTR rows must be (rows, %d) for inputs %s, got %s"
                            % (self.width, [p[0] for p in self.parts], rows.shape))
        out, start = {}, 0
        for name, columns, kind in self.parts:
            stop = start + columns * KINDS[kind]
            block = rows[:, start:stop]
            out[name] = planes_to_ids(block) if kind == "ids" else np.ascontiguousarray(block, dtype=np.float32)
            start = stop
        return out

    def pack(self, inputs):
        """(rows, width) float32 of the named ``inputs`` (the inverse of ``split``)."""
        blocks = []
        for name, columns, kind in self.parts:
            value = np.asarray(inputs[name])
            if value.ndim != 2 or value.shape[1] != columns:
                raise DataError("packed input %r must be (rows, %d), got %s" % (name, columns, value.shape))
            blocks.append(ids_to_planes(value) if kind == "ids" else value.astype(np.float32))
        return np.concatenate(blocks, axis=1)

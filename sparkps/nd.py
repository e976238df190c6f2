"""MXNet's binary NDArray files (``mx.nd.save``, ``prefix-%04d.params``), read and written without MXNet.

The layout, from MXNet 1.x's ``src/ndarray/ndarray.cc`` (``NDArray::Save``/``Load``), all little-endian::

    file    := uint64 0x112 | uint64 0 | uint64 count | array * count | uint64 n_names | name * n_names
    name    := uint64 length | bytes (UTF-8)
    array   := uint32 magic | ...
      magic 0xF993FAC9 (V2) or 0xF993FACA (V3, numpy shape semantics):
               int32 storage type (0 dense, 1 row_sparse, 2 csr; sparse also stores its storage shape)
               shape | (ndim == 0 in V2: an empty array, nothing follows) | context | int32 dtype | data
      magic 0xF993FAC8 (V1): shape | context | int32 dtype | data
      any other magic (files before V1): it is ndim, followed by ndim uint32 dims, then context, dtype, data
    shape   := int32 ndim | int64 dim * ndim           context := int32 device type | int32 device id
    dtype   := 0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8, 6 int64, 7 bool, 12 bfloat16

Only dense arrays of float16/32/64 are read (what model parameters are); sparse storage or another dtype is a
DataError naming the entry. Checkpoints name their arrays ``arg:NAME`` and ``aux:NAME``.

    >>> arrays = read_ndarray_file('model-0010.params')        # {'arg:fc1_weight': array, ...}
"""
import struct

import numpy as np

from sparkps.errors import DataError

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
DTYPES = {0: np.float32, 1: np.float64, 2: np.float16}
DTYPE_NAMES = {0: 'float32', 1: 'float64', 2: 'float16', 3: 'uint8', 4: 'int32', 5: 'int8', 6: 'int64',
               7: 'bool', 8: 'int16', 9: 'uint16', 10: 'uint32', 11: 'uint64', 12: 'bfloat16'}
STORAGE_NAMES = {0: 'default', 1: 'row_sparse', 2: 'csr'}
CODES = {np.dtype(t): code for code, t in DTYPES.items()}


def is_ndarray_file(head):
    """True when the first bytes ``head`` (at least 8) start an MXNet NDArray list file."""
    return len(head) >= 8 and struct.unpack('<Q', head[:8])[0] == LIST_MAGIC


class _Reader:
    """Sequential little-endian reads over the file's bytes; running out is a DataError naming the entry."""

    def __init__(self, data, source):
        self.data, self.pos, self.source, self.entry = memoryview(data), 0, source, 'header'

    def take(self, size):
        if self.pos + size > len(self.data):
            raise DataError(f"{self.source}: MXNet NDArray file ends inside {self.entry} "
                            f"(needs {size} bytes at offset {self.pos}, file has {len(self.data)})")
        chunk = self.data[self.pos:self.pos + size]
        self.pos += size
        return chunk

    def unpack(self, fmt):
        return struct.unpack('<' + fmt, self.take(struct.calcsize('<' + fmt)))

    def shape(self, dim_format='q'):
        ndim, = self.unpack('i')
        if ndim < 0:
            return None
        if ndim > 32:
            raise DataError(f"{self.source}: {self.entry} has an implausible number of dimensions {ndim}")
        return self.unpack(f'{ndim}{dim_format}')


def _read_array(reader):
    """One array; None for MXNet's empty (shape-less) arrays."""
    magic, = reader.unpack('I')
    if magic in (V2_MAGIC, V3_MAGIC):
        stype, = reader.unpack('i')
        if stype != 0:
            raise DataError(f"{reader.source}: {reader.entry} has {STORAGE_NAMES.get(stype, stype)} storage; "
                            f"only dense arrays can be read (cast it with .tostype('default') in MXNet)")
        shape = reader.shape()
        if shape is None or (magic == V2_MAGIC and len(shape) == 0):
            return None
    elif magic == V1_MAGIC:
        shape = reader.shape()
    else:
        if magic > 32:
            raise DataError(f"{reader.source}: {reader.entry} does not start with an NDArray magic number "
                            f"(got {magic:#x})")
        shape = reader.unpack(f'{magic}I')
    if any(d < 0 for d in shape):
        raise DataError(f"{reader.source}: {reader.entry} has an unknown dimension in shape {shape}")
    reader.unpack('ii')                                   # context: device type, device id
    code, = reader.unpack('i')
    if code not in DTYPES:
        raise DataError(f"{reader.source}: {reader.entry} has dtype {DTYPE_NAMES.get(code, code)}; only "
                        f"float16, float32 and float64 parameters can be read")
    dtype = np.dtype(DTYPES[code]).newbyteorder('<')
    count = int(np.prod(shape, dtype=np.int64))
    raw = reader.take(count * dtype.itemsize)
    return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder('='), copy=True).reshape(shape)


def parse_ndarray_file(data, source='<bytes>'):
    """Parse the bytes of an NDArray list file: a dict {name: array} when it names its arrays, else a list
    (as ``mx.nd.load``). Malformed, sparse or non-float content raises DataError naming ``source`` and the
    entry."""
    reader = _Reader(data, source)
    header, _reserved = reader.unpack('QQ')
    if header != LIST_MAGIC:
        raise DataError(f"{source} is not an MXNet NDArray file (first 8 bytes {header:#x}, expected 0x112)")
    count, = reader.unpack('Q')
    arrays = []
    for i in range(count):
        reader.entry = f'array {i}'
        arrays.append(_read_array(reader))
    reader.entry = 'the name list'
    n_names, = reader.unpack('Q')
    if n_names not in (0, count):
        raise DataError(f"{source}: {n_names} names for {count} arrays")
    names = []
    for i in range(n_names):
        reader.entry = f'name {i}'
        length, = reader.unpack('Q')
        names.append(bytes(reader.take(length)).decode('utf-8', errors='replace'))
    if reader.pos != len(reader.data):
        raise DataError(f"{source}: {len(reader.data) - reader.pos} unexpected bytes after the name list")
    if not names:
        return arrays
    _check_named(names, arrays, source)
    return dict(zip(names, arrays))


def _check_named(names, arrays, source):
    if len(set(names)) != len(names):
        raise DataError(f"{source}: an array name appears twice")
    for name, array in zip(names, arrays):
        if array is None:
            raise DataError(f"{source}: entry {name!r} is an empty NDArray (no shape)")


def read_ndarray_file(path):
    """Read an NDArray list file (``mx.nd.save`` output, e.g. ``prefix-0010.params``); see
    ``parse_ndarray_file``. Reads the whole file into memory."""
    with open(path, 'rb') as handle:
        data = handle.read()
    return parse_ndarray_file(data, source=str(path))


def _array_bytes(array):
    array = np.ascontiguousarray(array)
    code = CODES.get(array.dtype)
    if code is None:
        raise DataError(f"cannot write dtype {array.dtype} to an MXNet NDArray file (float16/32/64 only)")
    head = struct.pack('<Iii', V2_MAGIC, 0, array.ndim) + struct.pack(f'<{array.ndim}q', *array.shape)
    return head + struct.pack('<iii', 1, 0, code) + array.astype(array.dtype.newbyteorder('<')).tobytes()


def write_ndarray_file(path, arrays):
    """Write ``arrays`` ({name: array} or a list) in MXNet 1.x's layout (V2 dense arrays on cpu(0)), which
    ``mx.nd.load`` and ``read_ndarray_file`` read back."""
    named = isinstance(arrays, dict)
    values = list(arrays.values()) if named else list(arrays)
    parts = [struct.pack('<QQQ', LIST_MAGIC, 0, len(values))]
    parts.extend(_array_bytes(np.asarray(v)) for v in values)
    names = [str(n).encode('utf-8') for n in arrays] if named else []
    parts.append(struct.pack('<Q', len(names)))
    parts.extend(struct.pack('<Q', len(n)) + n for n in names)
    with open(path, 'wb') as handle:
        handle.write(b''.join(parts))

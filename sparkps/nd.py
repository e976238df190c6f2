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

``load`` and ``save`` are MXNet's ``mx.nd.load`` / ``mx.nd.save`` over numpy arrays: every dense dtype numpy has
(float16/32/64, uint8, int8/16/32/64, uint16/32/64, bool) is read and written; bfloat16 and sparse storage are a
DataError naming the file and the entry. Model parameters are read by ``read_ndarray_file``, which accepts
float16/32/64 only (what parameters are). Checkpoints name their arrays ``arg:NAME`` and ``aux:NAME``.

    >>> import sparkps.nd as nd
    >>> nd.save('arrays.nd', {'w': np.ones((2, 3), np.float32), 'ids': np.arange(4)})
    >>> nd.load('arrays.nd')['ids']                             # a list when saved from a list
    array([0, 1, 2, 3])
    >>> arrays = read_ndarray_file('model-0010.params')        # {'arg:fc1_weight': array, ...}

``save`` writes MXNet 1.x's V2 records, dense on cpu(0); a 0-d or zero-size array is written as a V3 record
(numpy shape semantics), as MXNet does in numpy mode, because a V2 record cannot hold its shape.
"""
import struct

import numpy as np

from sparkps.errors import DataError

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
DTYPE_NAMES = {0: 'float32', 1: 'float64', 2: 'float16', 3: 'uint8', 4: 'int32', 5: 'int8', 6: 'int64',
               7: 'bool', 8: 'int16', 9: 'uint16', 10: 'uint32', 11: 'uint64', 12: 'bfloat16'}
ALL_DTYPES = {code: np.dtype(name) for code, name in DTYPE_NAMES.items() if name != 'bfloat16'}
DTYPES = {code: ALL_DTYPES[code].type for code in (0, 1, 2)}         # what model parameters may hold
STORAGE_NAMES = {0: 'default', 1: 'row_sparse', 2: 'csr'}
CODES = {dtype: code for code, dtype in ALL_DTYPES.items()}


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


def _read_array(reader, dtypes):
    """One array; None for MXNet's empty (shape-less) arrays. ``dtypes``: the type codes accepted."""
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
    if code not in dtypes:
        accepted = ', '.join(ALL_DTYPES[c].name for c in sorted(dtypes))
        raise DataError(f"{reader.source}: {reader.entry} has dtype {DTYPE_NAMES.get(code, code)}; only "
                        f"{accepted} can be read" + (" as parameters" if dtypes == PARAM_CODES else ""))
    dtype = ALL_DTYPES[code].newbyteorder('<')
    count = int(np.prod(shape, dtype=np.int64))
    raw = reader.take(count * dtype.itemsize)
    return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder('='), copy=True).reshape(shape)


PARAM_CODES = frozenset(DTYPES)            # float16, float32, float64
ALL_CODES = frozenset(ALL_DTYPES)          # every dtype numpy has


def parse_ndarray_file(data, source='<bytes>', dtypes=PARAM_CODES, empty_ok=False):
    """Parse the bytes of an NDArray list file: a dict {name: array} when it names its arrays, else a list
    (as ``mx.nd.load``). Malformed or sparse content, or a dtype code not in ``dtypes`` (default: the float
    types of parameters), raises DataError naming ``source`` and the entry. MXNet's empty (shape-less) arrays
    read as None where ``empty_ok``, else a named one is a DataError."""
    reader = _Reader(data, source)
    header, _reserved = reader.unpack('QQ')
    if header != LIST_MAGIC:
        raise DataError(f"{source} is not an MXNet NDArray file (first 8 bytes {header:#x}, expected 0x112)")
    count, = reader.unpack('Q')
    arrays = []
    for i in range(count):
        reader.entry = f'array {i}'
        arrays.append(_read_array(reader, dtypes))
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
    _check_named(names, arrays, source, empty_ok)
    return dict(zip(names, arrays))


def _check_named(names, arrays, source, empty_ok=False):
    if len(set(names)) != len(names):
        raise DataError(f"{source}: an array name appears twice")
    for name, array in zip(names, arrays):
        if array is None and not empty_ok:
            raise DataError(f"{source}: entry {name!r} is an empty NDArray (no shape)")


def _read_bytes(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except OSError as exc:
        raise DataError(f"cannot read the NDArray file {path}: {exc.strerror or exc}") from None


def read_ndarray_file(path, dtypes=PARAM_CODES):
    """Read an NDArray list file (``mx.nd.save`` output, e.g. ``prefix-0010.params``); see
    ``parse_ndarray_file``. Reads the whole file into memory."""
    return parse_ndarray_file(_read_bytes(path), source=str(path), dtypes=dtypes)


def load(path):
    """MXNet's ``mx.nd.load``: the arrays of the NDArray file ``path`` as numpy arrays, a dict {name: array}
    when they were saved with names, else a list. An empty (shape-less) MXNet array reads as None.

    A missing or unreadable file, bytes that are not an NDArray file, sparse storage or a dtype numpy cannot
    hold (bfloat16) raise DataError naming the file."""
    return parse_ndarray_file(_read_bytes(path), source=str(path), dtypes=ALL_CODES, empty_ok=True)


def save(path, arrays):
    """MXNet's ``mx.nd.save``: write ``arrays`` (a dict {name: array}, a list of arrays, or one array) to the
    NDArray file ``path``, which ``load`` here and ``mx.nd.load`` in MXNet read back. Arrays are numpy (or
    anything ``numpy.asarray`` takes, CuPy arrays included); a dtype without an MXNet code (e.g. complex) or a
    name that is not a string is a DataError naming the file."""
    from sparkps.backend import asnumpy
    if isinstance(arrays, dict):
        bad = [name for name in arrays if not isinstance(name, str)]
        if bad:
            raise DataError(f"cannot save {path}: array names must be strings, got {bad[0]!r}")
        arrays = {name: np.asarray(asnumpy(value)) for name, value in arrays.items()}
    elif isinstance(arrays, (list, tuple)):
        arrays = [np.asarray(asnumpy(value)) for value in arrays]
    else:
        arrays = [np.asarray(asnumpy(arrays))]
    write_ndarray_file(path, arrays, dtypes=ALL_CODES)


def _array_bytes(array, dtypes, where):
    array = np.asarray(array, order='C')             # (np.ascontiguousarray would make a 0-d array 1-d)
    code = CODES.get(array.dtype)
    if code not in dtypes:
        accepted = ', '.join(ALL_DTYPES[c].name for c in sorted(dtypes))
        raise DataError(f"cannot write {where}: dtype {array.dtype} has no place in an MXNet NDArray file "
                        f"(dtypes: {accepted})")
    if array.ndim == 0 or array.size == 0:                # only numpy shape semantics (V3) hold these shapes
        head = struct.pack('<Iii', V3_MAGIC, 0, array.ndim)
    else:
        head = struct.pack('<Iii', V2_MAGIC, 0, array.ndim)
    head += struct.pack(f'<{array.ndim}q', *array.shape)
    return head + struct.pack('<iii', 1, 0, code) + array.astype(array.dtype.newbyteorder('<')).tobytes()


def write_ndarray_file(path, arrays, dtypes=PARAM_CODES):
    """Write ``arrays`` ({name: array} or a list) in MXNet 1.x's layout (V2 dense arrays on cpu(0)), which
    ``mx.nd.load`` and ``read_ndarray_file`` read back. A dtype code not in ``dtypes`` (default: the float types
    of parameters) is a DataError naming the file and the entry; nothing is written then."""
    named = isinstance(arrays, dict)
    items = list(arrays.items()) if named else [(f'array {i}', v) for i, v in enumerate(arrays)]
    parts = [struct.pack('<QQQ', LIST_MAGIC, 0, len(items))]
    parts.extend(_array_bytes(np.asarray(value), dtypes, f"{path}: {name if not named else repr(name)}")
                 for name, value in items)
    names = [str(n).encode('utf-8') for n, _ in items] if named else []
    parts.append(struct.pack('<Q', len(names)))
    parts.extend(struct.pack('<Q', len(n)) + n for n in names)
    with open(path, 'wb') as handle:
        handle.write(b''.join(parts))

"""Model files (``prefix-symbol.json`` and ``prefix-%04d.params``) and the params codec they share with Spark;
MXNet scripts reach these names as ``sparkps.model`` (:mod:`sparkps.model`, the facade of MXNet's ``mx.model``).

sparkps writes the params file as a numpy ``.npz`` archive with keys ``arg:NAME`` and ``aux:NAME``, read back
with ``allow_pickle=False``, so loading a model file never runs code from it. The same bytes are what a Spark
model broadcasts (:func:`params_to_bytes`, :func:`params_from_bytes`); any other key is a DataError on every
path. ``load_params`` also reads MXNet's binary params files (``mx.model.save_checkpoint`` / ``mx.nd.save``
output, see :mod:`sparkps.nd`): the format is chosen by the file's first bytes, so a model
trained in MXNet loads with ``FeedForward.load(prefix, epoch)`` as it is. A sparse embedding table (a
``sparkps.rows.values.RowSparse``) is stored as ``rsp:NAME:ids``, ``rsp:NAME:rows`` and ``rsp:NAME:shape`` (-1 for a
hashed table's unbounded row count) and read back as a RowSparse argument.

The ``.npz`` layout is versioned (:data:`PARAMS_FORMAT`), see docs/saved_models.md:

* format 1 (sparkps 0.1.0): ``arg:``, ``aux:`` and ``rsp:`` entries only;
* format 2: the same entries plus ``meta:format``, an int64 scalar holding 2.

A file without ``meta:format`` is format 1; a format newer than this code reads is a DataError naming the file
and both versions. MXNet's binary params files carry no sparkps version (they are MXNet's format).

>>> arg, aux = params_from_bytes(params_to_bytes({'w': np.ones(2)}, {'m': np.zeros(1)}))
>>> sorted(arg), sorted(aux)
(['w'], ['m'])
"""
import io
import zipfile
import zlib

import numpy as np

from sparkps.backend import asnumpy
from sparkps.errors import ConfigError, DataError
from sparkps.nd import is_ndarray_file, read_ndarray_file
from sparkps.rows.values import RowSparse

PARAMS_FORMAT = 2           # the .npz layout written; every earlier one is read (see _LAYOUTS)
FORMAT_KEY = 'meta:format'


def params_path(prefix, epoch):
    return '%s-%04d.params' % (prefix, int(epoch))


def write_params(handle, arg_params, aux_params=None):
    """Write ``arg:NAME`` / ``aux:NAME`` arrays (numpy or CuPy) as ``.npz`` into the binary ``handle``."""
    arrays = {}
    for name, value in (arg_params or {}).items():
        if isinstance(value, RowSparse):
            arrays.update({f'rsp:{name}:ids': value.ids, f'rsp:{name}:rows': asnumpy(value.rows),
                           f'rsp:{name}:shape': np.array([-1 if value.shape[0] is None else value.shape[0],
                                                          value.shape[1]], dtype=np.int64)})
        else:
            arrays[f'arg:{name}'] = asnumpy(value)
    arrays.update({f'aux:{name}': asnumpy(value) for name, value in (aux_params or {}).items()})
    arrays[FORMAT_KEY] = np.array(PARAMS_FORMAT, dtype=np.int64)
    np.savez(handle, **arrays)


def read_params(source, what):
    """``(arg_params, aux_params)`` from an ``.npz`` file or file object; ``what`` names it in errors.

    Anything but ``arg:NAME`` / ``aux:NAME`` entries, or bytes that are not such an archive, is a DataError.
    """
    try:
        archive = np.load(source, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"{what} is not a sparkps params file: {exc}") from None
    with archive:
        return _read_archive(what, archive)


def params_to_bytes(arg_params, aux_params=None):
    """The params as ``.npz`` bytes (what a Spark model broadcasts; numpy only, no pickle)."""
    buffer = io.BytesIO()
    write_params(buffer, arg_params, aux_params)
    return buffer.getvalue()


def params_from_bytes(data, what='model params'):
    """Inverse of :func:`params_to_bytes`: ``(arg_params, aux_params)`` dicts of numpy arrays."""
    return read_params(io.BytesIO(data), what)


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params):
    """Write the symbol JSON and the parameters of ``epoch`` (numpy or CuPy arrays)."""
    with open(f'{prefix}-symbol.json', 'w', encoding='utf-8') as handle:
        handle.write(symbol.tojson())
    with open(params_path(prefix, epoch), 'wb') as handle:
        write_params(handle, arg_params, aux_params)


def load_params(path, from_mxnet=False):
    """Read a params file into (arg_params, aux_params), sparkps's ``.npz`` or MXNet's binary format (chosen
    by content). Entries not named ``arg:NAME``/``aux:NAME``, or files of neither format -> DataError.
    ``from_mxnet=True`` accepts MXNet's format only: any other file is a DataError saying what it is."""
    try:
        with open(path, 'rb') as handle:
            head = handle.read(8)
    except OSError as exc:
        raise DataError(f"cannot read params file {path}: {exc}") from None
    if from_mxnet and not is_ndarray_file(head):
        raise DataError(f"{path} is not an MXNet params file ({_describe_head(head)}; mx.nd.save files start "
                        f"with the list magic 0x112)")
    if is_ndarray_file(head):
        entries = read_ndarray_file(path)
        if not isinstance(entries, dict):
            raise DataError(f"{path}: the MXNet NDArray file has no array names (expected arg:NAME, aux:NAME)")
        return _split_entries(path, entries.items())
    try:
        archive = np.load(path, allow_pickle=False)
    except zipfile.BadZipFile as exc:      # a zip archive's head, then too few bytes: a copy cut short
        raise DataError(f"params file {path} is damaged (truncated or overwritten): {exc}") from None
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is neither a sparkps (.npz) nor an MXNet params file: {exc}") from None
    with archive:
        return _read_archive(path, archive)


def params_format(what, entries):
    """The format version of a params archive's ``entries`` ({key: array}): 1 without ``meta:format``. A version
    that is not a positive integer, or newer than :data:`PARAMS_FORMAT`, is a DataError naming ``what``."""
    if FORMAT_KEY not in entries:
        return 1
    value = np.asarray(entries[FORMAT_KEY])
    if value.shape != () or value.dtype.kind not in 'iu' or int(value) < 1:
        raise DataError(f"{what}: {FORMAT_KEY} must be a positive integer scalar, got {value!r}")
    version = int(value)
    if version > PARAMS_FORMAT:
        raise DataError(f"{what} is a sparkps params file of format {version}; this version of sparkps reads "
                        f"formats 1 to {PARAMS_FORMAT} (a newer sparkps wrote it: upgrade sparkps to load it)")
    return version


def _read_archive(what, archive):
    """(arg_params, aux_params) of an open ``.npz`` archive, by the loader of its format version; DataError naming
    ``what`` when an entry cannot be read (a damaged or truncated archive)."""
    try:
        entries = {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise DataError(f"params file {what} is damaged (truncated or overwritten): {exc}") from None
    return _LAYOUTS[params_format(what, entries)](what, entries)


def _read_format_1(what, entries):
    """sparkps 0.1.0's layout: ``arg:``/``aux:``/``rsp:`` entries, nothing else."""
    return _split_entries(what, entries.items())


def _read_format_2(what, entries):
    """Format 1's entries plus ``meta:format`` (checked by :func:`params_format`); any other ``meta:`` entry
    is unknown to format 2."""
    return _split_entries(what, ((k, v) for k, v in entries.items() if k != FORMAT_KEY))


_LAYOUTS = {1: _read_format_1, 2: _read_format_2}


def _split_entries(what, entries):
    arg_params, aux_params, sparse = {}, {}, {}
    for key, value in entries:
        kind, _, name = key.partition(':')
        if kind == 'rsp' and name.count(':') >= 1:
            name, _, part = name.rpartition(':')
            sparse.setdefault(name, {})[part] = value
            continue
        if kind not in ('arg', 'aux') or not name:
            raise DataError(f"{what}: unexpected entry {key!r} (expected arg:NAME or aux:NAME)")
        (arg_params if kind == 'arg' else aux_params)[name] = value
    for name, parts in sparse.items():
        if sorted(parts) != ['ids', 'rows', 'shape']:
            raise DataError(f"{what}: sparse table {name!r} needs rsp:{name}:ids, :rows and :shape, "
                            f"got {sorted(parts)}")
        rows, dim = int(parts['shape'][0]), int(parts['shape'][1])
        arg_params[name] = RowSparse(parts['ids'], parts['rows'], (None if rows < 0 else rows, dim))
    return arg_params, aux_params


def _describe_head(head):
    """What the first bytes of a params file say it is, for error messages."""
    if not head:
        return "the file is empty"
    if head.startswith(b'PK'):
        return "it is a zip archive, as sparkps's own .npz params (load it without from_mxnet)"
    return "it starts with bytes %s" % head.hex()


def load_checkpoint(prefix, epoch, from_mxnet=False):
    """Return (symbol, arg_params, aux_params) saved by ``save_checkpoint`` or, the params format chosen by
    content, by MXNet's ``mx.model.save_checkpoint``. ``from_mxnet=True`` insists on MXNet's files: a params
    file in another format is a DataError naming it. A missing or unreadable symbol file is a DataError too."""
    from sparkps.symbol import load_json
    symbol_path = f'{prefix}-symbol.json'
    try:
        with open(symbol_path, encoding='utf-8') as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read the symbol file {symbol_path} (a checkpoint is PREFIX-symbol.json + "
                        f"PREFIX-%04d.params): {exc}") from None
    try:
        symbol = load_json(text)
    except ConfigError as exc:
        raise DataError(f"{symbol_path}: {exc}") from None
    arg_params, aux_params = load_params(params_path(prefix, epoch), from_mxnet=from_mxnet)
    return symbol, arg_params, aux_params

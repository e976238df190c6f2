"""Model files: ``prefix-symbol.json`` and ``prefix-%04d.params``.

The params file is a numpy ``.npz`` archive with keys ``arg:NAME`` and ``aux:NAME``, read back with
``allow_pickle=False``, so loading a model file never runs code from it.
"""
import numpy as np

from sparkps.errors import DataError
from sparkps.train.io.validate import host


def params_path(prefix, epoch):
    return '%s-%04d.params' % (prefix, int(epoch))


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params):
    """Write the symbol JSON and the parameters of ``epoch`` (numpy or CuPy arrays)."""
    with open(f'{prefix}-symbol.json', 'w', encoding='utf-8') as handle:
        handle.write(symbol.tojson())
    arrays = {f'arg:{name}': host(value) for name, value in arg_params.items()}
    arrays.update({f'aux:{name}': host(value) for name, value in (aux_params or {}).items()})
    with open(params_path(prefix, epoch), 'wb') as handle:
        np.savez(handle, **arrays)


def load_params(path):
    """Read a params file into (arg_params, aux_params); unknown key prefixes -> DataError."""
    arg_params, aux_params = {}, {}
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is not a sparkps params file: {exc}") from None
    with archive:
        for key in archive.files:
            kind, _, name = key.partition(':')
            if kind not in ('arg', 'aux') or not name:
                raise DataError(f"{path}: unexpected entry {key!r} (expected arg:NAME or aux:NAME)")
            (arg_params if kind == 'arg' else aux_params)[name] = archive[key]
    return arg_params, aux_params


def load_checkpoint(prefix, epoch):
    """Return (symbol, arg_params, aux_params) saved by ``save_checkpoint``."""
    from sparkps.symbol import load_json
    with open(f'{prefix}-symbol.json', encoding='utf-8') as handle:
        symbol = load_json(handle.read())
    arg_params, aux_params = load_params(params_path(prefix, epoch))
    return symbol, arg_params, aux_params

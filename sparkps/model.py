"""``sparkps.model``, MXNet's ``mx.model`` as scripts use it: ``FeedForward`` and the model files.

    from sparkps.model import FeedForward, save_checkpoint, load_checkpoint

``FeedForward`` lives in :mod:`sparkps.train.feedforward`, the model files and the params codec in
:mod:`sparkps.model_files`; this module only gathers MXNet's names (it sits above both, and nothing in sparkps
imports it).
"""
from sparkps.model_files import (
    FORMAT_KEY,
    PARAMS_FORMAT,
    load_checkpoint,
    load_params,
    params_format,
    params_from_bytes,
    params_path,
    params_to_bytes,
    read_params,
    save_checkpoint,
    write_params,
)
from sparkps.train.feedforward import FeedForward

__all__ = ['FORMAT_KEY', 'FeedForward', 'PARAMS_FORMAT', 'load_checkpoint', 'load_params', 'params_format',
           'params_from_bytes', 'params_path', 'params_to_bytes', 'read_params', 'save_checkpoint', 'write_params']

"""MXNet's binary NDArray / .params files, written here byte by byte from the layout of MXNet 1.x's
src/ndarray/ndarray.cc (NDArray::Save/Load, kMXAPINDArrayListMagic 0x112), read by sparkps.

``mxnet_mlp-symbol.json`` beside this file is an MLP as MXNet 1.9 writes it (``mx.model.save_checkpoint``).
"""
import os
import shutil
import struct

import numpy as np
import pytest

import sparkps as sp
from sparkps import nd as mxnet_params
from sparkps.errors import DataError
from sparkps.model import load_params

HERE = os.path.dirname(__file__)
V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
FLOAT32, FLOAT64, FLOAT16, INT32 = 0, 1, 2, 4


def shape_bytes(shape):
    return struct.pack('<i', len(shape)) + b''.join(struct.pack('<q', d) for d in shape)


def dense(array, magic=V2, code=FLOAT32, dev=(1, 0)):
    """One NDArray::Save record of a dense array."""
    head = struct.pack('<I', magic)
    if magic in (V2, V3):
        head += struct.pack('<i', 0)
    if magic in (V1, V2, V3):
        head += shape_bytes(array.shape)
    else:                                   # before V1: the magic is ndim, dims are uint32
        head = struct.pack('<I', array.ndim) + b''.join(struct.pack('<I', d) for d in array.shape)
    return head + struct.pack('<ii', *dev) + struct.pack('<i', code) + array.astype('<' + array.dtype.str[1:]).tobytes()


def row_sparse(values, indices, num_rows):
    """A row_sparse record: storage type 1, storage shape, shape, context, dtype, aux type+shape, data, aux."""
    shape = (num_rows,) + values.shape[1:]
    return (struct.pack('<Ii', V2, 1) + shape_bytes(values.shape) + shape_bytes(shape) + struct.pack('<iii', 1, 0, 0)
            + struct.pack('<i', 6) + shape_bytes(indices.shape) + values.astype('<f4').tobytes()
            + indices.astype('<i8').tobytes())


def ndarray_file(records, names=()):
    body = struct.pack('<QQQ', 0x112, 0, len(records)) + b''.join(records)
    body += struct.pack('<Q', len(names)) + b''.join(struct.pack('<Q', len(n)) + n.encode() for n in names)
    return body


def write(path, data):
    with open(path, 'wb') as handle:
        handle.write(data)
    return str(path)


def test_named_float32_arrays_split_into_arg_and_aux(tmp_path):
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=4).astype(np.float32)
    mean = np.ones(4, np.float32)
    path = write(tmp_path / 'm-0001.params', ndarray_file([dense(w), dense(b), dense(mean)],
                                                        ['arg:fc_weight', 'arg:fc_bias', 'aux:bn_moving_mean']))
    arg, aux = load_params(path)
    assert sorted(arg) == ['fc_bias', 'fc_weight'] and list(aux) == ['bn_moving_mean']
    np.testing.assert_array_equal(arg['fc_weight'], w)
    assert arg['fc_weight'].dtype == np.float32 and arg['fc_weight'].flags.writeable
    np.testing.assert_array_equal(sp.io.load_params(path)[0]['fc_bias'], b)


def test_every_record_version_and_float_dtype(tmp_path):
    a64 = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
    a16 = np.linspace(-1, 1, 5).astype(np.float16)
    a32 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    records = [dense(a64, V1, FLOAT64), dense(a16, V2, FLOAT16), dense(a32, 3), dense(a32[0], V3, dev=(2, 1))]
    got = mxnet_params.read_ndarray_file(write(tmp_path / 'list.nd', ndarray_file(records)))
    assert isinstance(got, list) and len(got) == 4
    for value, expected in zip(got, [a64, a16, a32, a32[0]]):
        assert value.dtype == expected.dtype
        np.testing.assert_array_equal(value, expected)


def test_sparse_entry_is_refused_naming_it(tmp_path):
    records = [dense(np.zeros(2, np.float32)), row_sparse(np.ones((2, 3)), np.array([0, 4]), 5)]
    path = write(tmp_path / 'e.params', ndarray_file(records, ['arg:a', 'arg:embed_weight']))
    with pytest.raises(DataError, match='array 1 has row_sparse storage'):
        load_params(path)


def test_integer_dtype_is_refused_naming_it(tmp_path):
    path = write(tmp_path / 'i.params', ndarray_file([dense(np.arange(3, dtype=np.int32), code=INT32)], ['arg:x']))
    with pytest.raises(DataError, match='array 0 has dtype int32'):
        load_params(path)


def test_truncated_file_and_foreign_bytes(tmp_path):
    data = ndarray_file([dense(np.ones((3, 3), np.float32))], ['arg:w'])
    with pytest.raises(DataError, match='ends inside array 0'):
        load_params(write(tmp_path / 't.params', data[:60]))
    with pytest.raises(DataError, match='neither a sparkps'):
        load_params(write(tmp_path / 'x.params', b'not a model at all'))
    with pytest.raises(DataError, match="unexpected entry 'w'"):
        load_params(write(tmp_path / 'n.params', ndarray_file([dense(np.ones(2, np.float32))], ['w'])))


def test_writer_output_reads_back_byte_identical_to_the_layout(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    path = tmp_path / 'w.params'
    mxnet_params.write_ndarray_file(path, {'arg:w': w})
    assert path.read_bytes() == ndarray_file([dense(w)], ['arg:w'])


def mxnet_mlp_files(tmp_path, epoch=10):
    """An MXNet 1.9 checkpoint (symbol JSON + binary params) and the numpy forward pass MXNet computes."""
    rng = np.random.default_rng(7)
    params = {'fc1_weight': rng.normal(size=(8, 5)), 'fc1_bias': rng.normal(size=8),
              'fc2_weight': rng.normal(size=(3, 8)), 'fc2_bias': rng.normal(size=3)}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    prefix = str(tmp_path / 'mlp')
    shutil.copy(os.path.join(HERE, 'mxnet_mlp-symbol.json'), prefix + '-symbol.json')
    write(f'{prefix}-{epoch:04d}.params', ndarray_file([dense(v) for v in params.values()],
                                                           ['arg:' + k for k in params]))

    def forward(X):
        hidden = np.maximum(X @ params['fc1_weight'].T + params['fc1_bias'], 0)
        logits = hidden @ params['fc2_weight'].T + params['fc2_bias']
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return prefix, forward


def test_feedforward_load_of_an_mxnet_checkpoint_predicts_what_mxnet_computes(tmp_path):
    prefix, forward = mxnet_mlp_files(tmp_path)
    X = np.random.default_rng(1).normal(size=(20, 5)).astype(np.float32)
    model = sp.FeedForward.load(prefix, 10)
    np.testing.assert_allclose(model.predict(X), forward(X), rtol=1e-5, atol=1e-6)
    assert model.begin_epoch == 10


def test_spark_model_loads_an_mxnet_checkpoint(tmp_path):
    from sparkps.spark.model.spark_model import SparkModel
    prefix, forward = mxnet_mlp_files(tmp_path, epoch=3)
    model = SparkModel.load(prefix, epoch=3, input_shape=(5,))
    X = np.random.default_rng(2).normal(size=(4, 5)).astype(np.float32)
    np.testing.assert_allclose(model.to_feedforward().predict(X), forward(X), rtol=1e-5, atol=1e-6)

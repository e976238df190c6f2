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


# ---- sparkps.nd.load / save: MXNet's mx.nd.load / mx.nd.save over numpy arrays -------------------------------

CODES = {'float32': 0, 'float64': 1, 'float16': 2, 'uint8': 3, 'int32': 4, 'int8': 5, 'int64': 6, 'bool': 7,
         'int16': 8, 'uint16': 9, 'uint32': 10, 'uint64': 11}


def sample(dtype, shape=(2, 3)):
    values = np.arange(int(np.prod(shape))).reshape(shape) - 2
    return (values % 2 == 0) if dtype == 'bool' else values.astype(dtype)


def test_nd_save_and_load_round_trip_a_list_and_a_dict(tmp_path):
    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=(4, 3)).astype(np.float32), np.arange(5, dtype=np.int64), rng.normal(size=2),
              rng.normal(size=(3, 4)).T]                # not C-contiguous
    sp.nd.save(tmp_path / 'list.nd', arrays)
    got = sp.nd.load(tmp_path / 'list.nd')
    assert isinstance(got, list) and len(got) == 4
    for value, want in zip(got, arrays):
        assert value.dtype == want.dtype and value.shape == want.shape
        np.testing.assert_array_equal(value, want)

    named = {'arg:fc_weight': arrays[0], 'ids': arrays[1], 'naïve name': arrays[2]}
    sp.nd.save(str(tmp_path / 'dict.nd'), named)
    got = sp.nd.load(str(tmp_path / 'dict.nd'))
    assert isinstance(got, dict) and list(got) == list(named)
    for name, want in named.items():
        np.testing.assert_array_equal(got[name], want)
        assert got[name].dtype == want.dtype and got[name].flags.writeable


def test_nd_save_of_one_array_loads_as_a_list_of_one(tmp_path):
    sp.nd.save(tmp_path / 'one.nd', np.eye(3, dtype=np.float16))
    (got,) = sp.nd.load(tmp_path / 'one.nd')
    np.testing.assert_array_equal(got, np.eye(3, dtype=np.float16))


@pytest.mark.parametrize('dtype', sorted(CODES))
def test_nd_round_trips_every_dtype_with_its_mxnet_type_code(tmp_path, dtype):
    array = sample(dtype)
    sp.nd.save(tmp_path / 'a.nd', {'x': array})
    data = (tmp_path / 'a.nd').read_bytes()
    assert data == ndarray_file([dense(array, code=CODES[dtype], dev=(1, 0))], ['x'])
    got = sp.nd.load(tmp_path / 'a.nd')['x']
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, array)


def test_nd_save_writes_the_documented_bytes(tmp_path):
    """The layout of ndarray.cc, spelled out: list magic, reserved, count, one V2 record, names."""
    w = np.array([[1.5, -2.0]], np.float32)
    sp.nd.save(tmp_path / 'w.nd', {'w': w})
    expected = (struct.pack('<QQQ', 0x112, 0, 1)
                + struct.pack('<I', 0xF993FAC9) + struct.pack('<i', 0)       # V2 magic, dense storage
                + struct.pack('<iqq', 2, 1, 2)                                # ndim, dims (int64)
                + struct.pack('<ii', 1, 0) + struct.pack('<i', 0)            # cpu(0), float32
                + struct.pack('<ff', 1.5, -2.0)
                + struct.pack('<Q', 1) + struct.pack('<Q', 1) + b'w')
    assert (tmp_path / 'w.nd').read_bytes() == expected
    sp.nd.save(tmp_path / 'l.nd', [w])
    assert (tmp_path / 'l.nd').read_bytes() == expected[:-len(struct.pack('<QQ', 1, 1) + b'w')] + struct.pack('<Q', 0)


def test_nd_scalars_and_empty_arrays_use_numpy_shape_records(tmp_path):
    scalar, empty = np.array(3.5, np.float64), np.zeros((0, 4), np.float32)
    sp.nd.save(tmp_path / 's.nd', [scalar, empty])
    assert (tmp_path / 's.nd').read_bytes() == ndarray_file([dense(scalar, V3, FLOAT64), dense(empty, V3)])
    got = sp.nd.load(tmp_path / 's.nd')
    assert got[0].shape == () and got[0] == 3.5 and got[1].shape == (0, 4)


def test_nd_load_reads_files_written_by_mxnet_in_every_record_version(tmp_path):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.arange(4, dtype=np.uint8)
    empty_v2 = struct.pack('<Iii', V2, 0, 0)                       # MXNet's shape-less NDArray
    path = write(tmp_path / 'm.nd', ndarray_file([dense(a, V1, INT32), dense(b, 1, 3), empty_v2], ['a', 'b', 'c']))
    got = sp.nd.load(path)
    np.testing.assert_array_equal(got['a'], a)
    np.testing.assert_array_equal(got['b'], b)
    assert got['c'] is None


def test_nd_errors_name_the_file(tmp_path):
    with pytest.raises(DataError, match=r"cannot read the NDArray file .*missing\.nd"):
        sp.nd.load(tmp_path / 'missing.nd')
    with pytest.raises(DataError, match=r"npz\.nd is not an MXNet NDArray file"):
        np.savez(tmp_path / 'npz', w=np.ones(2))
        os.rename(tmp_path / 'npz.npz', tmp_path / 'npz.nd')
        sp.nd.load(tmp_path / 'npz.nd')
    bfloat16 = dense(np.zeros(2, np.uint16), code=12)
    with pytest.raises(DataError, match=r"bf\.nd: array 0 has dtype bfloat16; only float32, .* can be read"):
        sp.nd.load(write(tmp_path / 'bf.nd', ndarray_file([bfloat16])))
    with pytest.raises(DataError, match=r"sparse\.nd: array 0 has row_sparse storage"):
        sp.nd.load(write(tmp_path / 'sparse.nd', ndarray_file([row_sparse(np.ones((2, 3)), np.array([0, 4]), 5)])))
    with pytest.raises(DataError, match=r"c\.nd: 'z': dtype complex128 has no place in an MXNet NDArray file"):
        sp.nd.save(tmp_path / 'c.nd', {'w': np.ones(2), 'z': np.ones(2, complex)})
    assert not (tmp_path / 'c.nd').exists()
    with pytest.raises(DataError, match=r"k\.nd: array names must be strings, got 3"):
        sp.nd.save(tmp_path / 'k.nd', {3: np.ones(2)})


def test_nd_files_of_float_arrays_are_params_files(tmp_path):
    """What ``nd.save`` writes with arg:/aux: names is an MXNet checkpoint's params file."""
    w, mean = np.ones((2, 2), np.float32), np.zeros(2, np.float32)
    sp.nd.save(tmp_path / 'm-0001.params', {'arg:w': w, 'aux:mean': mean})
    arg, aux = load_params(str(tmp_path / 'm-0001.params'), from_mxnet=True)
    np.testing.assert_array_equal(arg['w'], w)
    np.testing.assert_array_equal(aux['mean'], mean)

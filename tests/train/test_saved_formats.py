"""Saved formats outside Spark: FeedForward checkpoints and parameter-server checkpoints written by release 0.1.0
(``tests/data/release_0_1``, see its README) load with this code and compute what 0.1.0 computed; the files
written now carry a format version, and a version newer than this code is a DataError naming the file."""
import json
import os
import shutil

import numpy as np
import pytest

import sparkps as sp
from sparkps.comm import manifest
from sparkps.errors import DataError
from sparkps.model import FORMAT_KEY, PARAMS_FORMAT, load_checkpoint, load_params, params_format, params_path

RELEASE_0_1 = os.path.join(os.path.dirname(os.path.dirname(__file__)), 'data', 'release_0_1')


@pytest.fixture(scope='module')
def expected():
    with open(os.path.join(RELEASE_0_1, 'expected.json'), encoding='utf-8') as handle:
        recorded = json.load(handle)
    assert recorded['sparkps_version'] == '0.1.0'
    return recorded


def test_a_feedforward_checkpoint_of_0_1_predicts_as_0_1_did(expected):
    saved = expected['feedforward']
    prefix = os.path.join(RELEASE_0_1, saved['prefix'])
    with np.load(params_path(prefix, saved['epoch']), allow_pickle=False) as archive:
        assert FORMAT_KEY not in archive.files and params_format(prefix, dict(archive)) == 1
    model = sp.FeedForward.load(prefix, saved['epoch'])
    outputs = model.predict(np.array(saved['inputs'], np.float32))
    np.testing.assert_allclose(outputs, np.array(saved['outputs']), rtol=1e-5, atol=1e-7)
    symbol, arg_params, aux_params = load_checkpoint(prefix, saved['epoch'])
    assert sorted(arg_params) == ['fc1_bias', 'fc1_weight', 'fc2_bias', 'fc2_weight'] and aux_params == {}
    assert symbol.list_outputs() == ['softmax_output']


def test_a_0_1_checkpoint_saved_again_is_format_2_with_the_same_weights(expected, tmp_path):
    saved = expected['feedforward']
    model = sp.FeedForward.load(os.path.join(RELEASE_0_1, saved['prefix']), saved['epoch'])
    prefix = str(tmp_path / 'again')
    model.save(prefix, saved['epoch'])
    with np.load(params_path(prefix, saved['epoch']), allow_pickle=False) as archive:
        assert int(archive[FORMAT_KEY]) == PARAMS_FORMAT == 2
    arg_params, aux_params = load_params(params_path(prefix, saved['epoch']))
    for name, value in model.arg_params.items():
        np.testing.assert_array_equal(arg_params[name], value)
    np.testing.assert_allclose(sp.FeedForward.load(prefix, saved['epoch']).predict(np.array(saved['inputs'])),
                               np.array(saved['outputs']), rtol=1e-5, atol=1e-7)


def test_a_params_file_of_a_newer_format_names_the_file_and_both_versions(tmp_path):
    path = str(tmp_path / 'm-0001.params')
    with open(path, 'wb') as handle:
        np.savez(handle, **{'arg:w': np.ones(2, np.float32), FORMAT_KEY: np.array(3, np.int64)})
    with pytest.raises(DataError, match=r"m-0001\.params is a sparkps params file of format 3; .* formats 1 to 2"):
        load_params(path)
    with open(path, 'wb') as handle:
        np.savez(handle, **{'arg:w': np.ones(2, np.float32), FORMAT_KEY: np.array([2.5])})
    with pytest.raises(DataError, match="m-0001.params: meta:format must be a positive integer"):
        load_params(path)
    with open(path, 'wb') as handle:
        np.savez(handle, **{'arg:w': np.ones(2, np.float32), FORMAT_KEY: np.array(2), 'meta:other': np.ones(1)})
    with pytest.raises(DataError, match="unexpected entry 'meta:other'"):
        load_params(path)


def test_the_broadcast_bytes_carry_the_format_too():
    from sparkps.model import params_from_bytes, params_to_bytes
    data = params_to_bytes({'w': np.arange(3, dtype=np.float32)}, {'m': np.zeros(1, np.float32)})
    arg, aux = params_from_bytes(data)
    assert list(arg) == ['w'] and list(aux) == ['m']
    import io
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        assert int(archive[FORMAT_KEY]) == 2


# ---- parameter-server checkpoints --------------------------------------------------------------------------

def test_the_0_1_kvstore_manifest_is_version_1_and_a_newer_one_is_refused(tmp_path):
    saved = manifest.read_manifest(os.path.join(RELEASE_0_1, 'kvstore_checkpoint'))   # read in today's layout
    assert saved['format'] == 'sparkps-kvstore' and saved['version'] == 2 == manifest.VERSION
    assert manifest.verify_checkpoint(os.path.join(RELEASE_0_1, 'kvstore_checkpoint')) == []   # no digests
    assert manifest.key_shapes(saved) == {0: (6, 5), 1: (5,), 2: (5, 3), 3: (3,)}

    folder = tmp_path / 'ckpt'
    shutil.copytree(os.path.join(RELEASE_0_1, 'kvstore_checkpoint'), folder)
    with open(folder / manifest.MANIFEST, encoding='utf-8') as handle:
        text = json.load(handle)
    del text['version']                                     # no version: version 1
    manifest.save_manifest(str(folder), text)
    assert manifest.read_manifest(str(folder))['version'] == 2
    manifest.save_manifest(str(folder), dict(text, version=3))
    with pytest.raises(DataError, match=r"ckpt/manifest\.json is a kvstore checkpoint of format version 3, .*"
                                        r"reads versions 1 to 2"):
        manifest.read_manifest(str(folder))
    manifest.save_manifest(str(folder), dict(text, format='something-else'))
    with pytest.raises(DataError, match="is not a sparkps kvstore checkpoint"):
        manifest.read_manifest(str(folder))


def test_a_kvstore_checkpoint_of_0_1_resumes_on_three_servers_as_0_1_continued(expected, tmp_path, ps_cluster):
    saved = expected['kvstore_checkpoint']
    shapes = {int(k): tuple(s) for k, s in saved['shapes'].items()}
    keys = sorted(shapes)
    folder = tmp_path / 'ckpt'
    shutil.copytree(os.path.join(RELEASE_0_1, saved['path']), folder)
    grads = [np.array(saved['gradient'][str(k)], np.float32).reshape(shapes[k]) for k in keys]

    def load_and_step(kv):
        kv.load_checkpoint(folder)
        pulled = {k: np.zeros(shapes[k], np.float32) for k in keys}
        kv.pull(keys, out=[pulled[k] for k in keys])
        after = {k: np.zeros(shapes[k], np.float32) for k in keys}
        kv.pushpull(keys, grads, out=[after[k] for k in keys])
        kv.end_training()
        return pulled, after

    with ps_cluster(num_servers=3, num_workers=1) as cluster:
        ((pulled, after),) = cluster.run_workers(load_and_step)
    for k in keys:
        np.testing.assert_array_equal(pulled[k].ravel(), np.array(saved['saved'][str(k)], np.float32))
        np.testing.assert_allclose(after[k].ravel(), np.array(saved['after_step'][str(k)], np.float32),
                                   rtol=1e-6, atol=1e-7)

"""The explicit MXNet path: ``SparkModel.load(prefix, epoch, from_mxnet=True)``, ``SparkModel.from_mxnet``,
``FeedForward.load(..., from_mxnet=True)`` and ``sparkps predict --from-mxnet PREFIX --epoch N``.

Checkpoints are written by the test in MXNet's layout: the symbol JSON of ``tests/train/mxnet_mlp-symbol.json``
(as ``mx.model.save_checkpoint`` writes it) and the params through ``sparkps.nd``'s writer, whose
bytes ``tests/train/test_mxnet_params.py`` checks against the layout of MXNet's ``src/ndarray/ndarray.cc``.
Expected outputs are the MLP computed with numpy.
"""
import csv
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import sparkps as sp
from sparkps.cli import main
from sparkps.errors import ConfigError, DataError
from sparkps.nd import write_ndarray_file

SYMBOL = os.path.join(os.path.dirname(__file__), os.pardir, 'train', 'mxnet_mlp-symbol.json')


def mxnet_checkpoint(tmp_path, epoch=4, name='mlp'):
    """PREFIX-symbol.json + PREFIX-%04d.params in MXNet's formats; returns (prefix, numpy forward)."""
    rng = np.random.default_rng(11)
    params = {'fc1_weight': rng.normal(size=(8, 5)), 'fc1_bias': rng.normal(size=8),
              'fc2_weight': rng.normal(size=(3, 8)), 'fc2_bias': rng.normal(size=3)}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    prefix = str(tmp_path / name)
    shutil.copy(SYMBOL, prefix + '-symbol.json')
    write_ndarray_file('%s-%04d.params' % (prefix, epoch), {'arg:' + k: v for k, v in params.items()})

    def forward(X):
        hidden = np.maximum(X @ params['fc1_weight'].T + params['fc1_bias'], 0)
        logits = hidden @ params['fc2_weight'].T + params['fc2_bias']
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return prefix, forward


def sparkps_checkpoint(tmp_path, epoch=4):
    """The same network saved by sparkps (its .npz params)."""
    prefix, _ = mxnet_checkpoint(tmp_path, epoch, name='theirs')
    model = sp.FeedForward.load(prefix, epoch)
    ours = str(tmp_path / 'ours')
    model.save(ours, epoch)
    return ours


def test_spark_model_from_mxnet_predicts_what_mxnet_computes(tmp_path):
    from sparkps.spark.model.spark_model import SparkModel
    prefix, forward = mxnet_checkpoint(tmp_path)
    X = np.random.default_rng(3).normal(size=(6, 5)).astype(np.float32)
    for model in (SparkModel.from_mxnet(prefix, 4, input_shape=(5,)),
                  SparkModel.load(prefix, epoch=4, from_mxnet=True, input_shape=(5,))):
        assert model.epoch == 4
        np.testing.assert_allclose(model.predict_numpy(X), forward(X), rtol=1e-5, atol=1e-6)


def test_from_mxnet_refuses_sparkps_params_naming_the_file(tmp_path):
    from sparkps.spark.model.spark_model import SparkModel
    ours = sparkps_checkpoint(tmp_path)
    assert SparkModel.load(ours, epoch=4, input_shape=(5,)).epoch == 4        # detection still reads it
    with pytest.raises(DataError, match=r"ours-0004.params is not an MXNet params file .*zip archive"):
        SparkModel.from_mxnet(ours, 4, input_shape=(5,))
    with pytest.raises(DataError, match="ours-0004.params is not an MXNet params file"):
        sp.FeedForward.load(ours, 4, from_mxnet=True)


def test_from_mxnet_names_a_missing_symbol_or_params_file(tmp_path):
    from sparkps.spark.model.spark_model import SparkModel
    prefix, _ = mxnet_checkpoint(tmp_path)
    with pytest.raises(DataError, match=r"cannot read params file .*mlp-0009.params"):
        SparkModel.from_mxnet(prefix, 9, input_shape=(5,))
    os.remove(prefix + '-symbol.json')
    with pytest.raises(DataError, match=r"cannot read the symbol file .*mlp-symbol.json"):
        SparkModel.from_mxnet(prefix, 4, input_shape=(5,))


def test_from_mxnet_refuses_a_symbol_file_that_is_not_one(tmp_path):
    prefix, _ = mxnet_checkpoint(tmp_path)
    with open(prefix + '-symbol.json', 'w', encoding='utf-8') as handle:
        handle.write('{"not": "a graph"}')
    with pytest.raises(DataError, match=r"mlp-symbol.json: not a symbol JSON document"):
        sp.FeedForward.load(prefix, 4, from_mxnet=True)


def test_spark_model_load_from_mxnet_needs_the_epoch(tmp_path):
    from sparkps.spark.model.spark_model import SparkModel
    with pytest.raises(ConfigError, match="needs the epoch"):
        SparkModel.load(str(tmp_path / 'mlp'), from_mxnet=True, input_shape=(5,))


def write_csv(path, X, y):
    with open(path, 'w', encoding='utf-8') as handle:
        for label, row in zip(y, X):
            handle.write(','.join(['%d' % label] + ['%.9g' % v for v in row]) + '\n')
    return str(path)


def read_predictions(text):
    rows = list(csv.reader(text.splitlines()))
    assert rows[0] == ['label', 'prediction', 'output_0', 'output_1', 'output_2']
    body = rows[1:]
    return ([float(r[0]) for r in body], [int(r[1]) for r in body],
            np.array([[float(v) for v in r[2:]] for r in body]))


def test_cli_predict_from_mxnet_writes_mxnet_s_outputs(tmp_path):
    prefix, forward = mxnet_checkpoint(tmp_path)
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(7, 5)).astype(np.float32), rng.integers(0, 3, size=7)
    data = write_csv(tmp_path / 'rows.csv', X, y)
    out = tmp_path / 'pred.csv'
    result = CliRunner().invoke(main, ['predict', '--from-mxnet', prefix, '--epoch', '4', '--data', data,
                                       '--batch-size', '3', '-o', str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    labels, predictions, outputs = read_predictions(out.read_text())
    expected = forward(X)
    assert labels == [float(v) for v in y]
    np.testing.assert_allclose(outputs, expected, rtol=1e-5, atol=1e-6)
    assert predictions == list(expected.argmax(axis=1))


def test_cli_predict_reshapes_rows_with_input_shape_and_checks_its_size(tmp_path):
    prefix, forward = mxnet_checkpoint(tmp_path)
    X = np.random.default_rng(6).normal(size=(2, 5)).astype(np.float32)
    data = write_csv(tmp_path / 'rows.csv', X, [0, 1])
    ok = CliRunner().invoke(main, ['predict', '--from-mxnet', prefix, '--epoch', '4', '--data', data,
                                   '--input-shape', '5'], catch_exceptions=False)
    assert ok.exit_code == 0, ok.output
    np.testing.assert_allclose(read_predictions(ok.output)[2], forward(X), rtol=1e-5, atol=1e-6)
    bad = CliRunner().invoke(main, ['predict', '--from-mxnet', prefix, '--epoch', '4', '--data', data,
                                    '--input-shape', '2,3'], catch_exceptions=False)
    assert bad.exit_code == 2 and "--input-shape 2,3 holds 6 values but the rows have 5 features" in bad.output


def test_cli_predict_from_mxnet_refuses_sparkps_files_in_one_line(tmp_path):
    ours = sparkps_checkpoint(tmp_path)
    data = write_csv(tmp_path / 'rows.csv', np.zeros((1, 5)), [0])
    result = CliRunner().invoke(main, ['predict', '--from-mxnet', ours, '--epoch', '4', '--data', data],
                                catch_exceptions=False)
    assert result.exit_code == 2                                  # bad input: exit 2 (docs/cli.md)
    assert result.output.strip().count('\n') == 0
    assert "error: " in result.output and "ours-0004.params is not an MXNet params file" in result.output
    detected = CliRunner().invoke(main, ['predict', '--model', ours, '--epoch', '4', '--data', data],
                                  catch_exceptions=False)
    assert detected.exit_code == 0 and len(detected.output.splitlines()) == 2


def test_cli_predict_needs_exactly_one_model(tmp_path):
    data = write_csv(tmp_path / 'rows.csv', np.zeros((1, 5)), [0])
    neither = CliRunner().invoke(main, ['predict', '--epoch', '1', '--data', data], catch_exceptions=False)
    assert neither.exit_code == 2 and "exactly one of --model PREFIX and --from-mxnet PREFIX" in neither.output

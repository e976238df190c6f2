"""One params codec: model files and the bytes a Spark model broadcasts agree, and refuse foreign entries."""
import io

import numpy as np
import pytest

from sparkps import model_files as model_file
from sparkps.errors import DataError
from sparkps.spark.model import predictor


def test_model_file_and_spark_bytes_are_one_codec(tmp_path):
    arg, aux = {'fc1_weight': np.arange(6, dtype=np.float32).reshape(2, 3)}, {'bn_moving_var': np.ones(3)}
    data = predictor.params_to_bytes(arg, aux)
    (tmp_path / 'm-0001.params').write_bytes(data)
    from_file = model_file.load_params(str(tmp_path / 'm-0001.params'))
    from_bytes = predictor.params_from_bytes(data)
    for got in (from_file, from_bytes):
        np.testing.assert_array_equal(got[0]['fc1_weight'], arg['fc1_weight'])
        np.testing.assert_array_equal(got[1]['bn_moving_var'], aux['bn_moving_var'])


def test_an_unknown_prefix_is_a_data_error_on_both_paths(tmp_path):
    buffer = io.BytesIO()
    np.savez(buffer, **{'arg:w': np.ones(2), 'opt:w': np.ones(2)})
    (tmp_path / 'bad.params').write_bytes(buffer.getvalue())
    with pytest.raises(DataError, match="unexpected entry 'opt:w'"):
        model_file.load_params(str(tmp_path / 'bad.params'))
    with pytest.raises(DataError, match="model params: unexpected entry 'opt:w'"):
        predictor.params_from_bytes(buffer.getvalue())
    with pytest.raises(DataError, match='not a sparkps params file'):
        predictor.params_from_bytes(b'not an archive')

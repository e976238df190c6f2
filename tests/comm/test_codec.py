"""Gradient codecs: 2-bit quantisation with error feedback in MXNet's packing, fp16, and bad headers."""
import numpy as np
import pytest

from sparkps.comm.codec import create_codec, decode_payload
from sparkps.errors import ConfigError, MalformedMessage


def roundtrip(codec, values, slot=0):
    arrays, header = codec.encode(np.asarray(values, np.float32), slot)
    return decode_payload(header, arrays), arrays, header


def test_values_on_minus_t_zero_and_t_travel_exactly_and_leave_no_residual():
    t = 0.25
    values = np.random.default_rng(0).choice([-t, 0.0, t], size=37).astype(np.float32)
    codec = create_codec({"type": "2bit", "threshold": t})
    decoded, arrays, header = roundtrip(codec, values)
    np.testing.assert_array_equal(decoded, values)
    np.testing.assert_array_equal(codec.residual(0), np.zeros(37, np.float32))
    assert arrays[0].dtype == np.int32 and arrays[0].size == 3 and header["size"] == 37  # ceil(37 / 16)


def test_what_was_not_sent_is_carried_into_the_next_push():
    codec = create_codec({"type": "2bit", "threshold": 1.0})
    first, _, _ = roundtrip(codec, [0.6, -0.6, 1.7, -2.5])
    np.testing.assert_array_equal(first, [0.0, 0.0, 1.0, -1.0])
    np.testing.assert_allclose(codec.residual(0), [0.6, -0.6, 0.7, -1.5], rtol=1e-6)
    second, _, _ = roundtrip(codec, [0.6, -0.6, 0.0, 0.0])
    np.testing.assert_array_equal(second, [1.0, -1.0, 0.0, -1.0])
    np.testing.assert_allclose(codec.residual(0), [0.2, -0.2, 0.7, -0.5], rtol=1e-5)


def test_sent_plus_residual_equals_everything_pushed_so_far():
    rng = np.random.default_rng(1)
    codec = create_codec({"type": "2bit", "threshold": 0.1})
    pushed, sent = np.zeros(100, np.float32), np.zeros(100, np.float32)
    for _ in range(20):
        grad = rng.normal(0, 0.08, 100).astype(np.float32)
        pushed += grad
        sent += roundtrip(codec, grad, slot="a")[0]
    np.testing.assert_allclose(sent + codec.residual("a"), pushed, atol=1e-5)


def test_codes_are_packed_as_mxnet_does_sixteen_per_word_first_value_in_the_high_bits():
    codec = create_codec({"type": "2bit", "threshold": 0.5})
    values = np.zeros(16, np.float32)
    values[0], values[1], values[5], values[15] = 0.5, -0.5, 0.5, -0.5
    _, arrays, _ = roundtrip(codec, values)
    # byte 0: values 0..3 -> 11 10 00 00; byte 1: values 4..7 -> 00 11 00 00; byte 3: values 12..15 -> ... 10
    assert arrays[0].view(np.uint8).tolist() == [0b11100000, 0b00110000, 0, 0b00000010]


def test_residuals_are_kept_per_slot():
    codec = create_codec({"type": "2bit", "threshold": 1.0})
    roundtrip(codec, [0.5], slot=("server 0", (1,)))
    roundtrip(codec, [0.7], slot=("server 1", (1,)))
    assert codec.residual(("server 0", (1,))).tolist() == [0.5]


def test_fp16_names_itself_and_halves_the_bytes():
    decoded, arrays, header = roundtrip(create_codec("fp16"), [1.0, 2.5])
    assert header == {"type": "fp16"} and arrays[0].dtype == np.float16 and decoded.tolist() == [1.0, 2.5]


@pytest.mark.parametrize("compression,match", [
    ({"type": "1bit"}, "unknown gradient compression '1bit'"),
    ({"type": "2bit", "threshhold": 0.5}, "has no option.s. threshhold .known: threshold"),
    ({"type": "2bit", "threshold": 0}, "'threshold' must be a positive number, got 0"),
    ({"type": "fp16", "threshold": 1}, "'fp16' has no option.s. threshold"),
])
def test_bad_compression_settings_are_config_errors_naming_the_setting(compression, match):
    with pytest.raises(ConfigError, match=match):
        create_codec(compression)


@pytest.mark.parametrize("header,arrays,match", [
    ({"type": "3bit"}, [np.zeros(1, np.int32)], "field 'codec' must name a codec"),
    ({"type": "2bit", "threshold": 0.5, "size": 40}, [np.zeros(2, np.int32)], "40 values needs 3 int32 words"),
    ({"type": "2bit", "size": 4}, [np.zeros(1, np.int32)], "'codec.threshold' must be a positive number"),
    ({"type": "fp16"}, [np.zeros(2, np.float32)], "fp16 gradient must be float16"),
])
def test_malformed_codec_headers_are_rejected_naming_the_field(header, arrays, match):
    with pytest.raises(MalformedMessage, match=match):
        decode_payload(header, arrays)


def test_fp16_scales_a_finite_gradient_float16_cannot_hold_instead_of_sending_inf():
    """1e5 (above float16's 65504) arrives as 1e5, not as an Inf the server would blame on the worker."""
    from sparkps.comm.codec import create_codec, decode_payload
    codec = create_codec("fp16")
    grad = np.array([1e5, -7e4, 1.0, 0.25], np.float32)
    arrays, header = codec.encode(grad, slot=0)
    assert arrays[0].dtype == np.float16 and header["scale"] >= 2.0
    decoded = decode_payload(header, arrays)
    assert np.isfinite(decoded).all()
    np.testing.assert_allclose(decoded, grad, rtol=1e-3)
    huge = np.array([3e38, -1e30], np.float32)
    arrays, header = codec.encode(huge, slot=0)
    np.testing.assert_allclose(decode_payload(header, arrays), huge, rtol=1e-3)
    small = np.array([1.5, -2.0], np.float32)
    arrays, header = codec.encode(small, slot=0)
    assert header == {"type": "fp16"} and decode_payload(header, arrays).tolist() == [1.5, -2.0]


def test_a_bad_fp16_scale_is_named():
    from sparkps.comm.codec import decode_payload
    with pytest.raises(MalformedMessage, match="bad fp16 scale"):
        decode_payload({"type": "fp16", "scale": -1.0}, [np.zeros(2, np.float16)])

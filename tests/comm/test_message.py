"""The wire codec: round trips and every kind of malformed frame."""
import msgpack
import numpy as np
import pytest

from sparkps.comm import message as wire
from sparkps.comm.security import sign
from sparkps.errors import AuthError, MalformedMessage

KEY = b"job-secret"


def signed(body_obj, key=KEY):
    body = msgpack.packb(body_obj, use_bin_type=True)
    return sign(key, body) + body


def header(**overrides):
    h = {"cmd": "PUSH", "sender": 3, "rid": 9, "reply": False, "meta": {}, "arrays": [], "err": None}
    h.update(overrides)
    return h


def roundtrip(msg):
    return wire.decode(wire.encode(msg, KEY), KEY)


@pytest.mark.parametrize("dtype", sorted(wire.DTYPES))
def test_arrays_of_every_dtype_round_trip(dtype):
    array = (np.arange(12) % 2).astype(dtype).reshape(3, 4)
    out = roundtrip(wire.Message("PULL", arrays=[array])).arrays[0]
    assert out.dtype == array.dtype and out.shape == (3, 4)
    np.testing.assert_array_equal(out, array)


def test_header_fields_and_odd_shapes_round_trip():
    arrays = [np.float32(2.5) * np.ones(()), np.zeros((0, 3), np.float32), np.arange(24.0).reshape(2, 3, 4)[:, ::2]]
    msg = wire.Message("PUSHPULL", sender=4, rid=77, reply=True, arrays=arrays,
                       meta={"keys": [1, 2], "round": np.int64(5), "opt": {"lr": 0.1}, "tag": (1, 2)})
    out = roundtrip(msg)
    assert (out.cmd, out.sender, out.rid, out.reply) == ("PUSHPULL", 4, 77, True)
    assert out.meta == {"keys": [1, 2], "round": 5, "opt": {"lr": 0.1}, "tag": [1, 2]}
    for got, want in zip(out.arrays, arrays):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_error_text_round_trips():
    assert roundtrip(wire.Message("ERROR", rid=1, reply=True, err="bad key 7")).err == "bad key 7"


def test_received_arrays_are_read_only_views():
    out = roundtrip(wire.Message("PULL", arrays=[np.ones(4, np.float32)])).arrays[0]
    with pytest.raises(ValueError):
        out[0] = 2


def test_large_arrays_are_sent_without_a_copy():
    array = np.ones(1 << 20, np.float32)
    frames = wire.encode(wire.Message("PUSH", arrays=[array]), KEY)
    assert np.shares_memory(np.asarray(frames[1]), array)


def test_encode_refuses_unknown_commands_dtypes_and_objects():
    with pytest.raises(MalformedMessage, match="unknown command"):
        wire.encode(wire.Message("FROB"), KEY)
    with pytest.raises(MalformedMessage, match="dtype"):
        wire.encode(wire.Message("PUSH", arrays=[np.array(["a"], dtype=object)]), KEY)
    with pytest.raises(TypeError, match="cannot send a object"):
        wire.encode(wire.Message("PUSH", meta={"x": object()}), KEY)


def test_wrong_secret_is_an_auth_error():
    frames = wire.encode(wire.Message("REGISTER"), b"other-secret")
    with pytest.raises(AuthError, match="authentication failed"):
        wire.decode(frames, KEY)


def test_tampered_header_is_an_auth_error():
    frames = wire.encode(wire.Message("PULL", meta={"keys": [1]}), KEY)
    tampered = bytearray(frames[0])
    tampered[-1] ^= 1
    with pytest.raises(AuthError):
        wire.decode([bytes(tampered)], KEY)


@pytest.mark.parametrize("frames, match", [
    ([], "empty message"),
    ([b"short"], "too short"),
    ([b"x" * (32 + wire.MAX_HEADER_BYTES + 1)], "above the limit"),
    ([sign(KEY, b"\xc1\xc1") + b"\xc1\xc1"], "not valid msgpack"),
    ([signed([1, 2, 3])], "not a map"),
    ([signed({"cmd": "PUSH"})], "'sender' is missing"),
    ([signed(header(sender=True))], "'sender'"),
    ([signed(header(rid="7"))], "'rid'"),
    ([signed(header(meta=[]))], "'meta'"),
    ([signed(header(cmd="EXPLODE"))], "unknown command"),
    ([signed(header(err=5))], "'err'"),
    ([signed(header(arrays=[["float32", [2]]]))], "announces 1 arrays, message has 0"),
    ([signed(header()), b"\0" * 8], "announces 0 arrays, message has 1"),
    ([signed(header(arrays=[["complex64", [1]]])), b"\0" * 8], "bad description"),
    ([signed(header(arrays=[["object", [1]]])), b"\0" * 8], "bad description"),
    ([signed(header(arrays=[["float32", [-2]]])), b"\0" * 8], "bad description"),
    ([signed(header(arrays=[["float32", "2"]])), b"\0" * 8], "bad description"),
    ([signed(header(arrays=[["float32"]])), b"\0" * 8], "bad description"),
    ([signed(header(arrays=[["float32", [3]]])), b"\0" * 8], "needs 12 bytes, frame has 8"),
    ([signed(header(arrays=[["float64", [1 << 40, 1 << 40]]])), b"\0" * 8], "needs"),
])
def test_malformed_frames_raise_malformed_message(frames, match):
    with pytest.raises(MalformedMessage, match=match):
        wire.decode(frames, KEY)


def test_oversized_header_is_refused_on_encode():
    with pytest.raises(MalformedMessage, match="above the"):
        wire.encode(wire.Message("PUSH", meta={"blob": "x" * (wire.MAX_HEADER_BYTES + 1)}), KEY)


def test_random_bytes_never_decode():
    rng = np.random.default_rng(0)
    for _ in range(300):
        frames = [rng.bytes(int(n)) for n in rng.integers(0, 200, size=rng.integers(1, 4))]
        with pytest.raises((MalformedMessage, AuthError)):
            wire.decode(frames, KEY)

"""The wire codec: round trips and every kind of malformed frame."""
import msgpack
import numpy as np
import pytest

from sparkps.comm import message as wire
from sparkps.comm.message import sign
from sparkps.errors import AuthError, MalformedMessage

KEY = b"job-secret"


def signed(body_obj, *frames, key=KEY):
    """The frames of a message whose MAC covers ``body_obj`` and the array ``frames``."""
    body = msgpack.packb(body_obj, use_bin_type=True)
    return [sign(key, body, frames) + body, *frames]


def header(**overrides):
    h = {"cmd": "PUSH", "sender": 3, "sid": b"s" * 16, "seq": 1, "rid": 9, "reply": False, "meta": {},
         "arrays": [], "err": None, "job": b"j" * 16}
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
    (signed(header(sid="s" * 16)), "'sid'"),
    (signed(header(seq=b"1")), "'seq'"),
    (signed([1, 2, 3]), "not a map"),
    (signed({"cmd": "PUSH"}), "'sender' is missing"),
    (signed(header(sender=True)), "'sender'"),
    (signed(header(rid="7")), "'rid'"),
    (signed(header(meta=[])), "'meta'"),
    (signed(header(cmd="EXPLODE")), "unknown command"),
    (signed(header(err=5)), "'err'"),
    (signed(header(arrays=[["float32", [2]]])), "announces 1 arrays, message has 0"),
    (signed(header(), b"\0" * 8), "announces 0 arrays, message has 1"),
    (signed(header(arrays=[["complex64", [1]]]), b"\0" * 8), "bad description"),
    (signed(header(arrays=[["object", [1]]]), b"\0" * 8), "bad description"),
    (signed(header(arrays=[["float32", [-2]]]), b"\0" * 8), "bad description"),
    (signed(header(arrays=[["float32", "2"]]), b"\0" * 8), "bad description"),
    (signed(header(arrays=[["float32"]]), b"\0" * 8), "bad description"),
    (signed(header(arrays=[["float32", [3]]]), b"\0" * 8), "needs 12 bytes, frame has 8"),
    (signed(header(arrays=[["float64", [1 << 40, 1 << 40]]]), b"\0" * 8), "needs"),
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


def test_an_array_frame_altered_or_swapped_is_an_auth_error():
    frames = wire.encode(wire.Message("PUSHPULL", sender=4, arrays=[np.full(4, -1.0), np.zeros(2)]), KEY)
    altered = np.full(4, 998.0).view(np.uint8)
    with pytest.raises(AuthError, match="array frame was altered"):
        wire.decode([frames[0], altered, frames[2]], KEY)
    with pytest.raises(AuthError):
        wire.decode([frames[0], frames[2], frames[1]], KEY)
    assert wire.decode(frames, KEY).arrays[0].tolist() == [-1.0] * 4


def test_frames_cannot_be_split_or_merged_under_one_mac():
    body = msgpack.packb(header(), use_bin_type=True)
    assert sign(KEY, body, [b"ab", b"c"]) != sign(KEY, body, [b"a", b"bc"]) != sign(KEY, body, [b"abc"])
    assert sign(KEY, body + b"x", []) != sign(KEY, body, [b"x"])


def test_sender_session_and_sequence_round_trip_under_the_mac():
    msg = roundtrip(wire.Message("PULL", sender=6, session=b"q" * 16, seq=41))
    assert (msg.sender, msg.session, msg.seq) == (6, b"q" * 16, 41)
    frames = wire.encode(wire.Message("PULL", sender=6, session=b"q" * 16, seq=41), KEY)
    forged = frames[0].replace(msgpack.packb(41), msgpack.packb(42))
    with pytest.raises(AuthError):
        wire.decode([forged], KEY)


def test_an_array_above_the_frame_size_travels_in_frames_below_the_header_limit():
    """Every frame of any message fits the default socket limit (the header's), whatever the arrays' sizes: a large
    array goes as several frames (sent without a copy), joined on receipt."""
    from sparkps.comm.settings import DEFAULT_MAX_MESSAGE_BYTES, HEADER_LIMIT_BYTES
    assert DEFAULT_MAX_MESSAGE_BYTES == HEADER_LIMIT_BYTES < 5 << 20
    big = np.arange(3 * wire.FRAME_BYTES // 4 + 5, dtype=np.float32)          # 3 frames and a bit
    small = np.arange(6, dtype=np.int64).reshape(2, 3)
    frames = wire.encode(wire.Message("PUSHPULL", sender=4, arrays=[small, big, np.zeros(0, np.float32)]), KEY)
    assert len(frames) == 1 + 1 + 4 + 1
    assert max(len(np.asarray(f).reshape(-1)) for f in frames[1:]) == wire.FRAME_BYTES < DEFAULT_MAX_MESSAGE_BYTES
    assert np.shares_memory(np.asarray(frames[2]), big)
    decoded = wire.decode(frames, KEY)
    assert decoded.arrays[0].tolist() == small.tolist() and decoded.arrays[2].size == 0
    np.testing.assert_array_equal(decoded.arrays[1], big)
    assert not decoded.arrays[1].flags.writeable


def test_a_pieced_arrays_frames_altered_dropped_or_miscounted_are_refused():
    big = np.arange(wire.FRAME_BYTES // 2, dtype=np.float32)          # 2 frames
    frames = wire.encode(wire.Message("PUSH", sender=4, arrays=[big]), KEY)
    assert len(frames) == 3
    with pytest.raises(AuthError):
        wire.decode([frames[0], frames[2], frames[1]], KEY)
    with pytest.raises(AuthError):
        wire.decode(frames[:2], KEY)
    with pytest.raises(MalformedMessage, match=r"announces 1 arrays, message has 1 array frames \(the arrays need 2"):
        wire.decode(signed(header(arrays=[["float32", [8], 2]]), b"\0" * 32), KEY)
    bad = header(arrays=[["float32", [4], 1]])
    with pytest.raises(MalformedMessage, match="bad description"):
        wire.decode(signed(bad, b"\0" * 16), KEY)

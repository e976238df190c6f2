"""Gradient codecs: how a pushed gradient travels (``none``, ``fp16``, ``2bit``), in one home.

The worker picks a codec with ``create_codec(compression)`` (MXNet's ``set_gradient_compression`` dict, a
name, or None); it stages a push in ``codec.dtype`` and sends ``codec.encode(payload, slot)``: the arrays and
the header that names the codec (``meta["codec"]``). The server's request parser calls :func:`decode_payload`
with that header, so tables only ever see float gradients.

==========  ==============================================================  ===================================
codec       on the wire                                                     lossy?
==========  ==============================================================  ===================================
``none``    float32                                                         no
``fp16``    float16 (``{"type": "fp16"}``; ``"scale": s`` when a value       rounding
            exceeds float16's ±65504: every value sent divided by s, a
            power of two, and multiplied back by the server)
``2bit``    int32, 16 values each (``{"type": "2bit", "threshold": t,       values become -t, 0, +t; the rest is
            "size": n}``; :mod:`sparkps.comm.codec.twobit`)                   kept on the worker (error feedback)
==========  ==============================================================  ===================================

>>> codec = create_codec({'type': '2bit', 'threshold': 0.5})
>>> arrays, header = codec.encode(np.array([0.7, -0.2, -0.6], np.float32), slot=0)
>>> decode_payload(header, arrays).tolist(), [round(float(r), 2) for r in codec.residual(0)]
([0.5, 0.0, -0.5], [0.2, -0.2, -0.1])
"""
import numpy as np

from sparkps.comm.codec.twobit import TwoBitCodec, unpack_2bit
from sparkps.errors import ConfigError, MalformedMessage


class PlainCodec:
    """No compression: float32 on the wire, no header."""
    name = "none"
    OPTIONS = ()
    dtype = np.float32

    def encode(self, payload, slot):
        """``([payload], None)``: sent as it is."""
        return [payload], None


FP16_MAX = float(np.finfo(np.float16).max)   # 65504


def fp16_scale(payload):
    """The power of two a float32 ``payload`` is divided by so that its largest finite magnitude fits float16
    (1.0 when it already fits); non-finite values are left to the server's check.

    >>> fp16_scale(np.array([1e5, -3.0], np.float32)), fp16_scale(np.array([60000.0, np.inf], np.float32))
    (2.0, 1.0)
    """
    finite = payload[np.isfinite(payload)] if payload.size else payload
    largest = float(np.max(np.abs(finite))) if finite.size else 0.0
    if largest <= FP16_MAX:
        return 1.0
    return float(2.0 ** np.ceil(np.log2(largest / FP16_MAX)))


class Fp16Codec:
    """Half precision on the wire; the server adds the gradients into its float32 weights.

    Staged in float32 so that a finite gradient float16 cannot hold (above ±65504) is not turned into Inf (the
    server would refuse it as non-finite): such a payload is divided by a power of two (``fp16_scale``, exact
    for every value that does not underflow) and its header carries the ``scale`` the server multiplies back.
    """
    name = "fp16"
    OPTIONS = ()
    dtype = np.float32

    def encode(self, payload, slot):
        """``([payload as float16], header)``; the header has ``scale`` when the payload had to be scaled."""
        if payload.dtype == np.float16:
            return [payload], {"type": "fp16"}
        scale = fp16_scale(payload)
        if scale == 1.0:
            return [payload.astype(np.float16)], {"type": "fp16"}
        return [(payload / np.float32(scale)).astype(np.float16)], {"type": "fp16", "scale": scale}


CODECS = {"none": PlainCodec, "fp16": Fp16Codec, "2bit": TwoBitCodec}


def create_codec(compression):
    """The codec for ``compression``: None, a name, or ``{'type': name, options}``; ConfigError naming what
    is unknown (the type, or an option of it)."""
    if compression is None:
        return PlainCodec()
    params = dict(compression) if isinstance(compression, dict) else {"type": compression}
    kind = params.pop("type", None)
    if kind not in CODECS:
        raise ConfigError("unknown gradient compression %r (known: %s)" % (kind, ", ".join(sorted(CODECS))))
    cls = CODECS[kind]
    known = cls.OPTIONS      # every codec declares the options it takes
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ConfigError("gradient compression %r has no option(s) %s (known: %s)"
                          % (kind, ", ".join(unknown), ", ".join(known) or "none"))
    return cls(**params)


def decode_payload(header, arrays):
    """The flat float gradient of a request whose header field ``codec`` is ``header``.

    Raises MalformedMessage naming the field at fault.
    """
    if not isinstance(header, dict) or header.get("type") not in CODECS:
        raise MalformedMessage("request field 'codec' must name a codec (%s), got %r"
                               % (", ".join(sorted(CODECS)), header))
    if len(arrays) != 1:
        raise MalformedMessage("a %s gradient needs one array, got %d" % (header["type"], len(arrays)))
    array = arrays[0].reshape(-1)
    kind = header["type"]
    if kind == "2bit":
        return unpack_2bit(array, header)
    want = np.float16 if kind == "fp16" else np.float32
    if array.dtype != want:
        raise MalformedMessage("a %s gradient must be %s, got %s" % (kind, np.dtype(want).name, array.dtype))
    if kind == "fp16" and "scale" in header:
        scale = header["scale"]
        if type(scale) is not float or not np.isfinite(scale) or scale < 1.0:
            raise MalformedMessage("request field 'codec' has a bad fp16 scale %r (a finite float >= 1)" % (scale,))
        return array.astype(np.float32) * np.float32(scale)
    return array


__all__ = ["CODECS", "FP16_MAX", "Fp16Codec", "PlainCodec", "TwoBitCodec", "create_codec", "decode_payload",
           "fp16_scale"]

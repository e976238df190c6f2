"""MXNet's 2-bit gradient compression: values quantised to {-t, 0, +t}, the rest kept on the worker.

``encode`` adds the gradient to the residual of its slot (error feedback), sends ``+t`` where the sum
reached ``t``, ``-t`` where it reached ``-t``, 0 elsewhere, and keeps ``sum - sent`` as the new residual.
The codes are packed as in MXNet (``src/kvstore/gradient_compression-inl.h``): 16 values per 32-bit word,
four per byte, the first value in the byte's two highest bits; ``11`` is +t, ``10`` is -t, ``00`` is 0.
A gradient of n values travels as ``ceil(n / 16)`` int32 words: 1/16 of float32.

>>> codec = TwoBitCodec(threshold=1.0)
>>> words, header = codec.encode(np.array([1.0, -1.0, 0.0, 0.25], np.float32), slot="w")
>>> hex(int(words[0].view(np.uint32)[0])), header["size"]
('0xe0', 4)
>>> unpack_2bit(words[0], header).tolist()
[1.0, -1.0, 0.0, 0.0]
"""
import numpy as np

from sparkps.errors import ConfigError, MalformedMessage

_SHIFTS = np.array([6, 4, 2, 0], np.uint8)


def _byte_values(threshold):
    """A (256, 4) table: the four values one packed byte stands for."""
    codes = (np.arange(256, dtype=np.uint8)[:, None] >> _SHIFTS) & 3
    return np.select([codes == 3, codes == 2], [np.float32(threshold), np.float32(-threshold)],
                     np.float32(0)).astype(np.float32)


class TwoBitCodec:
    """``{'type': '2bit', 'threshold': t}``: 2 bits per value with error feedback; residuals per ``slot``.

    A slot is one payload layout (the worker uses ``(server, keys)``); its residual lives as long as the codec.
    Not thread-safe (one per worker).
    """
    name = "2bit"
    dtype = np.float32
    OPTIONS = ("threshold",)

    def __init__(self, threshold=0.5):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not threshold > 0:
            raise ConfigError("2bit compression option 'threshold' must be a positive number, got %r" % (threshold,))
        self.threshold = float(threshold)
        self._residuals = {}

    def residual(self, slot):
        """The residual kept for ``slot`` (what was not sent yet)."""
        return self._residuals[slot]

    def encode(self, payload, slot):
        """``([int32 words], header)`` for the flat float gradient ``payload``; updates ``slot``'s residual."""
        payload = np.asarray(payload, np.float32).reshape(-1)
        residual = self._residuals.get(slot)
        if residual is None or residual.size != payload.size:
            residual = self._residuals[slot] = np.zeros(payload.size, np.float32)
        residual += payload
        t = np.float32(self.threshold)
        positive, negative = residual >= t, residual <= -t
        residual[positive] -= t
        residual[negative] += t
        codes = np.zeros(-(-payload.size // 16) * 16, np.uint8)
        codes[:payload.size][positive] = 3
        codes[:payload.size][negative] = 2
        quads = codes.reshape(-1, 4)
        packed = (quads[:, 0] << 6) | (quads[:, 1] << 4) | (quads[:, 2] << 2) | quads[:, 3]
        return [packed.view("<i4")], {"type": "2bit", "threshold": self.threshold, "size": int(payload.size)}


def unpack_2bit(words, header):
    """The float32 values of 2-bit ``words`` described by ``header``; MalformedMessage naming the field at fault."""
    threshold, size = header.get("threshold"), header.get("size")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not threshold > 0:
        raise MalformedMessage("request field 'codec.threshold' must be a positive number, got %r" % (threshold,))
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise MalformedMessage("request field 'codec.size' must be a non-negative int, got %r" % (size,))
    if words.dtype != np.int32 or words.size != -(-size // 16):
        raise MalformedMessage("a 2bit gradient of %d values needs %d int32 words, got %d of %s"
                               % (size, -(-size // 16), words.size, words.dtype))
    table = _byte_values(threshold)
    return table[words.view(np.uint8)].reshape(-1)[:size]

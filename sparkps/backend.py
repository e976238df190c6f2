"""Array backends: numpy for ``cpu``, CuPy for ``gpu``/``gpu(i)``.

This is the only module that imports CuPy, and it does so only when a gpu context is asked for, so a
machine without CUDA never pays for it::

    ctx = Context.parse('gpu(1)')
    xp = get_array_module(ctx)          # cupy, with device 1 selected by ctx.enter()
    host = asnumpy(xp.ones(3))

Nothing here blocks.
"""
import functools
import re

import numpy as np

from .errors import BackendUnavailable, ConfigError

_CTX_PATTERN = re.compile(r"^\s*(cpu|gpu)\s*(?:\(\s*(\d+)\s*\))?\s*$")
INSTALL_HINT = "pip install 'sparkps[gpu]'"


class Context:
    """Where arrays live: ``Context('cpu')`` or ``Context('gpu', 1)`` (as ``mx.cpu()`` / ``mx.gpu(1)``)."""

    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type="cpu", device_id=0):
        if device_type not in ("cpu", "gpu"):
            raise ConfigError("unknown device type %r: use 'cpu' or 'gpu'" % (device_type,))
        self.device_type = device_type
        self.device_id = int(device_id)

    @classmethod
    def parse(cls, ctx):
        """Accept a Context, None (cpu), 'cpu', 'gpu', 'gpu(1)' or a one-element list of those."""
        if isinstance(ctx, Context):
            return ctx
        if ctx is None:
            return cls("cpu")
        if isinstance(ctx, (list, tuple)) and len(ctx) == 1:
            return cls.parse(ctx[0])
        match = _CTX_PATTERN.match(str(ctx)) if isinstance(ctx, str) else None
        if not match:
            raise ConfigError("cannot read context %r: use 'cpu', 'gpu' or 'gpu(i)'" % (ctx,))
        return cls(match.group(1), int(match.group(2) or 0))

    def enter(self):
        """Select this device for the following CuPy calls (a no-op on cpu)."""
        if self.device_type == "gpu":
            _cupy().cuda.Device(self.device_id).use()

    def __eq__(self, other):
        return isinstance(other, Context) and (self.device_type, self.device_id) == (
            other.device_type, other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return "%s(%d)" % (self.device_type, self.device_id)


def cpu(device_id=0):
    """The host context (numpy arrays)."""
    return Context("cpu", device_id)


def gpu(device_id=0):
    """The CUDA device ``device_id`` (CuPy arrays)."""
    return Context("gpu", device_id)


def _cupy():
    try:
        import cupy  # the only CuPy import in sparkps
    except ImportError as exc:
        raise BackendUnavailable("a gpu context needs CuPy, which is not installed: %s (%s)"
                                 % (INSTALL_HINT, exc)) from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver missing or broken
        raise BackendUnavailable("CuPy is installed but CUDA is unusable here (%s); %s for a "
                                 "matching build" % (exc, INSTALL_HINT)) from exc
    if count < 1:
        raise BackendUnavailable("CuPy found no CUDA device")
    return cupy


def get_array_module(ctx_or_array=None):
    """numpy or cupy: for a context (or context string), or for an existing array."""
    if isinstance(ctx_or_array, (Context, str)) or ctx_or_array is None:
        ctx = Context.parse(ctx_or_array)
        if ctx.device_type == "cpu":
            return np
        cupy = _cupy()
        if ctx.device_id >= cupy.cuda.runtime.getDeviceCount():
            raise BackendUnavailable("no CUDA device %d here" % ctx.device_id)
        return cupy
    if isinstance(ctx_or_array, np.ndarray) or np.isscalar(ctx_or_array):
        return np
    module = type(ctx_or_array).__module__.split(".")[0]
    return _cupy() if module == "cupy" else np


def gpu_available():
    """True when CuPy imports and sees at least one CUDA device (never raises)."""
    try:
        _cupy()
    except BackendUnavailable:
        return False
    return True


def asnumpy(array):
    """A numpy copy of a CuPy array, or the numpy array itself."""
    if isinstance(array, np.ndarray):
        return array
    if hasattr(array, "get") and type(array).__module__.startswith("cupy"):
        return array.get()
    return np.asarray(array)


def copy_into(dst, src):
    """Write ``src`` (numpy, CuPy or a Python value) into the existing array ``dst`` on its device."""
    if isinstance(dst, np.ndarray):
        np.copyto(dst, asnumpy(src), casting="unsafe")
    elif isinstance(src, np.ndarray):
        dst.set(np.ascontiguousarray(src, dtype=dst.dtype)) if src.shape == dst.shape else \
            dst.__setitem__(Ellipsis, get_array_module(dst).asarray(src))
    else:
        dst[...] = src


def make_rng(ctx, seed=None):
    """A random generator on ``ctx``'s backend (numpy Generator or cupy RandomState)."""
    xp = get_array_module(ctx)
    if xp is np:
        return np.random.default_rng(seed)
    return xp.random.RandomState(seed)


def uniform_into(rng, out):
    """Fill ``out`` with uniform [0, 1) samples drawn from ``rng`` (made by make_rng)."""
    if isinstance(rng, np.random.Generator):
        if out.dtype in (np.float32, np.float64):
            rng.random(out=out, dtype=out.dtype)
        else:
            out[...] = rng.random(out.shape)
    else:
        out[...] = rng.random_sample(out.shape, dtype=out.dtype)


def scatter_add(out, index, rows):
    """out[index[k]] += rows[k] for every k, repeated indices accumulating (numpy or CuPy)."""
    if isinstance(out, np.ndarray):
        np.add.at(out, index, rows)
    else:
        import cupy  # present whenever a CuPy array exists; ufunc.at needs CuPy 13 (cupyx.scatter_add is deprecated)
        cupy.add.at(out, index, rows)


def subtract_one_hot(out, prob, label, scale=1.0):
    """``out = (prob - one_hot(label)) * scale`` for (batch, classes) ``prob`` and (batch,) labels cast toward zero
    (SoftmaxOutput's gradient). On CuPy arrays one fused kernel; on numpy a copy and one fancy-indexed subtract."""
    if isinstance(out, np.ndarray):
        np.copyto(out, prob)
        out[np.arange(len(out)), label.astype(np.intp)] -= 1
        if scale != 1.0:
            np.multiply(out, scale, out=out)
        return out
    return _one_hot_kernel()(prob, label, prob.shape[1], out.dtype.type(scale), out)


@functools.lru_cache(maxsize=1)
def _one_hot_kernel():
    cupy = _cupy()
    return cupy.ElementwiseKernel(
        "T prob, raw L label, int64 classes, T scale", "T out",
        "out = (prob - ((long long)(i % classes) == (long long)label[i / classes] ? (T)1 : (T)0)) * scale;",
        "sparkps_subtract_one_hot")

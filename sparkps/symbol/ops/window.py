"""The geometry of a window sliding over the spatial axes of (N, C, *spatial) data, shared by
Convolution and Pooling: 1, 2 or 3 spatial axes, stride, zero padding (low and high side apart, for
Pooling's 'full' and 'same' conventions) and dilation.

An op visits the kernel offsets one at a time; under each offset the window's elements form a
strided view of the padded input of shape (N, C, *out), so every op is a loop of whole-array
operations that numpy and cupy share."""
from itertools import product

from ...errors import ConfigError
from ..params import render


def check_geometry(op_name, kernel, stride, pad, dilate):
    """(stride, pad, dilate) completed to the kernel's rank (MXNet: () means 1, 0, 1 per axis);
    ConfigError naming the parameter when one is malformed."""
    rank = len(kernel)
    if rank not in (1, 2, 3):
        raise ConfigError("%s: parameter 'kernel' must have 1, 2 or 3 sizes, got %s" % (op_name, render(kernel)))
    stride = tuple(stride) or (1,) * rank
    pad = tuple(pad) or (0,) * rank
    dilate = tuple(dilate) or (1,) * rank
    for key, value, minimum in (("kernel", kernel, 1), ("stride", stride, 1), ("pad", pad, 0),
                                ("dilate", dilate, 1)):
        if len(value) != rank or min(value) < minimum:
            raise ConfigError("%s: parameter %r must be %d int(s) >= %d (one per spatial axis of kernel %s), got %s"
                              % (op_name, key, rank, minimum, render(kernel), render(value)))
    return stride, pad, dilate


def extent(kernel, dilate):
    """The span of a dilated kernel along each axis."""
    return tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilate))


def out_size(size, kernel, stride, pad_lo, pad_hi, dilate):
    """Output length along one axis (0 when the input length is unknown)."""
    if not size:
        return 0
    return (size + pad_lo + pad_hi - (dilate * (kernel - 1) + 1)) // stride + 1


def windows(padded, kernel, stride, dilate, out):
    """[(offset, view)]: for each kernel offset (row-major), the strided view of ``padded``
    (N, C, *spatial) holding that offset's element of every window, shape (N, C, *out)."""
    views = []
    for offset in product(*(range(k) for k in kernel)):
        cut = [slice(None), slice(None)]
        for o, s, d, n in zip(offset, stride, dilate, out):
            cut.append(slice(o * d, o * d + s * (n - 1) + 1, s))
        views.append((offset, padded[tuple(cut)]))
    return views


def padded_shape(shape, pad_lo, pad_hi):
    return tuple(shape[:2]) + tuple(n + lo + hi for n, lo, hi in zip(shape[2:], pad_lo, pad_hi))


def interior(padded, shape, pad_lo):
    """The view of ``padded`` where the unpadded data of ``shape`` sits."""
    return padded[(slice(None), slice(None)) + tuple(slice(lo, lo + n) for lo, n in zip(pad_lo, shape[2:]))]


def padding(xp, x, buffer, pad_lo, pad_hi):
    """(padded array, callable refreshing it from x): x itself when there is no padding."""
    if not any(pad_lo) and not any(pad_hi):
        return x, lambda: None
    inner = interior(buffer, x.shape, pad_lo)
    return buffer, lambda: xp.copyto(inner, x)


def channels_last(view):
    """(N, C, *out) -> (N, *out, C), a view."""
    return view.transpose((0,) + tuple(range(2, view.ndim)) + (1,))


def channels_first(array):
    """(N, *out, C) -> (N, C, *out), a view."""
    return array.transpose((0, array.ndim - 1) + tuple(range(1, array.ndim - 1)))

"""The device (CuPy) kernels of the fused CTR ops (``ops/fused.py``), the same math as ``fused_kernels``' numba
loops: a table read with its pooling, the per-row gradient sum of that read (atomic adds), and the FM / NFM
pair-sum interaction with its gradient.

CuPy is never imported here: ``xp`` is the array module of the bound context (``backend.get_array_module``, the
one place cupy is imported), and each kernel is built once per module and cached. Kernels queue on the current
stream and return without waiting for the device.
"""
import functools

_GATHER = r"""
const long long row = i / dim, k = i % dim;
if (pooling == 0) {
    const double p = (double)pos[row];
    out = p < 0 ? (T)0 : w[(long long)p * dim + k];
} else {
    T total = 0;
    int count = 0;
    for (long long j = 0; j < width; ++j) {
        const double p = (double)pos[row * width + j];
        if (p >= 0) { total += w[(long long)p * dim + k]; ++count; }
    }
    out = (pooling == 2 && count > 1) ? total / (T)count : total;
}
"""

_SCATTER = r"""
const long long item = i / dim, k = i % dim;
const double p = (double)pos[item];
if (p >= 0 && p < (double)rows) {
    const long long b = item / width;
    T value = pooling == 0 ? dy[item * dim + k] : dy[b * dim + k];
    if (pooling == 2) {
        int count = 0;
        for (long long j = 0; j < width; ++j) { if ((double)pos[b * width + j] >= 0) ++count; }
        if (count > 1) value = value / (T)count;
    }
    atomicAdd(&grad[(long long)p * dim + k], value);
}
"""

_PAIR_GRAD = r"""
const long long b = i / (fields * factors), k = i % factors;
const T g = keep ? dy[b * factors + k] : dy[b];
dx = g * (total[b * factors + k] - x);
"""


@functools.lru_cache(maxsize=4)
def _kernels(xp):
    gather = xp.ElementwiseKernel("raw T w, raw P pos, int64 dim, int64 width, int32 pooling", "T out", _GATHER,
                                  "sparkps_fused_gather")
    scatter = xp.ElementwiseKernel("raw P pos, raw T dy, int64 dim, int64 width, int64 rows, int32 pooling",
                                   "raw T grad", _SCATTER, "sparkps_fused_scatter")
    pair_grad = xp.ElementwiseKernel("T x, raw T dy, raw T total, int64 fields, int64 factors, bool keep", "T dx",
                                     _PAIR_GRAD, "sparkps_fused_pair_grad")
    return gather, scatter, pair_grad


def gather_rows(xp, pos, weight, out, pooling):
    """``fused_kernels.gather_rows`` on the device; positions were checked on the host (always returns -1)."""
    gather, _, _ = _kernels(xp)
    gather(weight, pos, weight.shape[1], pos.shape[1], pooling, out)
    return -1


def scatter_rows(xp, pos, dy, grad, pooling):
    """``fused_kernels.scatter_rows`` on the device: zeroed, then one atomic add per present id and factor."""
    _, scatter, _ = _kernels(xp)
    grad.fill(0)
    dim = grad.shape[1]
    scatter(pos, dy, dim, pos.shape[1], grad.shape[0], pooling, grad, size=pos.size * dim)


def pair_sum_forward(xp, x, out, keep_factors):
    """``fused_kernels.pair_sum_forward`` with CuPy's reductions."""
    total = x.sum(axis=1)
    value = total * total - (x * x).sum(axis=1)
    if keep_factors:
        xp.multiply(value, 0.5, out=out)
    else:
        xp.multiply(value.sum(axis=1, keepdims=True), 0.5, out=out)


def pair_sum_backward(xp, x, dy, dx, keep_factors):
    """``fused_kernels.pair_sum_backward``: the field sums, then one elementwise kernel."""
    _, _, pair_grad = _kernels(xp)
    pair_grad(x, dy, x.sum(axis=1), x.shape[1], x.shape[2], bool(keep_factors), dx)

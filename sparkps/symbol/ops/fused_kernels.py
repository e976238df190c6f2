"""The host (numba) kernels of the fused CTR ops (``ops/fused.py``): one compiled loop each for a table read with
its pooling, the per-row gradient sum of that read, and the FM / NFM pair-sum interaction with its gradient.

Imported only when a fused op is bound on a cpu context (``import sparkps.symbol`` never loads numba). Each kernel
is compiled once per installation and argument types and read back from numba's on-disk cache, in the folder
``rows.kernel_cache`` chooses (uncached where none can be written);
``nogil=True`` lets a worker's other threads (its kvstore's I/O) run beside a step. Serial loops: a CTR worker runs
on one core, and at these sizes (a batch of 256-2048 rows, 6-40 fields, 4-64 factors) numba's parallel loops cost
more to start than they save on 2 cores. Nothing here blocks beyond the computation.

Positions (``pos``) are the executor's float ids: an integer row of ``weight``, or negative for an absent id. A
kernel that finds a position that is fractional, NaN or past the table returns its flat index (else -1); the op
raises the error naming its input.
"""
import math

import numpy as np

from sparkps.rows.kernel_cache import kernel

POOLING_CODES = {"none": 0, "sum": 1, "mean": 2}


@kernel(nogil=True)
def _bad_position(p, rows):
    return not (p == p) or p >= rows or math.floor(p) != p


@kernel(nogil=True)
def gather_rows(pos, weight, out, pooling):
    """Rows of ``weight`` (rows, dim) at the positions ``pos`` (n, width) into ``out``: (n * width, dim) for
    pooling 0 (an absent id gives a zero row), (n, dim) summed over the width for 1, averaged over the present ids
    for 2 (a row with none gives zeros). Returns -1, or the flat index of the first bad position."""
    n, width = pos.shape
    rows, dim = weight.shape
    for b in range(n):
        if pooling != 0:
            for k in range(dim):
                out[b, k] = 0
        count = 0
        for j in range(width):
            p = pos[b, j]
            if _bad_position(p, rows):
                return b * width + j
            i = int(p)
            if pooling == 0:
                target = b * width + j
                if i < 0:
                    for k in range(dim):
                        out[target, k] = 0
                else:
                    for k in range(dim):
                        out[target, k] = weight[i, k]
            elif i >= 0:
                count += 1
                for k in range(dim):
                    out[b, k] += weight[i, k]
        if pooling == 2 and count > 1:
            for k in range(dim):
                out[b, k] /= count
    return -1


@kernel(nogil=True)
def scatter_rows(pos, dy, grad, pooling):
    """The weight gradient of ``gather_rows``: ``grad`` (rows, dim) zeroed, then each present position's output
    gradient (``dy``: (n * width, dim) for pooling 0, (n, dim) else, divided by the row's count for 2) added into
    its row; repeated positions sum. Positions past the table are skipped (the forward pass refused them)."""
    n, width = pos.shape
    rows, dim = grad.shape
    grad[:, :] = 0
    for b in range(n):
        scale = 1.0
        if pooling == 2:
            count = 0
            for j in range(width):
                if pos[b, j] >= 0:
                    count += 1
            if count > 1:
                scale = 1.0 / count
        for j in range(width):
            p = pos[b, j]
            if not (p >= 0 and p < rows):
                continue
            i = int(p)
            source = b * width + j if pooling == 0 else b
            if pooling == 2:
                for k in range(dim):
                    grad[i, k] += dy[source, k] * scale
            else:
                for k in range(dim):
                    grad[i, k] += dy[source, k]


@kernel(nogil=True)
def pair_sum_forward(x, out, keep_factors):
    """sum_{i<j} e_i * e_j over the fields of ``x`` (n, fields, factors) as ((sum e)^2 - sum e^2) / 2: into ``out``
    (n, factors) when ``keep_factors`` (NFM), else its sum over the factors into ``out`` (n, 1) (FM)."""
    n, fields, factors = x.shape
    total = np.empty(factors, np.float64)
    squares = np.empty(factors, np.float64)
    for b in range(n):
        for k in range(factors):
            total[k] = 0.0
            squares[k] = 0.0
        for f in range(fields):
            for k in range(factors):
                v = x[b, f, k]
                total[k] += v
                squares[k] += v * v
        if keep_factors:
            for k in range(factors):
                out[b, k] = 0.5 * (total[k] * total[k] - squares[k])
        else:
            s = 0.0
            for k in range(factors):
                s += total[k] * total[k] - squares[k]
            out[b, 0] = 0.5 * s


@kernel(nogil=True)
def pair_sum_backward(x, dy, dx, keep_factors):
    """d e_f = dy * (sum_i e_i - e_f): ``dy`` (n, factors) when ``keep_factors``, else (n, 1)."""
    n, fields, factors = x.shape
    total = np.empty(factors, np.float64)
    for b in range(n):
        for k in range(factors):
            total[k] = 0.0
        for f in range(fields):
            for k in range(factors):
                total[k] += x[b, f, k]
        for f in range(fields):
            for k in range(factors):
                g = dy[b, k] if keep_factors else dy[b, 0]
                dx[b, f, k] = g * (total[k] - x[b, f, k])


def warm_up(dtype=np.float32):
    """Load (or compile, the first time after an installation) every kernel for ``dtype`` positions, rows and
    gradients, as a bound cpu executor calls them."""
    pos, rows = np.zeros((1, 2), dtype), np.zeros((2, 2), dtype)
    out = np.zeros((2, 2), dtype)
    for pooling in (0, 1):
        gather_rows(pos, rows, out, pooling)
        scatter_rows(pos, out, rows, pooling)
    x, dy = np.zeros((1, 2, 2), dtype), np.zeros((1, 2), dtype)
    for keep in (False, True):
        pair_sum_forward(x, dy, keep)
        pair_sum_backward(x, dy, x.copy(), keep)

"""How many distinct ids a batch names: ``M`` draws from a Zipf(s) law over ``N`` ids.

Rank ``k`` (1..N) is drawn with probability ``p_k = k^-s / H(N, s)``, ``H(N, s) = sum_k k^-s`` (a truncated Zipf
law; ``s`` may be any positive number, 1 included). The expected number of distinct ids among ``M`` independent
draws is exactly

    D(M) = sum_k [1 - (1 - p_k)^M]

which :func:`expected_distinct` sums term by term for the first ``EXACT_RANKS`` ranks. Past them every ``p_k`` is
below ``EXACT_RANKS^-s / H``, tiny, and the terms are smooth in ``k``: the tail ``sum_{k>K} g(k)`` with
``g(k) = 1 - exp(M log1p(-p_k))`` is taken by the Euler-Maclaurin rule ``integral_K^N g + (g(N) - g(K)) / 2``,
the integral by the trapezoid rule on a geometric grid (``TAIL_POINTS`` points). ``H(N, s)`` is summed the same
way. ``tests/plan/test_zipf.py`` checks the approximation against the exact sum at N = 10^7 (relative error
under 1e-4) and both against sampled batches.

Pure numpy, no I/O.

>>> round(expected_distinct(1, 1000, 1.1), 6)
1.0
>>> round(expected_distinct(10, 10, 0.0001), 2) < 10
True
"""
import numpy as np

EXACT_RANKS = 1 << 20
TAIL_POINTS = 20001
_CHUNK = 1 << 20


def _power_sum(lo, hi, s):
    """sum_{k=lo}^{hi} k^-s, exactly (in chunks)."""
    total = 0.0
    for start in range(lo, hi + 1, _CHUNK):
        k = np.arange(start, min(start + _CHUNK, hi + 1), dtype=np.float64)
        total += float(np.sum(k ** -s))
    return total


def _tail_integral(f, lo, hi):
    """integral_lo^hi f(x) dx by the trapezoid rule on a geometric grid (f smooth, decreasing)."""
    if hi <= lo:
        return 0.0
    t = np.linspace(np.log(lo), np.log(hi), TAIL_POINTS)
    x = np.exp(t)
    y = f(x) * x
    return float(np.sum((y[1:] + y[:-1]) * np.diff(t)) / 2.0)


def harmonic(n, s):
    """H(n, s) = sum_{k=1}^{n} k^-s: exact up to ``EXACT_RANKS``, Euler-Maclaurin past it."""
    n = int(n)
    head = min(n, EXACT_RANKS)
    total = _power_sum(1, head, s)
    if n > head:
        if abs(s - 1.0) < 1e-12:
            integral = np.log(n / head)
        else:
            integral = (n ** (1.0 - s) - head ** (1.0 - s)) / (1.0 - s)
        total += integral + (n ** -s - head ** -s) / 2.0
    return float(total)


def expected_distinct(draws, n, s):
    """Expected distinct ids among ``draws`` draws from Zipf(``s``) over ``n`` ids (see the module docstring)."""
    draws, n, s = float(draws), int(n), float(s)
    if draws < 0 or n < 1 or s <= 0:
        raise ValueError(f"expected_distinct needs draws >= 0, n >= 1 and s > 0, got {draws}, {n}, {s}")
    if draws == 0:
        return 0.0
    h = harmonic(n, s)
    head = min(n, EXACT_RANKS)
    total = 0.0
    for start in range(1, head + 1, _CHUNK):
        k = np.arange(start, min(start + _CHUNK, head + 1), dtype=np.float64)
        total += float(np.sum(-np.expm1(draws * np.log1p(-(k ** -s) / h))))
    if n > head:
        def g(x):
            return -np.expm1(draws * np.log1p(-(np.asarray(x, np.float64) ** -s) / h))
        total += _tail_integral(g, head, n) + (float(g(n)) - float(g(head))) / 2.0
    return min(total, float(n), draws)


def probabilities(n, s):
    """``p_k`` for k = 1..n (float64 array; for samplers and tests, n up to a few 10^7)."""
    k = np.arange(1, int(n) + 1, dtype=np.float64)
    p = k ** -float(s)
    return p / p.sum()


def sample_ranks(rng, n, s, size, cdf=None):
    """``size`` ranks 0..n-1 drawn from Zipf(s) over n ids (inverse CDF; pass ``cdf`` = cumsum of
    :func:`probabilities` to reuse it)."""
    if cdf is None:
        cdf = np.cumsum(probabilities(n, s))
    return np.minimum(np.searchsorted(cdf, rng.random(size) * cdf[-1], side='right'), int(n) - 1)

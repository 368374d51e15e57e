"""Is a difference between two configurations real, or run-to-run noise?

    stats.mean_ci([97.1, 98.6, 97.9])            # (mean, std, low, high) at 95 %
    stats.welch([97.1, 98.6, 97.9], [98.0, 98.2]) # (t, df, p)

Uses scipy when present; otherwise the Student t distribution is computed here (regularized
incomplete beta function by continued fraction). tests/sweep/test_stats.py checks it against scipy.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

__all__ = ["mean_ci", "welch"]

NAN = float("nan")


def _nonzero(value: float) -> float:
    return value if abs(value) > 1e-300 else 1e-300


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz: two half-steps a term)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 / _nonzero(1.0 - qab * x / qap)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 / _nonzero(1.0 + aa * d)
            c = _nonzero(1.0 + aa / c)
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def _t_sf_fallback(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom."""
    try:
        from scipy.stats import t as student_t
    except ImportError:
        return _t_sf_fallback(t, df)
    return float(student_t.sf(t, df))


def _t_quantile_fallback(q: float, df: float) -> float:
    if q == 0.5:
        return 0.0
    if q < 0.5:
        return -_t_quantile_fallback(1.0 - q, df)
    low, high = 0.0, 1.0
    while _t_sf_fallback(high, df) > 1.0 - q:
        high *= 2.0
    for _ in range(200):  # bisection: the tail is monotonic
        mid = 0.5 * (low + high)
        if _t_sf_fallback(mid, df) > 1.0 - q:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t (``t_quantile(0.975, 4)`` is 2.776...)."""
    try:
        from scipy.stats import t as student_t
    except ImportError:
        return _t_quantile_fallback(q, df)
    return float(student_t.ppf(q, df))


def _mean_std(values: Sequence[float]) -> Tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else NAN
    return mean, std


def mean_ci(values: Sequence[float], level: float = 0.95) -> Tuple[float, float, float, float]:
    """(mean, sample std, CI low, CI high): mean ± t(1-α/2, n-1)·s/√n. NaN where n < 2."""
    values = [float(v) for v in values]
    if not values:
        return NAN, NAN, NAN, NAN
    mean, std = _mean_std(values)
    if len(values) < 2:
        return mean, NAN, NAN, NAN
    half = t_quantile(0.5 + level / 2.0, len(values) - 1) * std / math.sqrt(len(values))
    return mean, std, mean - half, mean + half


def welch(a: Sequence[float], b: Sequence[float]) -> Tuple[float, float, Optional[float]]:
    """Welch's two-sided t-test (unequal variances): (t, df, p). p is None when n < 2 in either."""
    a, b = [float(v) for v in a], [float(v) for v in b]
    if len(a) < 2 or len(b) < 2:
        return NAN, NAN, None
    (ma, sa), (mb, sb) = _mean_std(a), _mean_std(b)
    va, vb = sa * sa / len(a), sb * sb / len(b)
    if va + vb == 0.0:  # no spread at all: equal means are the same, different means are not noise
        return (0.0, NAN, 1.0) if ma == mb else (math.copysign(math.inf, ma - mb), NAN, 0.0)
    t = (ma - mb) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    p = 2.0 * t_sf(abs(t), df)
    return t, df, min(1.0, p)

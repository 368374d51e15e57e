"""Is a difference between two configurations real, or run-to-run noise? And labkit's one percentile rule.

    stats.mean_ci([97.1, 98.6, 97.9])            # (mean, std, low, high) at 95 %
    stats.welch([97.1, 98.6, 97.9], [98.0, 98.2]) # (t, df, p)
    stats.percentile([1, 2, 3, 4], 25)            # 1.75: numpy's default (linear) rule

Student's t comes from scipy; tests/sweep/test_stats.py checks the results against scipy's own tests.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np

__all__ = ["mean_ci", "welch", "percentile"]

NAN = float("nan")


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom."""
    # imported here: scipy.stats takes about a second to import, in every kernel that imports labkit.stats
    from scipy.stats import t as student_t

    return float(student_t.sf(t, df))


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t (``t_quantile(0.975, 4)`` is 2.776...)."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(q, df))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0 to 100) of ``values`` by numpy's default rule, linear between the
    order statistics (the class page's quartiles use it); NaN when there are none."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else NAN


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

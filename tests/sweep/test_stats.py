"""labkit.stats: the scipy-free fallback agrees with scipy (an independent implementation)."""

from __future__ import annotations

import math

import pytest
from scipy import stats as scipy_stats

from labkit import stats


@pytest.mark.parametrize("df", [1, 2, 3.5, 7, 30, 200])
@pytest.mark.parametrize("q", [0.6, 0.9, 0.975, 0.995])
def test_fallback_t_quantile_matches_scipy(q, df):
    assert stats._t_quantile_fallback(q, df) == pytest.approx(scipy_stats.t.ppf(q, df), rel=1e-7)
    assert stats._t_sf_fallback(scipy_stats.t.ppf(q, df), df) == pytest.approx(1 - q, rel=1e-7)


def test_mean_ci_and_welch_match_scipy():
    a, b = [97.1, 98.6, 97.9, 98.2], [98.0, 98.3, 97.6]
    mean, std, low, high = stats.mean_ci(a)
    ref_low, ref_high = scipy_stats.t.interval(0.95, len(a) - 1, loc=sum(a) / 4, scale=scipy_stats.sem(a))
    assert (low, high) == pytest.approx((ref_low, ref_high))
    assert std == pytest.approx(scipy_stats.tstd(a))
    t, df, p = stats.welch(a, b)
    ref = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert (t, p) == pytest.approx((ref.statistic, ref.pvalue))
    # the fallback p-value, without scipy
    assert 2 * stats._t_sf_fallback(abs(t), df) == pytest.approx(ref.pvalue, rel=1e-7)


def test_too_few_runs_give_no_interval_and_no_verdict():
    mean, std, low, high = stats.mean_ci([1.0])
    assert mean == 1.0 and math.isnan(std) and math.isnan(low)
    assert stats.welch([1.0], [1.0, 2.0])[2] is None
    assert stats.welch([1.0, 1.0], [2.0, 2.0])[2] == 0.0  # no spread, different means

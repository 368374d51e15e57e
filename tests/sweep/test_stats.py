"""labkit.stats against scipy's own tests and numpy's percentile (independent implementations)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import stats as scipy_stats

from labkit import stats


@pytest.mark.parametrize("q,df,table", [(0.975, 1, 12.706), (0.975, 4, 2.776), (0.975, 30, 2.042), (0.995, 7, 3.499),
                                        (0.9, 2, 1.886)])
def test_t_quantile_and_tail_are_the_printed_tables(q, df, table):
    assert stats.t_quantile(q, df) == pytest.approx(table, abs=5e-4)
    assert stats.t_sf(stats.t_quantile(q, df), df) == pytest.approx(1 - q, rel=1e-9)


def test_mean_ci_and_welch_match_scipy():
    a, b = [97.1, 98.6, 97.9, 98.2], [98.0, 98.3, 97.6]
    mean, std, low, high = stats.mean_ci(a)
    ref_low, ref_high = scipy_stats.t.interval(0.95, len(a) - 1, loc=sum(a) / 4, scale=scipy_stats.sem(a))
    assert (low, high) == pytest.approx((ref_low, ref_high))
    assert std == pytest.approx(scipy_stats.tstd(a))
    t, df, p = stats.welch(a, b)
    ref = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert (t, p) == pytest.approx((ref.statistic, ref.pvalue))


def test_too_few_runs_give_no_interval_and_no_verdict():
    mean, std, low, high = stats.mean_ci([1.0])
    assert mean == 1.0 and math.isnan(std) and math.isnan(low)
    assert stats.welch([1.0], [1.0, 2.0])[2] is None
    assert stats.welch([1.0, 1.0], [2.0, 2.0])[2] == 0.0  # no spread, different means


@pytest.mark.parametrize("values", [[3.0, 1.0], [1.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0], [5.0, 1.0, 9.0, 2.0, 7.0, 3.0]])
def test_percentile_is_numpys_linear_rule(values):
    for q in (0, 25, 50, 75, 90, 100):
        assert stats.percentile(values, q) == pytest.approx(np.percentile(values, q))
    # the rule statistics.quantiles(..., method="inclusive") also names
    if len(values) >= 2:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
        assert (stats.percentile(values, 25), stats.percentile(values, 75)) == pytest.approx((q1, q3))


def test_percentile_of_nothing_is_nan():
    assert math.isnan(stats.percentile([], 50))

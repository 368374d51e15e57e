"""The class page's box (the middle half of the class) is drawn at numpy's quartiles: labkit's one
percentile rule (labkit.stats.percentile), the one sweeps and the inference exercise report with."""

from __future__ import annotations

import re

import numpy as np
import pytest

from labkit.grading.reports.class_page import _figure, _fmt


def _rows(values):
    return [{"parameter_value": "8", "kind": "testbed", "value": v, "student": "s{:03d}".format(i), "run": "r",
             "where": "testbed"} for i, v in enumerate(values)]


@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0, 4.0, 10.0], [5.0, 1.0, 9.0, 2.0, 7.0, 3.0, 4.0, 8.0],
                                    [2.0, 6.0], [1.0, 2.0, 9.0]])
def test_the_middle_half_is_numpys_quartiles(values):
    svg = _figure(_rows(values), set(), "t", "s", "batch_size", "f")
    shown = re.findall(r"middle half of the class \(testbed\): (\S+) to (\S+)</title>", svg)
    q1, q3 = np.percentile(values, [25, 75])
    assert shown == [(_fmt(q1), _fmt(q3))]

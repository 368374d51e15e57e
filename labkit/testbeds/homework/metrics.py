"""The homework's overview record's metrics: how many runs each section found.

The runs each section shows keep their own exercise's table; the overview only counts them, so a
grader sees at a glance which testbeds a student handed nothing in for.
"""

from __future__ import annotations

from typing import Mapping

from labkit.metrics import Metric, MetricTable
from labkit.testbeds.homework.homeworks import Section

__all__ = ["runs_metric", "overview_table"]


def runs_metric(testbed: str) -> str:
    """The overview's metric that counts ``testbed``'s runs ("graphcore_runs")."""
    return "{}_runs".format(testbed)


def overview_table(name: str, sections: Mapping[str, Section]) -> MetricTable:
    """The table of the overview record ``name``: one count of runs per section (by testbed)."""
    return MetricTable(
        (name,),
        *(Metric(runs_metric(testbed), "", "runs of {} found in logs/{}/ and runs/{}/ (testbed logs, lab-book "
                                           "notebooks and sweeps)".format(section.exercise, testbed, testbed),
                 primary=True)
          for testbed, section in sections.items()),
    )

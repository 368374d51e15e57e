"""The homework's own metrics: what its overview record (``homework/ai_testbeds``) counts.

    from labkit.testbeds.homework.metrics import HOMEWORK_METRICS
    HOMEWORK_METRICS.frame()         # name, unit, meaning (2024's overview)
    HOMEWORK_2025_METRICS.frame()    # 2025's overview
    metrics_for(homework)            # the overview table of either

The runs each section shows keep their own exercise's table (graphcore/mnist, cerebras/bert_large,
...); the overview only says how many of them were found, so a grader sees at a glance which
testbeds a student handed nothing in for.
"""

from __future__ import annotations

from labkit.metrics import Metric, MetricTable
from labkit.testbeds.homework.spec import HOMEWORK_2024, Homework
from labkit.testbeds.homework.spec_2025 import HOMEWORK_2025

__all__ = ["HOMEWORK_METRICS", "HOMEWORK_2025_METRICS", "runs_metric", "metrics_for"]


def runs_metric(testbed: str) -> str:
    """The overview's metric that counts ``testbed``'s runs ("graphcore_runs")."""
    return "{}_runs".format(testbed)


def _overview_table(homework: Homework) -> MetricTable:
    return MetricTable(
        (homework.name,),
        *(Metric(runs_metric(testbed), "", "runs of {} found in logs/{}/ and runs/{}/ (testbed logs, lab-book "
                                           "notebooks and sweeps)".format(exercise.exercise, testbed, testbed),
                 primary=True)
          for testbed, exercise in homework.testbeds.items()),
    )


HOMEWORK_METRICS = _overview_table(HOMEWORK_2024)
HOMEWORK_2025_METRICS = _overview_table(HOMEWORK_2025)


def metrics_for(homework: Homework) -> MetricTable:
    """The overview table of ``homework``'s record."""
    return HOMEWORK_2025_METRICS if homework.name == HOMEWORK_2025.name else HOMEWORK_METRICS

"""The homework's own metrics: what its overview record (``homework/ai_testbeds``) counts.

    from labkit.testbeds.homework.metrics import HOMEWORK_METRICS
    HOMEWORK_METRICS.frame()         # name, unit, meaning

The runs each section shows keep their own exercise's table (graphcore/mnist, cerebras/bert_large,
...); the overview only says how many of them were found, so a grader sees at a glance which
testbeds a student handed nothing in for.
"""

from __future__ import annotations

from labkit.metrics import Metric, MetricTable
from labkit.testbeds.homework.spec import HOMEWORK_SPEC, TESTBEDS

__all__ = ["HOMEWORK_METRICS", "runs_metric"]


def runs_metric(testbed: str) -> str:
    """The overview's metric that counts ``testbed``'s runs ("graphcore_runs")."""
    return "{}_runs".format(testbed)


HOMEWORK_METRICS = MetricTable(
    (HOMEWORK_SPEC.name,),
    *(Metric(runs_metric(testbed), "", "runs of {} found in logs/{}/ and runs/{}/ (testbed logs, lab-book notebooks "
                                       "and sweeps)".format(exercise.exercise, testbed, testbed), primary=True)
      for testbed, exercise in TESTBEDS.items()),
)

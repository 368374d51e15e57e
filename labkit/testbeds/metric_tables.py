"""Every exercise's table of metrics, found by the exercise name a run records.

    from labkit.testbeds.metric_tables import table_for
    table_for("graphcore/mnist").primary       # ('test_accuracy', 'train_throughput', 'epoch_time')
    table_for("acme/unknown")                  # None
    print(markdown())                          # docs/metrics.md

Sweeps (primary metrics first, timings marked) and the tests that hold runs and log readers to
their tables look tables up here; an exercise's own code imports its ``metrics`` module directly.
A new exercise adds its table to ``TABLES``.
"""

from __future__ import annotations

from typing import Optional, Tuple

from labkit.metrics import MetricTable
from labkit.testbeds.cerebras.llama2_7b.metrics import LLAMA_METRICS
from labkit.testbeds.cerebras.metrics import BERT_METRICS as CEREBRAS_METRICS
from labkit.testbeds.comparison.metrics import SCALING_METRICS
from labkit.testbeds.graphcore.metrics import BERT_METRICS as GRAPHCORE_BERT_METRICS
from labkit.testbeds.graphcore.metrics import MNIST_METRICS
from labkit.testbeds.groq.metrics import BERT_TINY_METRICS
from labkit.testbeds.homework import fall2024, fall2025
from labkit.testbeds.sambanova.inference.metrics import INFERENCE_METRICS
from labkit.testbeds.sambanova.metrics import BERT_METRICS as SAMBANOVA_METRICS

__all__ = ["TABLES", "table_for", "markdown"]

#: One table per exercise (a table may serve several exercises that record the same metrics).
TABLES: Tuple[MetricTable, ...] = (MNIST_METRICS, GRAPHCORE_BERT_METRICS, CEREBRAS_METRICS, LLAMA_METRICS,
                                   SAMBANOVA_METRICS, INFERENCE_METRICS, BERT_TINY_METRICS, SCALING_METRICS,
                                   fall2024.METRICS, fall2025.METRICS)


def table_for(exercise: str) -> Optional[MetricTable]:
    """The table of ``exercise`` ("graphcore/mnist"), or None for an exercise without one."""
    for table in TABLES:
        if exercise in table.exercises:
            return table
    return None


def markdown() -> str:
    """docs/metrics.md: every table, under the exercises it serves."""
    parts = ["# Metrics of each exercise", "",
             "Written by `labkit.testbeds.metric_tables.markdown()` from the tables in "
             "`labkit/testbeds/<exercise>/metrics.py`; tests/test_metric_tables.py checks that this page is current. "
             "*Primary*: what a sweep's summary leads with. *Timing*: a time or a speed, which depends on the machine "
             "and its load; sweeps give it per worker share.", ""]
    for table in TABLES:
        parts += ["## " + table.title, "", table.markdown(), ""]
    return "\n".join(parts)

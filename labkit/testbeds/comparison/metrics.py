"""The scaling study's metrics; the per-configuration throughputs and speed-ups are series
(``throughput_mb10``: throughput against replicas at micro-batch 10), not metrics."""

from __future__ import annotations

from labkit.metrics import Metric, MetricTable

__all__ = ["METRICS"]

METRICS = MetricTable(
    ("comparison/ipu_vs_gpu",),
    Metric("best_throughput", "images/s", "the highest training throughput of the configurations that completed "
                                          "(all replicas together)", primary=True, timing=True),
    Metric("configurations", "", "replica x micro-batch configurations measured"),
    Metric("diverged", "", "configurations whose loss diverged (NaN/inf or 10x its start)"),
)

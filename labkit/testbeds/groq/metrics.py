"""The Groq exercise's metrics: every backend (``cpu``, ``onnxruntime``, ``cuda``, ``groq``) records
the same ones under its own prefix (``cpu_accuracy``, ``groq_e2e_latency_ms``), as GroqFlow's result
table names its rows; the MiniLM proof point (``groq/minilm``) scores a Spearman coefficient."""

from __future__ import annotations

from typing import List

from labkit.metrics import Metric, MetricTable
from labkit.testbeds.groq.backends import BACKENDS
from labkit.testbeds.groq.spec import EXERCISE

__all__ = ["METRICS", "TABLE_COLUMNS"]

#: GroqFlow's result table after its Source column: each column's metric name (after "<source>_")
#: and its header (the second column is Accuracy or, for MiniLM, the Spearman coefficient).
TABLE_COLUMNS = (("accuracy", "Accuracy"), ("spearman", "Spearman Rank Correlation Coefficient"),
                 ("e2e_latency_ms", "end-to-end latency (ms)"), ("e2e_ips", "end-to-end IPS"),
                 ("onchip_latency_ms", "on-chip latency (ms)"), ("onchip_ips", "on-chip IPS"))


def _per_backend(backend: str) -> List[Metric]:
    on = "on the {} backend".format(backend)
    onchip = [] if backend != "groq" else [
        Metric("groq_onchip_latency_ms", "ms", "milliseconds per inference on the GroqChip alone (no host "
                                               "transfers)", timing=True),
        Metric("groq_onchip_ips", "inferences/s", "inferences per second on the GroqChip alone", timing=True)]
    found = [
        Metric(backend + "_accuracy", "%", "share of the evaluation texts classified right " + on, primary=True),
        Metric(backend + "_spearman", "", "Spearman correlation with the reference similarity scores " + on
               + " (MiniLM)", primary=True),
        Metric(backend + "_e2e_latency_ms", "ms", "milliseconds per inference end to end " + on + (
            ", host transfers included, timed by GroqFlow's benchmark on the compile-time inputs" if backend == "groq"
            else ", timed over the dataset loop"), primary=True, timing=True),
        Metric(backend + "_e2e_ips", "inferences/s", "inferences per second end to end " + on, timing=True),
    ] + onchip + [
        Metric(backend + "_loop_latency_ms", "ms", "milliseconds per inference over the dataset loop " + on,
               timing=True),
        Metric(backend + "_compile_input_latency_ms", "ms", "milliseconds per inference on the inputs given at "
               "compile time " + on, timing=True),
    ]
    if backend != "cpu":
        found.append(Metric(backend + "_disagreements", "", "evaluation texts where the {} backend's prediction "
                            "differs from the cpu backend's".format(backend)))
    return found


METRICS = MetricTable(
    (EXERCISE, "groq/minilm"),
    *[metric for backend in BACKENDS for metric in _per_backend(backend)],
    Metric("groq_vs_cpu_e2e_speedup", "x", "groq_e2e_ips / cpu_e2e_ips, from the log's table (the two rows time "
                                           "different inputs: see the run's notes)", timing=True),
    Metric("samples", "", "evaluation texts scored"),
    Metric("build_cached", "", "True when GroqFlow loaded the build from its cache (no compile in this run)"),
)

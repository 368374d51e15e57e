"""The inference exercise's metrics: what a measured run and a read piece of evidence record.

A run's metrics are the counts of the whole run and the figures of its *reference configuration*
(the first endpoint at the lowest concurrency level); every configuration's figures are series
(``ttft_median_time:batched`` against concurrency) and rows of ``run.details``. Client-side times
and the server's own times (``server_`` names, from SambaNova's ``usage``) are never one metric.
"""

from __future__ import annotations

from typing import Optional

from labkit.metrics import Metric, MetricTable
from labkit.results import Run
from labkit.testbeds.sambanova.inference.spec import EXERCISE

__all__ = ["METRICS", "HEADLINE", "SERVER_FIELDS", "add_counts"]

METRICS = MetricTable(
    (EXERCISE,),
    Metric("ttft_median", "s", "client-side time to first token (first streamed chunk with a choice, from the "
                               "send), median over the reference configuration's requests", primary=True, timing=True),
    Metric("tpot_median", "s", "client-side time per output token after the first: (E2EL - TTFT) / (output "
                               "tokens - 1), median", primary=True, timing=True),
    Metric("e2el_median", "s", "client-side end-to-end latency (send to the last token chunk), median",
           primary=True, timing=True),
    Metric("itl_median", "s", "client-side gap between consecutive streamed chunks, median", timing=True),
    Metric("output_throughput", "tokens/s", "output tokens of the completed requests / the batch's duration "
                                            "(prompt tokens are not generated, so not counted)", primary=True,
           timing=True),
    Metric("request_throughput", "requests/s", "completed requests / the batch's duration", timing=True),
    Metric("request_goodput_rate", "requests/s", "completed requests meeting every latency target / the batch's "
                                                 "duration", timing=True),
    Metric("server_ttft_median", "s", "the server's own time to first token (usage.time_to_first_token, as "
                                      "SambaNova reports it), median: no network, gateway or client in it",
           timing=True),
    Metric("server_total_latency_median", "s", "the server's own total latency (usage.total_latency), median",
           timing=True),
    Metric("server_decode_rate_median", "tokens/s", "the server's own output tokens per second after the first "
                                                    "(usage.completion_tokens_after_first_per_sec), median",
           timing=True),
    Metric("requests", "", "measured requests sent (warm-up requests not included)", primary=True),
    Metric("requests_completed", "", "requests that streamed to their end"),
    Metric("requests_failed", "", "requests that failed (any status: 401, 404, 429, timeout, interrupted ...); "
                                  "never dropped", primary=True),
    Metric("warmup_requests", "", "requests sent first to each endpoint and left out of every figure"),
    Metric("output_tokens", "", "output tokens of the completed requests, all configurations"),
    Metric("output_tokens_per_request", "", "output tokens per completed request, mean"),
    Metric("token_count_source", "", "where output token counts come from: 'server usage', 'tokenizer' or "
                                     "'chunks' (one token per streamed chunk: an estimate)"),
    Metric("endpoints", "", "endpoints compared"),
    Metric("concurrency_levels", "", "concurrency levels measured"),
)

#: SambaNova's timing fields in ``usage`` (labkit's stand-in sends them too) and their metrics.
SERVER_FIELDS = (("time_to_first_token", "server_ttft_median"), ("total_latency", "server_total_latency_median"),
                 ("completion_tokens_after_first_per_sec", "server_decode_rate_median"))
#: The client-side figures a run records for its reference configuration, with their metric names.
HEADLINE = (("ttft_median_s", "ttft_median"), ("tpot_median_s", "tpot_median"), ("e2el_median_s", "e2el_median"),
            ("itl_median_s", "itl_median"), ("output_throughput", "output_throughput"),
            ("request_throughput", "request_throughput"), ("goodput", "request_goodput_rate"))


def add_counts(run: Run, requests: int, completed: int, tokens: Optional[int], source: str) -> None:
    """The counts every record holds, a measured run's and a piece of evidence's alike."""
    METRICS.add(run, "requests", requests)
    METRICS.add(run, "requests_completed", completed)
    METRICS.add(run, "requests_failed", requests - completed)
    if tokens is not None:
        METRICS.add(run, "output_tokens", tokens)
        if completed:
            METRICS.add(run, "output_tokens_per_request", round(tokens / completed, 3))
        METRICS.add(run, "token_count_source", source)

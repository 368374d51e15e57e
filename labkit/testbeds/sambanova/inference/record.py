"""A measured comparison as one labkit run: counts, the reference configuration's figures, series.

What a record holds is what the golden copy and grading compare: the counts (requests, failures by
status, output tokens, warm-ups) are exact; every time is a timing (tests/golden skip them).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from labkit.results import Run
from labkit.testbeds.sambanova.inference.metrics import HEADLINE, METRICS, SERVER_FIELDS
from labkit.testbeds.sambanova.inference.results_json import add_counts
from labkit.testbeds.sambanova.inference.notes import (STAND_IN, comparison_notes, failure_notes, load_label, load_notes,
                                                          rated)
from labkit.testbeds.sambanova.inference.summary import configuration_rows, server_rows

__all__ = ["as_run", "SERIES"]

#: Series per endpoint against concurrency: (row key, series name). Every name holds a timing word.
SERIES = (("ttft_median_s", "ttft_median_time"), ("tpot_median_s", "tpot_median_time"),
          ("e2el_median_s", "e2el_median_latency"), ("output_throughput", "output_throughput"))


def _finite(value: Any) -> Any:
    return value if isinstance(value, (int, float)) else float("nan")


def as_run(config: Any, endpoints: Sequence[Any], measured: Any, targets: Mapping[str, float],
           source: str = "portable") -> Run:
    run = Run("sambanova/inference", source=source, status="complete", params=config.to_dict())
    rows = configuration_rows(measured.batches)
    reference = [r for r in rows if r["endpoint"] == endpoints[0].name][:1]
    label = load_label(reference[0]) if reference else "concurrency {}".format(config.concurrency[0])
    run.environment["reference_configuration"] = "{} at {}".format(endpoints[0].name, label)
    run.environment["served_by"] = {e.name: (STAND_IN if e.local else e.what) for e in endpoints}
    server = server_rows(measured.batches)
    traces = measured.traces
    done = [t for t in traces if t.ok]
    failed = [t for t in traces if not t.ok]
    add = METRICS.add
    sources = sorted({t.token_source for t in done if t.token_source})
    tokens = sum(t.output_tokens or 0 for t in done)
    add_counts(run, len(traces), len(done), tokens, ", ".join(sources) or "none")
    add(run, "warmup_requests", len(measured.warmup))
    add(run, "endpoints", len(endpoints))
    add(run, "concurrency_levels", len(config.concurrency))
    if reference and reference[0]["completed"]:
        for key, name in HEADLINE:
            if key == "goodput" and not targets:
                continue
            add(run, name, _finite(reference[0][key]))
        for row in server:
            if row["endpoint"] == endpoints[0].name and row["load"] == reference[0]["load"]:
                for _field, name in SERVER_FIELDS:
                    add(run, name, row[name])
    for endpoint in endpoints:
        mine = [r for r in rows if r["endpoint"] == endpoint.name]
        for key, name in SERIES:
            run.add_series("{}:{}".format(name, endpoint.name), [r["load"] for r in mine],
                           [_finite(r[key]) for r in mine], x_label="request rate" if rated(rows) else "concurrency")
    failures = failure_notes(traces + measured.warmup, endpoints, config.timeout_s)
    run.notes.extend(failures)
    run.notes.extend(comparison_notes(endpoints, rows, server, config.warmup_requests, sources))
    run.notes.extend(load_notes(rows, measured.knees, getattr(config, "burstiness", 1.0)))
    run.notes.extend(getattr(measured, "readiness", []))
    if measured.stopped:
        run.mark_interrupted(measured.stopped, "the batches measured before the stop are kept, the one in flight "
                                               "has its completed requests and its others marked interrupted")
    elif traces and not done:
        run.status = "failed"
    elif failed:
        run.status = "incomplete"
    run.environment["endpoints"] = [{"name": e.name, "base_url": e.base_url, "model": e.model, "served_by": e.what,
                                     "token_from": e.api_key.source} for e in endpoints]
    run.details = {"requests": [t.row() for t in traces], "rows": rows, "server": server,  # type: ignore[attr-defined]
                   "warmup": [t.row() for t in measured.warmup], "traces": traces, "knees": measured.knees}
    return run


"""From measured batches to one row per configuration (endpoint x load): the mean over repeats of
each repeat's figure with its 95 % Student-t interval (NaN with one repeat); the server's own
timings apart (:func:`server_rows`), never a client-side figure.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Dict, List, Sequence, Tuple

from labkit import stats
from labkit.testbeds.sambanova.inference.metrics import SERVER_FIELDS
from labkit.testbeds.sambanova.inference.timing import STATS, percentile

__all__ = ["FIGURES", "configuration_rows", "server_rows", "overlap"]

#: The client-side figures summarized per configuration (seconds, or per second for throughputs).
FIGURES = tuple("{}_{}_s".format(name, stat) for name in ("ttft", "tpot", "itl", "e2el", "ttft_answer")
                for stat in STATS) + ("output_throughput", "request_throughput", "goodput", "late_max_s")


def _interval(values: Sequence[float]) -> Tuple[float, Tuple[float, float]]:
    finite = [v for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    if not finite:
        return float("nan"), (float("nan"), float("nan"))
    if len(finite) == 1:
        return finite[0], (float("nan"), float("nan"))
    mean, _std, low, high = stats.mean_ci(finite)
    return mean, (low, high)


def overlap(a: Tuple[float, float], b: Tuple[float, float]) -> bool:
    """Whether two intervals share a point (NaN bounds: unknown, so treated as overlapping)."""
    if any(math.isnan(x) for x in a + b):
        return True
    return a[0] <= b[1] and b[0] <= a[1]


def _by_configuration(batches: Sequence[Any]) -> Dict[Tuple[str, int, Any], List[Any]]:
    """Batches grouped by (endpoint, concurrency, request rate), in the order measured."""
    groups: Dict[Tuple[str, int, Any], List[Any]] = {}
    for batch in batches:
        groups.setdefault((batch.endpoint, batch.concurrency, getattr(batch, "rate", None)), []).append(batch)
    return groups


def _summed(group: Sequence[Any], key: str) -> Dict[str, int]:
    return dict(sum((Counter(b.figures.get(key, {})) for b in group), Counter()))


def configuration_rows(batches: Sequence[Any]) -> List[Dict[str, Any]]:
    """One row per (endpoint, load), in the order measured; ``load`` is the concurrency, or the
    request rate (``request_rate`` then set, ``concurrency`` the cap)."""
    rows = []
    for (endpoint, level, rate), group in _by_configuration(batches).items():
        failed = _summed(group, "failed_by_status")
        completed = sum(b.figures["completed"] for b in group)
        tokens = sum(b.figures["output_tokens"] for b in group)
        sources = sorted({t.token_source for b in group for t in b.traces if t.ok and t.token_source})
        row: Dict[str, Any] = {"endpoint": endpoint, "concurrency": level, "repeats": len(group),
                               "requests": sum(b.figures["requests"] for b in group), "completed": completed,
                               "failed": sum(failed.values()), "failed_by_status": failed, "output_tokens": tokens,
                               "tokens_per_request": tokens / completed if completed else float("nan"),
                               "token_source": ", ".join(sources) or "none", "request_rate": rate,
                               "load": rate if rate is not None else level,
                               "finish_reasons": _summed(group, "finish_reasons"),
                               "empty_answers": sum(b.figures.get("empty_answers", 0) for b in group)}
        for part in ("reasoning_tokens", "answer_tokens"):
            total = sum(b.figures.get(part, 0) for b in group)
            row[part + "_per_request"] = total / completed if completed else float("nan")
        for figure in FIGURES:
            row[figure], row[figure + "_ci"] = _interval([b.figures.get(figure, float("nan")) for b in group])
        rows.append(row)
    return rows


def server_rows(batches: Sequence[Any]) -> List[Dict[str, Any]]:
    """Per (endpoint, concurrency): medians of the server's own timings beside the client's, for
    the requests whose usage carried them; empty when no server sent any."""
    rows = []
    for (endpoint, level, rate), group in _by_configuration(batches).items():
        timed = [t for b in group for t in b.traces if t.ok and t.ttft is not None
                 and isinstance(t.usage.get("time_to_first_token"), (int, float))]
        if not timed:
            continue
        row: Dict[str, Any] = {"endpoint": endpoint, "concurrency": level, "requests": len(timed),
                               "request_rate": rate, "load": rate if rate is not None else level}
        for field, name in SERVER_FIELDS:
            values = [t.usage[field] for t in timed if isinstance(t.usage.get(field), (int, float))]
            row[name] = percentile(values, 50)
        row["client_ttft_s"] = percentile([t.ttft for t in timed], 50)
        row["client_e2el_s"] = percentile([t.e2el for t in timed], 50)
        rows.append(row)
    return rows

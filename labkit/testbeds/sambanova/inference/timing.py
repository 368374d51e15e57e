"""What one request's stream says about time, by the definitions of ``vllm bench serve``
(vllm/benchmarks/serve.py, ``calculate_metrics``), and a configuration's figures over its repeats;
docs/sambanova.md, "What is measured", says where labkit differs (TTFT is the first chunk with text).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from labkit import stats
from labkit.testbeds.sambanova.inference.metrics import SERVER_FIELDS

__all__ = ["Trace", "summarize", "OK", "FIGURES", "configuration_rows", "server_rows",
           "overlap"]

#: The status of a request that streamed to its end.
OK = "ok"


@dataclass
class Trace:
    """One request as the client saw it. Times are ``time.perf_counter()`` seconds.

    ``status``: "ok", or why it failed ("401", "429", "timeout", "connection", "interrupted", ...);
    ``token_source``: where ``output_tokens`` came from ("server usage", "tokenizer" or "chunks");
    ``answer_times``: the chunks of answer (``content``) among ``chunk_times``; ``scheduled``: under a
    request rate, when it was due (seconds after the batch began); ``late``: how late it was sent.
    """

    endpoint: str = ""
    concurrency: int = 1
    repeat: int = 0
    index: int = 0
    start: float = 0.0
    chunk_times: List[float] = field(default_factory=list)  # one per chunk with text
    status: str = OK
    http_status: Optional[int] = None
    error: str = ""
    text: str = ""
    output_tokens: Optional[int] = None
    token_source: str = ""
    usage: Dict[str, Any] = field(default_factory=dict)
    answer_times: List[float] = field(default_factory=list)
    reasoning_text: str = ""
    finish_reason: Optional[str] = None
    reasoning_tokens: Optional[int] = None
    answer_tokens: Optional[int] = None
    scheduled: Optional[float] = None
    late: Optional[float] = None

    @property
    def ok(self) -> bool:
        """Streamed to its end with tokens, or ended at max_tokens with nothing shown (all reasoning, hidden)."""
        return self.status == OK and (bool(self.chunk_times) or self.finish_reason == "length")

    @property
    def empty_answer(self) -> bool:
        """Completed with no answer text: max_tokens spent on reasoning (finish_reason "length")."""
        return self.ok and not self.answer_times and self.finish_reason == "length"

    @property
    def ttft(self) -> Optional[float]:
        """Time to the first token of any kind (reasoning or answer), as vLLM's benchmark times it."""
        return self.chunk_times[0] - self.start if self.ok and self.chunk_times else None

    @property
    def ttft_answer(self) -> Optional[float]:
        """Time to the first answer token (None when the answer is empty)."""
        return self.answer_times[0] - self.start if self.ok and self.answer_times else None

    @property
    def e2el(self) -> Optional[float]:
        return self.chunk_times[-1] - self.start if self.ok and self.chunk_times else None

    @property
    def itl(self) -> List[float]:
        times = self.chunk_times if self.ok else []
        return [b - a for a, b in zip(times, times[1:])]

    @property
    def tpot(self) -> Optional[float]:
        """None for a request with at most one output token (vLLM leaves it out of TPOT statistics)."""
        if not self.ok or not self.chunk_times or not self.output_tokens or self.output_tokens < 2:
            return None
        return (self.e2el - self.ttft) / (self.output_tokens - 1)  # type: ignore[operator]

    def row(self) -> Dict[str, Any]:
        """One row of the per-request table (client-side times only)."""
        return {"endpoint": self.endpoint, "concurrency": self.concurrency, "repeat": self.repeat,
                "prompt": self.index, "status": self.status, "output_tokens": self.output_tokens,
                "token_source": self.token_source, "ttft_s": self.ttft, "tpot_s": self.tpot, "e2el_s": self.e2el,
                "chunks": len(self.chunk_times), "finish_reason": self.finish_reason,
                "reasoning_tokens": self.reasoning_tokens, "answer_tokens": self.answer_tokens,
                "ttft_answer_s": self.ttft_answer, "empty_answer": self.empty_answer, "scheduled_s": self.scheduled,
                "late_s": self.late}


def summarize(traces: Sequence[Trace], duration: float, targets: Optional[Mapping[str, float]] = None) -> Dict[str, Any]:
    """The figures of one measured batch; ``duration``: first send to the last end; ``targets``:
    goodput targets in seconds by name ("ttft", "tpot", "e2el"), none: goodput is NaN."""
    done = [t for t in traces if t.ok]
    failed = dict(Counter(t.status for t in traces if not t.ok))
    tokens = sum(t.output_tokens or 0 for t in done)
    finishes = dict(Counter(t.finish_reason or "unknown" for t in done))
    figures: Dict[str, Any] = {"requests": len(traces), "completed": len(done), "failed": sum(failed.values()),
                               "failed_by_status": failed, "output_tokens": tokens, "duration_s": duration,
                               "finish_reasons": finishes, "empty_answers": sum(t.empty_answer for t in done),
                               "reasoning_tokens": sum(t.reasoning_tokens or 0 for t in done),
                               "answer_tokens": sum(t.answer_tokens or 0 for t in done)}
    lates = [t.late for t in traces if t.late is not None]
    figures["late_max_s"] = max(lates) if lates else float("nan")
    per = duration if duration > 0 else float("nan")
    figures["request_throughput"] = len(done) / per
    figures["output_throughput"] = tokens / per
    for name, values in (("ttft", [t.ttft for t in done if t.ttft is not None]),
                         ("tpot", [t.tpot for t in done if t.tpot is not None]),
                         ("itl", [gap for t in done for gap in t.itl]), ("e2el", [t.e2el for t in done if t.e2el is not None]),
                         ("ttft_answer", [t.ttft_answer for t in done if t.ttft_answer is not None])):
        figures[name + "_mean_s"] = sum(values) / len(values) if values else float("nan")  # type: ignore
        for stat, q in (("median", 50), ("p90", 90), ("p99", 99)):
            figures["{}_{}_s".format(name, stat)] = stats.percentile(values, q)  # type: ignore[arg-type]
    figures["good"] = sum(_meets(t, targets) for t in done) if targets else None
    figures["goodput"] = figures["good"] / per if targets else float("nan")
    return figures


def _meets(trace: Trace, targets: Mapping[str, float]) -> bool:
    """Whether a completed request meets every latency target (a one-token request counts as TPOT 0)."""
    measured = {"ttft": trace.ttft, "tpot": trace.tpot if trace.tpot is not None else 0.0, "e2el": trace.e2el}
    return all(measured[name] is not None and measured[name] <= limit for name, limit in targets.items())


#: The client-side figures summarized per configuration (seconds, or per second for throughputs).
FIGURES = tuple("{}_{}_s".format(name, stat) for name in ("ttft", "tpot", "itl", "e2el", "ttft_answer")
                for stat in ("mean", "median", "p90", "p99")) + (
    "output_throughput", "request_throughput", "goodput", "late_max_s")


def _interval(values: Sequence[float]) -> Tuple[float, Tuple[float, float]]:
    """The mean and its 95 % interval (NaN from fewer than two values)."""
    mean, _std, low, high = stats.mean_ci([v for v in values if isinstance(v, (int, float)) and not math.isnan(v)])
    return mean, (low, high)


def overlap(a: Tuple[float, float], b: Tuple[float, float]) -> bool:
    """Whether two intervals share a point (NaN bounds: unknown, so treated as overlapping)."""
    return any(math.isnan(x) for x in a + b) or (a[0] <= b[1] and b[0] <= a[1])


def _by_configuration(batches: Sequence[Any]) -> Dict[Tuple[str, int, Any], List[Any]]:
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
        for key, name in SERVER_FIELDS:
            values = [t.usage[key] for t in timed if isinstance(t.usage.get(key), (int, float))]
            row[name] = stats.percentile(values, 50)
        row["client_ttft_s"] = stats.percentile([t.ttft for t in timed], 50)
        row["client_e2el_s"] = stats.percentile([t.e2el for t in timed], 50)
        rows.append(row)
    return rows

"""A student's own JSON of results, read per request, and what its own statistics got wrong.

The shapes are docs/logs.md's (tests/sambanova/evidence/ holds one of each). Output tokens are
completion tokens, never total tokens: prompt tokens are read, not generated.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labkit.results import Run
from labkit.testbeds.sambanova.inference.metrics import METRICS
from labkit.testbeds.sambanova.inference.notes import several_models
from labkit.testbeds.sambanova.inference.timing import percentile

__all__ = ["Group", "result_groups", "fill_results", "add_counts", "endpoint_name", "latency",
           "completion_tokens"]

_LATENCY_KEYS = (("latency_sec", 1.0), ("latency_s", 1.0), ("latency_seconds", 1.0), ("latency", 1.0),
                 ("e2e_latency", 1.0), ("e2el", 1.0), ("elapsed", 1.0), ("elapsed_s", 1.0), ("time_s", 1.0),
                 ("duration", 1.0), ("latency_ms", 1e-3), ("e2e_latency_ms", 1e-3))
_TTFT_KEYS = (("ttft", 1.0), ("ttft_s", 1.0), ("ttft_sec", 1.0), ("time_to_first_token", 1.0), ("ttft_ms", 1e-3))
_COMPLETION_KEYS = ("completion_tokens", "output_tokens", "generated_tokens")
_THROUGHPUT_KEYS = ("throughput_tokens_per_sec", "throughput_tokens_per_second", "tokens_per_sec",
                    "tokens_per_second", "throughput")
_CONCURRENCY_KEYS = ("concurrency", "max_concurrency", "num_workers", "workers", "parallel_requests")
_START_KEYS = ("start_time", "started_at", "sent_at", "request_start", "timestamp")
_LIST_KEYS = ("results", "requests", "responses", "runs", "data")


class Group:
    """One endpoint's requests in the file, with the block's statistics and what the block says about it."""

    def __init__(self, name: str, items: List[Dict[str, Any]], block: Dict[str, Any], top: Dict[str, Any]) -> None:
        self.name = name
        self.items = items
        self.statistics = next((block[k] for k in ("statistics", "stats", "summary") if isinstance(block.get(k), dict)),
                               None)
        models = top.get("models") if isinstance(top.get("models"), dict) else {}
        self.model = str(block.get("model") or models.get(name) or next(
            (m for m in (_nested(i, "model") for i in items) if isinstance(m, str)), "") or "")
        self.concurrency = next((_number(d.get(k)) for d in (block, self.statistics or {}, top)
                                 for k in _CONCURRENCY_KEYS if _number(d.get(k)) is not None), None)


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _nested(item: Dict[str, Any], key: str) -> Any:
    """``item[key]``, else the same key in its ``usage`` or ``metadata`` (where scripts put the server's counts)."""
    if key in item:
        return item[key]
    for holder in ("usage", "metadata"):
        inner = item.get(holder)
        if isinstance(inner, dict) and key in inner:
            return inner[key]
    return None


def _scaled(item: Dict[str, Any], keys: Sequence[Tuple[str, float]]) -> Optional[float]:
    for key, scale in keys:
        value = _number(item.get(key))
        if value is not None:
            return value * scale
    return None


def latency(item: Dict[str, Any]) -> Optional[float]:
    return _scaled(item, _LATENCY_KEYS)


def completion_tokens(item: Dict[str, Any]) -> Optional[int]:
    """The tokens generated: completion tokens, else total less prompt tokens; never the total alone."""
    for key in _COMPLETION_KEYS:
        value = _number(_nested(item, key))
        if value is not None:
            return int(value)
    total, prompt = _number(_nested(item, "total_tokens")), _number(_nested(item, "prompt_tokens"))
    return int(total - prompt) if total is not None and prompt is not None else None


def _total_tokens(item: Dict[str, Any]) -> Optional[float]:
    total = _number(_nested(item, "total_tokens"))
    if total is None:
        prompt, done = _number(_nested(item, "prompt_tokens")), completion_tokens(item)
        total = prompt + done if prompt is not None and done is not None else None
    return total


def _failed(item: Dict[str, Any]) -> bool:
    return bool(item.get("error")) or item.get("success") is False or latency(item) is None or \
        str(item.get("status", "")).lower() in ("error", "failed")


def _start(item: Dict[str, Any]) -> Optional[float]:
    for key in _START_KEYS:
        value = item.get(key)
        if _number(value) is not None:
            return float(value)
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def endpoint_name(text: Any) -> str:
    """``metis`` from ``https://inference-api.alcf.anl.gov/resource_server/metis/api/v1``; a host, or the text."""
    text = str(text or "")
    m = re.search(r"/resource_server/([\w.-]+)/", text)
    if m:
        return m.group(1)
    m = re.match(r"https?://([^/:]+)", text)
    return m.group(1) if m else text


def _items(value: Any) -> Optional[List[Dict[str, Any]]]:
    if isinstance(value, dict):
        for key in _LIST_KEYS:
            if isinstance(value.get(key), list):
                return _items(value[key])
        return None
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value) and \
            any(latency(v) is not None for v in value):
        return value
    return None


def result_groups(value: Any) -> Optional[List[Group]]:
    """The endpoints' groups of requests in a parsed JSON value; None when it is not a JSON of results."""
    top = value if isinstance(value, dict) else {}
    items = _items(value)
    if items is not None:
        named: Dict[str, List[Dict[str, Any]]] = {}
        for item in items:
            where = item.get("endpoint") or top.get("endpoint") or top.get("base_url")
            named.setdefault(endpoint_name(where), []).append(item)
        if len(named) > 1:  # requests of several endpoints in one list
            return [Group(name, group, {}, top) for name, group in named.items()]
        return [Group(next(iter(named)), items, top, top)]
    groups = [Group(str(key), _items(block) or [], block, top) for key, block in top.items()
              if isinstance(block, dict) and _items(block)]
    return groups or None


def add_counts(run: Run, requests: int, completed: int, tokens: Optional[int], source: str) -> None:
    METRICS.add(run, "requests", requests)
    METRICS.add(run, "requests_completed", completed)
    METRICS.add(run, "requests_failed", requests - completed)
    if tokens is not None:
        METRICS.add(run, "output_tokens", tokens)
        if completed:
            METRICS.add(run, "output_tokens_per_request", round(tokens / completed, 3))
        METRICS.add(run, "token_count_source", source)


class _Figures:
    """One group's figures from its completed requests."""

    def __init__(self, group: Group) -> None:
        self.done = [i for i in group.items if not _failed(i)]
        self.latencies = [latency(i) for i in self.done]
        tokens = [completion_tokens(i) for i in self.done]
        self.tokens = tokens if tokens and all(t is not None for t in tokens) else None
        ttfts = [_scaled(i, _TTFT_KEYS) for i in self.done]
        self.ttfts = [t for t in ttfts if t is not None]
        self.finish = Counter(str(_nested(i, "finish_reason") or _nested(i, "stop_reason") or "not given")
                              for i in self.done)
        elapsed = sum(self.latencies)  # type: ignore[arg-type]
        self.throughput = sum(self.tokens) / elapsed if self.tokens and elapsed > 0 else None


def _overlap(items: List[Dict[str, Any]]) -> Optional[bool]:
    """Whether two requests were in flight at once, by their start times and latencies (None: no start times)."""
    spans = sorted((s, s + (latency(i) or 0.0)) for i in items for s in [_start(i)] if s is not None)
    if len(spans) < 2:
        return None
    return any(later[0] < earlier[1] - 1e-6 for earlier, later in zip(spans, spans[1:]))


def _close(value: float, reference: Optional[float]) -> bool:
    return reference is not None and abs(value - reference) <= 0.01 * max(abs(reference), 1e-9)


def _total_rates(figures: _Figures) -> List[float]:
    """What a throughput that counts prompt tokens comes to: summed, and the mean of per-request rates."""
    totals = [_total_tokens(i) for i in figures.done]
    pairs = [(t, l) for t, l in zip(totals, figures.latencies) if t is not None and l]
    if len(pairs) < len(totals) or not pairs:
        return []
    return [sum(t for t, _ in pairs) / sum(l for _, l in pairs), sum(t / l for t, l in pairs) / len(pairs)]


def _statistics_note(group: Group, figures: _Figures, prefix: str) -> Optional[str]:
    stats = group.statistics or {}
    key = next((k for k in _THROUGHPUT_KEYS if _number(stats.get(k)) is not None), None)
    if key is None or not figures.latencies:
        return None
    claimed = float(stats[key])
    if any(_close(claimed, rate) for rate in _total_rates(figures)):
        return ("{}The results' own {} of {:.2f} tokens/s counts prompt tokens as output (total tokens / latency); "
                "the completion tokens alone, the tokens generated, give {}.".format(
                    prefix, key, claimed, "{:.2f} tokens/s".format(figures.throughput)
                    if figures.throughput is not None else "a figure these records cannot give"))
    if figures.throughput is not None and not _close(claimed, figures.throughput):
        return ("{}The results' own {} of {:.2f} tokens/s is not what the requests give: their completion tokens / "
                "summed latency is {:.2f} tokens/s, the figure recorded here.".format(
                    prefix, key, claimed, figures.throughput))
    return None


def _per_item_throughput_note(items: List[Dict[str, Any]]) -> Optional[str]:
    """Older scripts' per-request 'throughput' of (prompt + completion tokens) / latency."""
    for item in items:
        claimed, lat, done = _number(item.get("throughput")), latency(item), completion_tokens(item)
        prompt = _number(_nested(item, "prompt_tokens"))
        if None in (claimed, lat, done, prompt) or not lat:
            continue
        if abs(claimed * lat - prompt - done) < 0.02 * (prompt + done):  # type: ignore[operator]
            return ("The results' 'throughput' is (prompt + completion tokens) / latency: prompt tokens are not "
                    "generated, and without streaming prefill and decoding cannot be told apart.")
    return None


def _describe(counter: Counter) -> str:
    return ", ".join("{} {}".format(n, reason) for reason, n in counter.most_common())


def fill_results(run: Run, groups: List[Group]) -> None:
    """Metrics, per-endpoint series and notes of a JSON of results into ``run`` (a fresh "results" record)."""
    figures = [_Figures(g) for g in groups]
    several = len(groups) > 1
    tokens = [f.tokens for f in figures]
    # The counts are the whole run's, as a measured run's are (metrics.py: "all configurations"; the
    # rubric's 40 requests are both endpoints'); every figure is one endpoint's, each endpoint's
    # counts are in environment["endpoints"] and no per-request figure mixes endpoints.
    add_counts(run, sum(len(g.items) for g in groups), sum(len(f.done) for f in figures),
               sum(sum(t) for t in tokens) if all(t is not None for t in tokens) else None, "server usage")
    if several:  # a mean over both endpoints' answers is no endpoint's: the first endpoint's, like the figures
        first = figures[0]
        if first.tokens and first.done:
            METRICS.add(run, "output_tokens_per_request", round(sum(first.tokens) / len(first.done), 3))
    named = [g for g in groups if g.name]
    if named:
        METRICS.add(run, "endpoints", len(named))
        run.params["endpoint_names"] = [g.name for g in named]
        run.params["models"] = [g.model for g in named]
    run.params["num_prompts"] = len(groups[0].items)
    reference = figures[0]  # the first endpoint's figures are the record's, as in a measured run
    if reference.latencies:
        METRICS.add(run, "e2el_median", percentile(reference.latencies, 50))
    if reference.throughput is not None:
        METRICS.add(run, "output_throughput", reference.throughput)
    if reference.ttfts:
        METRICS.add(run, "ttft_median", percentile(reference.ttfts, 50))
    concurrent = [g.concurrency is not None and g.concurrency > 1 or bool(_overlap(g.items)) for g in groups]
    run.environment["endpoints"] = []
    for group, fig, many in zip(groups, figures, concurrent):
        run.environment["endpoints"].append({"name": group.name, "model": group.model, "requests": len(group.items),
                                             "requests_completed": len(fig.done),
                                             "output_tokens": sum(fig.tokens) if fig.tokens is not None else None,
                                             "finish_reasons": dict(fig.finish)})
        if group.name and not many and fig.latencies:  # one request at a time: concurrency 1
            figures_at_1 = (("e2el_median_latency", percentile(fig.latencies, 50)),
                            ("output_throughput", fig.throughput),
                            ("ttft_median_time", percentile(fig.ttfts, 50) if fig.ttfts else None))
            for prefix_name, value in figures_at_1:
                if value is not None:
                    run.add_series("{}:{}".format(prefix_name, group.name), [1], [value], x_label="concurrency")
        prefix = "{}: ".format(group.name) if several else ""
        for note in (_statistics_note(group, fig, prefix), _per_item_throughput_note(fig.done)):
            if note:
                run.notes.append(note)
        cut = fig.finish.get("length", 0)
        if cut:
            run.notes.append("{}{} of {} responses stopped at max_tokens (finish_reason length): they completed, but "
                             "their answers were cut off, so their lengths were capped.".format(
                                 prefix, cut, len(fig.done)))
    _comparison_notes(run, groups, figures)
    if not any(concurrent):
        run.notes.append("Nothing in the results shows two requests in flight at once (no concurrency setting, no "
                         "overlapping start times), so no concurrency was measured: the throughput is one request "
                         "stream's, not the endpoint's under load.")
    if not any(f.ttfts for f in figures):
        run.notes.append("No request has a time to first token: the requests were not streamed, so each latency is a "
                         "whole request (E2EL, median of {} here) and TTFT and TPOT were not measured.".format(
                             len(reference.latencies)))
    if several:
        run.notes.append("The record's own figures (latency, throughput, time to first token, output tokens per "
                         "request) are {}'s, the first endpoint's; its counts (requests, output tokens) are the whole "
                         "run's, all {} endpoints', as a measured run's are. Each endpoint's figures are its own row "
                         "(series e2el_median_latency:<endpoint>) and its counts its own (environment['endpoints']), "
                         "never pooled.".format(groups[0].name, len(groups)))


def _comparison_notes(run: Run, groups: List[Group], figures: List[_Figures]) -> None:
    if len(groups) < 2:
        return
    models = [g.model for g in groups if g.model]
    if len(models) == len(groups) and several_models(models):
        run.notes.append("The endpoints ran different models ({}): a difference between them is the model's as much "
                         "as the hardware's.".format(", ".join("{} {}".format(g.name, g.model) for g in groups)))
    given = all("not given" not in f.finish for f in figures)
    if given and len({tuple(sorted(f.finish.items())) for f in figures}) > 1:
        run.notes.append("The endpoints' finish reasons differ ({}): answers cut off at max_tokens are not comparable "
                         "with answers that ended on their own.".format(
                             "; ".join("{} {}".format(g.name, _describe(f.finish)) for g, f in zip(groups, figures))))
    means = [sum(f.tokens) / len(f.tokens) for f in figures if f.tokens]
    if len(means) == len(groups) and max(means) > 1.2 * min(means):
        run.notes.append("The endpoints' answers differ in length ({} completion tokens per request on average): "
                         "compare time per output token, not time per request.".format(
                             ", ".join("{} {:.1f}".format(g.name, m) for g, m in zip(groups, means))))

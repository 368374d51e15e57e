"""Pasted evidence read like a log, into the same records as a measured run: a chat-completion JSON,
``curl`` under ``time``, a streamed ``data:`` transcript, a student's JSON of results (docs/logs.md
lists the shapes; tests/sambanova/evidence/ says where each comes from). :class:`InferenceReader`
reads a whole piece at its end, as a JSON answer spans lines. Output tokens are completion tokens,
never total tokens: prompt tokens are read, not generated.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from datetime import datetime
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labkit import stats
from labkit.errors import LabkitError
from labkit.files import regular_file
from labkit.logs.base import LineReader
from labkit.results import Run
from labkit.serving.configs import REASONING_FIELDS
from labkit.testbeds.sambanova.inference.metrics import METRICS, SERVER_FIELDS, add_counts
from labkit.testbeds.sambanova.inference.spec import EXERCISE, several_models

__all__ = ["parse_text", "read_evidence", "evidence_table", "EvidenceError", "SAMPLE_RESPONSE",
           "InferenceReader"]

#: A Metis chat completion written by hand in the documented shape (OpenAI's object, SambaNova's timing
#: fields in usage), for the notebook to read like a student's pasted response; not a captured answer.
SAMPLE_RESPONSE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metis_sample.json")

_REAL = re.compile(r"^real\s+(?:(\d+)m)?([\d.]+)s?\s*$", re.MULTILINE)
_ZSH_TOTAL = re.compile(r"\s([\d.]+) total\s*$", re.MULTILINE)
_URL = re.compile(r"(https?://[^\s'\"]+)")

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


class EvidenceError(LabkitError, ValueError):
    shown_as = "EvidenceError"


class Group:
    """One endpoint's requests in the file, what its block says about them, their completed ones' figures."""

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
        self.done = [i for i in items if not _failed(i)]
        self.latencies = [latency(i) for i in self.done]
        tokens = [completion_tokens(i) for i in self.done]
        self.tokens = tokens if tokens and all(t is not None for t in tokens) else None
        ttfts = [_scaled(i, _TTFT_KEYS) for i in self.done]
        self.ttfts = [t for t in ttfts if t is not None]
        self.finish = Counter(str(_nested(i, "finish_reason") or _nested(i, "stop_reason") or "not given")
                              for i in self.done)
        elapsed = sum(self.latencies)  # type: ignore[arg-type]
        self.throughput = sum(self.tokens) / elapsed if self.tokens and elapsed > 0 else None
        #: (metric, series, value) of each figure a JSON of results gives (value None: not given)
        self.headline = (
            ("e2el_median", "e2el_median_latency", stats.percentile(self.latencies, 50) if self.latencies else None),
            ("output_throughput", "output_throughput", self.throughput),
            ("ttft_median", "ttft_median_time", stats.percentile(self.ttfts, 50) if self.ttfts else None))


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


def _overlap(items: List[Dict[str, Any]]) -> Optional[bool]:
    """Whether two requests were in flight at once, by their start times and latencies (None: no start times)."""
    spans = sorted((s, s + (latency(i) or 0.0)) for i in items for s in [_start(i)] if s is not None)
    if len(spans) < 2:
        return None
    return any(later[0] < earlier[1] - 1e-6 for earlier, later in zip(spans, spans[1:]))


def _close(value: float, reference: Optional[float]) -> bool:
    return reference is not None and abs(value - reference) <= 0.01 * max(abs(reference), 1e-9)


def _total_rates(group: Group) -> List[float]:
    """What a throughput that counts prompt tokens comes to: summed, and the mean of per-request rates."""
    totals = [_total_tokens(i) for i in group.done]
    pairs = [(t, l) for t, l in zip(totals, group.latencies) if t is not None and l]
    if len(pairs) < len(totals) or not pairs:
        return []
    return [sum(t for t, _ in pairs) / sum(l for _, l in pairs), sum(t / l for t, l in pairs) / len(pairs)]


def _statistics_note(group: Group, prefix: str) -> Optional[str]:
    stats = group.statistics or {}
    key = next((k for k in _THROUGHPUT_KEYS if _number(stats.get(k)) is not None), None)
    if key is None or not group.latencies:
        return None
    claimed = float(stats[key])
    if any(_close(claimed, rate) for rate in _total_rates(group)):
        return ("{}The results' own {} of {:.2f} tokens/s counts prompt tokens as output (total tokens / latency); "
                "the completion tokens alone, the tokens generated, give {}.".format(
                    prefix, key, claimed, "{:.2f} tokens/s".format(group.throughput)
                    if group.throughput is not None else "a figure these records cannot give"))
    if group.throughput is not None and not _close(claimed, group.throughput):
        return ("{}The results' own {} of {:.2f} tokens/s is not what the requests give: their completion tokens / "
                "summed latency is {:.2f} tokens/s, the figure recorded here.".format(
                    prefix, key, claimed, group.throughput))
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
    several = len(groups) > 1
    tokens = [g.tokens for g in groups]
    # The counts are the whole run's, as a measured run's are (metrics.py: "all configurations"; the
    # rubric's 40 requests are both endpoints'); every figure is one endpoint's, each endpoint's
    # counts are in environment["endpoints"] and no per-request figure mixes endpoints.
    add_counts(run, sum(len(g.items) for g in groups), sum(len(g.done) for g in groups),
               sum(sum(t) for t in tokens) if all(t is not None for t in tokens) else None, "server usage")
    if several:  # a mean over both endpoints' answers is no endpoint's: the first endpoint's, like the figures
        first = groups[0]
        if first.tokens and first.done:
            METRICS.add(run, "output_tokens_per_request", round(sum(first.tokens) / len(first.done), 3))
    named = [g for g in groups if g.name]
    if named:
        METRICS.add(run, "endpoints", len(named))
        run.params["endpoint_names"] = [g.name for g in named]
        run.params["models"] = [g.model for g in named]
    run.params["num_prompts"] = len(groups[0].items)
    for metric, _series, value in groups[0].headline:  # the first endpoint's are the record's, as when measured
        if value is not None:
            METRICS.add(run, metric, value)
    concurrent = [g.concurrency is not None and g.concurrency > 1 or bool(_overlap(g.items)) for g in groups]
    run.environment["endpoints"] = []
    for group, many in zip(groups, concurrent):
        run.environment["endpoints"].append({"name": group.name, "model": group.model, "requests": len(group.items),
                                             "requests_completed": len(group.done),
                                             "output_tokens": sum(group.tokens) if group.tokens is not None else None,
                                             "finish_reasons": dict(group.finish)})
        if group.name and not many and group.latencies:  # one request at a time: concurrency 1
            for _metric, series, value in group.headline:
                if value is not None:
                    run.add_series("{}:{}".format(series, group.name), [1], [value], x_label="concurrency")
        prefix = "{}: ".format(group.name) if several else ""
        for note in (_statistics_note(group, prefix), _per_item_throughput_note(group.done)):
            if note:
                run.notes.append(note)
        cut = group.finish.get("length", 0)
        if cut:
            run.notes.append("{}{} of {} responses stopped at max_tokens (finish_reason length): they completed, but "
                             "their answers were cut off, so their lengths were capped.".format(
                                 prefix, cut, len(group.done)))
    _comparison_notes(run, groups)
    if not any(concurrent):
        run.notes.append("Nothing in the results shows two requests in flight at once (no concurrency setting, no "
                         "overlapping start times), so no concurrency was measured: the throughput is one request "
                         "stream's, not the endpoint's under load.")
    if not any(g.ttfts for g in groups):
        run.notes.append("No request has a time to first token: the requests were not streamed, so each latency is a "
                         "whole request (E2EL, median of {} here) and TTFT and TPOT were not measured.".format(
                             len(groups[0].latencies)))
    if several:
        run.notes.append("The record's own figures (latency, throughput, time to first token, output tokens per "
                         "request) are {}'s, the first endpoint's; its counts (requests, output tokens) are the whole "
                         "run's, all {} endpoints', as a measured run's are. Each endpoint's figures are its own row "
                         "(series e2el_median_latency:<endpoint>) and its counts its own (environment['endpoints']), "
                         "never pooled.".format(groups[0].name, len(groups)))


def _comparison_notes(run: Run, groups: List[Group]) -> None:
    if len(groups) < 2:
        return
    models = [g.model for g in groups if g.model]
    if len(models) == len(groups) and several_models(models):
        run.notes.append("The endpoints ran different models ({}): a difference between them is the model's as much "
                         "as the hardware's.".format(", ".join("{} {}".format(g.name, g.model) for g in groups)))
    given = all("not given" not in g.finish for g in groups)
    if given and len({tuple(sorted(g.finish.items())) for g in groups}) > 1:
        run.notes.append("The endpoints' finish reasons differ ({}): answers cut off at max_tokens are not comparable "
                         "with answers that ended on their own.".format(
                             "; ".join("{} {}".format(g.name, _describe(g.finish)) for g in groups)))
    means = [sum(g.tokens) / len(g.tokens) for g in groups if g.tokens]
    if len(means) == len(groups) and max(means) > 1.2 * min(means):
        run.notes.append("The endpoints' answers differ in length ({} completion tokens per request on average): "
                         "compare time per output token, not time per request.".format(
                             ", ".join("{} {:.1f}".format(g.name, m) for g, m in zip(groups, means))))


def _json_values(text: str) -> List[Tuple[Any, int, int]]:
    """Every top-level JSON object or list in ``text`` with where it starts and ends (a transcript may hold
    commands, their payloads and their answers)."""
    try:
        return [(json.loads(text), 0, len(text))]
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    found, i = [], 0
    while True:
        starts = [p for p in (text.find("{", i), text.find("[{", i)) if p >= 0]
        if not starts:
            return found
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            i = start + 1
            continue
        found.append((value, start, end))
        i = end


def _times(text: str) -> List[Tuple[int, float]]:
    """Each ``time`` output's position and seconds: bash's ``real 0m4.990s``, zsh's ``... 1.369 total``."""
    found = [(m.start(), int(m.group(1) or 0) * 60 + float(m.group(2))) for m in _REAL.finditer(text)]
    found += [(m.start(), float(m.group(1))) for m in _ZSH_TOTAL.finditer(text)]
    return sorted(found)


def _is_answer(value: Any) -> bool:
    """A chat completion, or the error an endpoint answered with (not a JSON of results that has an error field)."""
    if not isinstance(value, dict):
        return False
    return isinstance(value.get("choices"), list) or (bool(value.get("error")) and result_groups(value) is None)


def _new(kind: str, name: str) -> Run:
    run = Run(EXERCISE, source="log", status="complete", params={"response_kind": kind})
    run.environment["log"] = name
    return run


def _server(run: Run, usage: Dict[str, Any]) -> bool:
    timed = False
    for field, metric in SERVER_FIELDS:
        if isinstance(usage.get(field), (int, float)):
            METRICS.add(run, metric, float(usage[field]))
            timed = True
    return timed


def _answer_run(body: Dict[str, Any], name: str, real: Optional[float], url: str, request: Dict[str, Any]) -> Run:
    """A chat completion's run, or a failed one for the error an endpoint answered with."""
    if not isinstance(body.get("choices"), list):
        run = _new("error", name)
        add_counts(run, 1, 0, None, "")
        run.status = "failed"
        run.notes.append("The answer is an error: {}".format(str(body["error"])[:200]))
        return run
    run = _new("curl" if real is not None or url else "completion", name)
    usage = body.get("usage") or {}
    run.params["model"] = body.get("model", "")
    if url:
        run.params["url"] = url
        run.params["endpoint"] = endpoint_name(url)
    choices = body.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    if choice.get("finish_reason"):
        run.params["finish_reason"] = choice["finish_reason"]
    if isinstance(request.get("max_tokens"), int):
        run.params["max_tokens"] = request["max_tokens"]
    add_counts(run, 1, 1, usage.get("completion_tokens"), "server usage")
    timed = _server(run, usage)
    if real is not None:
        METRICS.add(run, "e2el_median", real)
        run.notes.append("The `time` of the curl command ({:.3f} s) is one client-side end-to-end latency: it holds "
                         "curl's start, DNS and TLS, the ALCF gateway and its authentication, queueing and the whole "
                         "answer; with no streaming, the time to the first token cannot be told apart from "
                         "decoding".format(real))
    if timed:
        run.notes.append("The usage fields time_to_first_token, total_latency and completion_tokens_after_first_per_sec "
                         "are the server's own clock (SambaNova's), without network, gateway or queueing: they are "
                         "recorded as server_* metrics, never as client times")
    else:
        run.notes.append("No server timings in usage (vLLM on Sophia sends none; SambaNova's Metis does)")
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    if any(message.get(field) for field in REASONING_FIELDS):
        run.notes.append("The answer carries the model's reasoning beside its content, and completion_tokens ({}) "
                         "count both".format(usage.get("completion_tokens", "unknown")))
    if choice.get("finish_reason") == "length":
        limit = "its max_tokens of {}".format(request["max_tokens"]) if "max_tokens" in run.params else "max_tokens"
        run.notes.append("The answer stopped at {} (finish_reason length): the request completed, but the answer was "
                         "cut off".format(limit))
    run.notes.append("One request is not a benchmark: no repeat, no warm-up, no interval; compare per output token "
                     "({} here), not per request".format(usage.get("completion_tokens", "unknown")))
    return run


def _sse_run(text: str, name: str) -> Run:
    chunks, usage, model = 0, {}, ""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("data:"):
            continue
        try:
            body = json.loads(line[5:].strip())  # the closing "data: [DONE]" is not JSON
        except ValueError:
            continue
        model = body.get("model", model)
        content = ((body.get("choices") or [{}])[0].get("delta") or {}).get("content") if body.get("choices") else ""
        if content:  # chunks with text, as the client counts them (not the role or finish chunks)
            chunks += 1
        if body.get("usage"):
            usage = body["usage"]
    run = _new("sse", name)
    run.params["model"] = model
    tokens = usage.get("completion_tokens")
    add_counts(run, 1, 1 if chunks else 0, tokens if tokens is not None else chunks,
            "server usage" if tokens is not None else "chunks")
    timed = _server(run, usage)
    run.notes.append("A streamed transcript of {} chunk(s) with text: it shows the tokens arriving, but a pasted "
                     "transcript has no client time stamps, so TTFT and ITL need labkit's client{}".format(
                         chunks, "; the server's own timings from its last chunk are recorded as server_* metrics"
                         if timed else ""))
    if not chunks:
        run.status = "failed"
    return run


def _compare(runs: List[Run]) -> None:
    """Notes on what several answers in one transcript compare: models or endpoints, finish reasons, lengths."""
    done = [r for r in runs if r.status == "complete" and r.params.get("response_kind") in ("curl", "completion")]
    if len(done) < 2:
        return
    models = [str(r.params.get("model", "")) for r in done]
    endpoints = {r.params["endpoint"] for r in done if r.params.get("endpoint")}
    several = several_models(models)
    label = (lambda r: r.params.get("model") or "?") if several else \
        (lambda r: r.params.get("endpoint") or "answer {}".format(done.index(r) + 1))  # noqa: E731
    notes = []
    if several and len(endpoints) == 1 and all(r.params.get("endpoint") for r in done):
        notes.append("These {} answers compare {} models ({}) on one endpoint ({}), not two endpoints: their "
                     "difference is the models', not the hardware's".format(
                         len(done), len(set(models)), ", ".join(sorted(set(models))), endpoints.pop()))
    elif several and len(endpoints) > 1:
        notes.append("These answers come from different models on different endpoints ({}): the model and the "
                     "hardware both changed, so neither explains the difference alone".format(
                         ", ".join("{} on {}".format(r.params.get("model"), r.params.get("endpoint")) for r in done)))
    elif several:
        notes.append("These answers come from {} models ({}) and the transcript names no endpoint: their difference "
                     "is the models', not necessarily the hardware's".format(
                         len(set(models)), ", ".join(sorted(set(models)))))
    reasons = [r.params.get("finish_reason", "not given") for r in done]
    if len(set(reasons)) > 1:
        notes.append("Their finish reasons differ ({}): an answer cut off at max_tokens is not comparable with one "
                     "that ended on its own".format(", ".join("{} for {}".format(f, label(r))
                                                              for f, r in zip(reasons, done))))
    lengths = [r.metrics.get("output_tokens") for r in done]
    if all(isinstance(n, int) for n in lengths) and max(lengths) > 1.2 * min(lengths):  # type: ignore[type-var]
        notes.append("Their lengths differ (completion tokens: {}): compare time per output token, not time per "
                     "answer".format(", ".join("{} for {}".format(n, label(r)) for n, r in zip(lengths, done))))
    for run in done:
        run.notes.extend(notes)


def parse_text(text: str, name: str = "<text>") -> List[Run]:
    """The runs in one pasted piece of evidence (empty when nothing was recognised).

    In a transcript of several ``curl`` commands each answer is paired with the first ``time`` output
    after it and before the next answer, and with the URL and request payload written before it.
    """
    if re.search(r"^\s*data:\s*\{", text, re.MULTILINE):
        return [_sse_run(text, name)]
    values = _json_values(text)
    times = _times(text)
    answers = [(v, start, end) for v, start, end in values if _is_answer(v)]
    runs = []
    previous_end = 0
    for k, (value, start, end) in enumerate(answers):
        following = answers[k + 1][1] if k + 1 < len(answers) else len(text)
        real = next((t for at, t in times if end <= at < following), None)
        if real is None and len(answers) == 1 and len(times) == 1:
            real = times[0][1]  # one answer, one time: theirs wherever it was pasted
        before = text[previous_end:start] if len(answers) > 1 else text
        url = next((u for u in reversed(_URL.findall(before)) if "chat/completions" in u), "")
        request = next((v for v, s0, e0 in reversed(values) if previous_end <= s0 and e0 <= start
                        and isinstance(v, dict) and "messages" in v), {})
        runs.append(_answer_run(value, name, real, url, request))
        previous_end = end
    _compare(runs)
    for value, _start, _end in values:
        groups = None if _is_answer(value) else result_groups(value)
        if groups:
            run = _new("results", name)
            fill_results(run, groups)
            if isinstance(value, dict) and value.get("dataset"):
                dataset = value["dataset"]
                run.params["dataset"] = str(dataset.get("name", "")) if isinstance(dataset, dict) else str(dataset)
            runs.append(run)
    return runs


class InferenceReader(LineReader):
    format = "openai"

    def __init__(self, name: str = "<text>") -> None:
        super().__init__(name)
        self._lines: List[str] = []

    def feed(self, line: str) -> None:
        self._lines.append(line)

    def finish(self) -> List[Run]:
        self.runs = parse_text("\n".join(self._lines), os.path.basename(self.name))
        if not self.runs:
            self.notes.append("No chat completion, streamed transcript or JSON of results was recognised.")
        return self.runs


def read_evidence(paths: Sequence[str]) -> Run:
    """The notebook's log_path: one run for one piece; for several, their counts together and each piece in
    ``run.details["pieces"]`` (shown one row each)."""
    pieces: List[Run] = []
    for path in paths:
        regular_file(path, "log_path")  # a FIFO would keep the read below waiting for ever
        with open(path, encoding="utf-8", errors="replace") as f:
            found = parse_text(f.read(), os.path.basename(path))
        if not found:
            raise EvidenceError("{}: no chat-completion JSON, curl + time transcript, streamed transcript or JSON of "
                                "results was recognised in it".format(path))
        pieces.extend(found)
    if len(pieces) == 1:
        run = pieces[0]
    else:
        run = _new("several", ", ".join(sorted({p.environment["log"] for p in pieces})))
        total = lambda name: sum(p.metrics.get(name, 0) for p in pieces)  # noqa: E731
        add_counts(run, total("requests"), total("requests_completed"), total("output_tokens"), "server usage")
        models = sorted({m for p in pieces for m in [p.params.get("model")] + list(p.params.get("models") or []) if m})
        run.notes.append("{} pieces of evidence, models: {}; each is shown in its own row: their timings are not "
                         "pooled".format(len(pieces), ", ".join(models) or "not given"))
        for piece in pieces:
            run.notes.extend("{}: {}".format(piece.environment["log"], n) for n in piece.notes)
    run.details = {"pieces": pieces}  # type: ignore[attr-defined]
    return run


def _seconds(value: Optional[float], missing: str) -> str:
    return "{:.3f} s".format(value) if value is not None else missing


def _rows(piece: Run) -> List[Dict[str, Any]]:
    """A piece's rows: one, or one per endpoint of a JSON of results that holds several."""
    m, p = piece.metrics, piece.params
    base = {"evidence": os.path.basename(str(piece.environment.get("log"))), "kind": p.get("response_kind"),
            "endpoint": p.get("endpoint", ""), "model": p.get("model", ""), "requests": m.get("requests"),
            "output tokens": m.get("output_tokens"), "finish reason": p.get("finish_reason", ""),
            "client: E2EL": _seconds(m.get("e2el_median"), "not measured"),
            "server: TTFT": _seconds(m.get("server_ttft_median"), "not given"),
            "server: total latency": _seconds(m.get("server_total_latency_median"), "not given")}
    endpoints = piece.environment.get("endpoints") or []
    if p.get("response_kind") != "results" or len(endpoints) < 2:
        return [base]
    rows = []
    for entry in endpoints:
        e2el = (piece.series.get("e2el_median_latency:" + entry["name"]) or {}).get("y") or [None]
        row = dict(base, endpoint=entry["name"], model=entry["model"], requests=entry["requests"],
                   **{"output tokens": None, "client: E2EL": _seconds(e2el[0], "not measured"),
                      "finish reason": ", ".join("{} {}".format(n, r) for r, n in entry["finish_reasons"].items())})
        rows.append(row)
    return rows


def evidence_table(run: Run):
    """One row per piece of evidence (per endpoint, for a JSON of results of several): what it is, its counts,
    the client's time and the server's, apart."""
    import pandas as pd

    pieces = (getattr(run, "details", None) or {}).get("pieces") or [run]
    return pd.DataFrame([row for piece in pieces for row in _rows(piece)])

"""Pasted evidence read like a log, into the same records as a measured run (docs/logs.md lists the
shapes; tests/sambanova/evidence/ says where each comes from): a chat-completion JSON, ``curl`` under
``time`` (one client-side latency, nothing streamed), a streamed ``data:`` transcript, a student's JSON
of results (:mod:`.results_json`). Server timings and client times go to different metrics.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labkit.errors import LabkitError
from labkit.results import Run
from labkit.serving.configs import REASONING_FIELDS
from labkit.testbeds.sambanova.inference.metrics import METRICS, SERVER_FIELDS
from labkit.testbeds.sambanova.inference.notes import several_models
from labkit.testbeds.sambanova.inference.results_json import (add_counts, endpoint_name, fill_results,
                                                              result_groups)
from labkit.testbeds.sambanova.inference.spec import EXERCISE

__all__ = ["parse_text", "read_evidence", "evidence_table", "EvidenceError", "SAMPLE_RESPONSE"]

#: A Metis chat completion written by hand in the documented shape (OpenAI's object, SambaNova's timing
#: fields in usage), for the notebook to read like a student's pasted response; not a captured answer.
SAMPLE_RESPONSE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metis_sample.json")

_REAL = re.compile(r"^real\s+(?:(\d+)m)?([\d.]+)s?\s*$", re.MULTILINE)
_ZSH_TOTAL = re.compile(r"\s([\d.]+) total\s*$", re.MULTILINE)
_URL = re.compile(r"(https?://[^\s'\"]+)")


class EvidenceError(LabkitError, ValueError):
    shown_as = "EvidenceError"


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


def _completion_run(body: Dict[str, Any], name: str, kind: str, real: Optional[float], url: str,
                    request: Dict[str, Any]) -> Run:
    run = _new(kind, name)
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
    pieces = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            continue
        try:
            body = json.loads(payload)
        except ValueError:
            continue
        model = body.get("model", model)
        content = ((body.get("choices") or [{}])[0].get("delta") or {}).get("content") if body.get("choices") else ""
        if content:  # chunks with text, as the client counts them (not the role or finish chunks)
            chunks += 1
            pieces.append(content)
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


def _answers_run(value: Dict[str, Any], name: str, real: Optional[float], url: str,
                 request: Dict[str, Any]) -> Run:
    if isinstance(value.get("choices"), list):
        return _completion_run(value, name, "curl" if real is not None or url else "completion", real, url, request)
    run = _new("error", name)
    add_counts(run, 1, 0, None, "")
    run.status = "failed"
    run.notes.append("The answer is an error: {}".format(str(value["error"])[:200]))
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
        runs.append(_answers_run(value, name, real, url, request))
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


def read_evidence(paths: Sequence[str]) -> Run:
    """The notebook's log_path: one run for one piece; for several, their counts together and each piece in
    ``run.details["pieces"]`` (shown one row each)."""
    pieces: List[Run] = []
    for path in paths:
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

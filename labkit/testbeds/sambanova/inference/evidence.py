"""Pasted evidence read like a log, into the same records as a measured run.

    from labkit.testbeds.sambanova.inference import evidence
    runs = evidence.parse_text(open("metis.json").read(), "metis.json")   # one Run per piece found
    run = evidence.read_evidence(["metis.json", "sophia-curl.txt"])      # the notebook's log_path
    labkit.logs.read("metis.json")                                       # the same, format "openai"

Four shapes, as students paste them (fixtures in tests/sambanova/evidence/ say where each comes from):

- a chat-completion JSON (OpenAI's ``chat.completion`` object), with or without SambaNova's own
  timings in ``usage`` (``time_to_first_token``, ``total_latency``, ``completion_tokens_after_first_per_sec``);
- a ``curl`` command and its JSON answer timed with ``time`` (``real 0m4.990s``): one client-side
  end-to-end latency, with no way to tell the first token from the rest (nothing was streamed);
- a streamed transcript (``data: {...chat.completion.chunk...}`` lines, ``data: [DONE]``);
- a student's JSON of results: a list of requests with a latency and token counts each.

Server timings and client times go to different metrics (``server_*`` against ``e2el_median``), and
the notes say what each piece can and cannot show.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence

from labkit.results import Run
from labkit.testbeds.sambanova.inference.metrics import INFERENCE_METRICS
from labkit.testbeds.sambanova.inference.timing import percentile

__all__ = ["parse_text", "read_evidence", "evidence_table", "EvidenceError", "SAMPLE_RESPONSE"]

#: A Metis chat completion written by hand in the documented shape (OpenAI's object, SambaNova's timing
#: fields in usage), for the notebook to read like a student's pasted response; not a captured answer.
SAMPLE_RESPONSE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metis_sample.json")

EXERCISE = "sambanova/inference"
_REAL = re.compile(r"^real\s+(?:(\d+)m)?([\d.]+)s?\s*$", re.MULTILINE)
_ZSH_TOTAL = re.compile(r"\s([\d.]+) total\s*$", re.MULTILINE)
_URL = re.compile(r"(https?://[^\s'\"]+)")
_LATENCY_KEYS = ("latency_s", "latency", "e2e_latency", "e2el", "elapsed", "time_s", "duration")
_TOKEN_KEYS = ("completion_tokens", "output_tokens", "generated_tokens")


class EvidenceError(ValueError):
    def _render_traceback_(self):
        return ["EvidenceError: " + str(self)]


def _json_values(text: str) -> List[Any]:
    """Every top-level JSON object or list in ``text`` (a transcript may hold a command and its answer)."""
    stripped = text.strip()
    try:
        return [json.loads(stripped)]
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
        found.append(value)
        i = end


def _new(kind: str, name: str) -> Run:
    run = Run(EXERCISE, source="log", status="complete", params={"response_kind": kind})
    run.environment["log"] = name
    return run


def _server(run: Run, usage: Dict[str, Any]) -> bool:
    timed = False
    for field, metric in (("time_to_first_token", "server_ttft_median"), ("total_latency", "server_total_latency_median"),
                          ("completion_tokens_after_first_per_sec", "server_decode_rate_median")):
        if isinstance(usage.get(field), (int, float)):
            INFERENCE_METRICS.add(run, metric, float(usage[field]))
            timed = True
    return timed


def _counts(run: Run, requests: int, completed: int, tokens: Optional[int], source: str) -> None:
    INFERENCE_METRICS.add(run, "requests", requests)
    INFERENCE_METRICS.add(run, "requests_completed", completed)
    INFERENCE_METRICS.add(run, "requests_failed", requests - completed)
    if tokens is not None:
        INFERENCE_METRICS.add(run, "output_tokens", tokens)
        if completed:
            INFERENCE_METRICS.add(run, "output_tokens_per_request", round(tokens / completed, 3))
        INFERENCE_METRICS.add(run, "token_count_source", source)


def _completion_run(body: Dict[str, Any], name: str, kind: str, real: Optional[float], url: str) -> Run:
    run = _new(kind, name)
    usage = body.get("usage") or {}
    run.params["model"] = body.get("model", "")
    if url:
        run.params["url"] = url
    _counts(run, 1, 1, usage.get("completion_tokens"), "server usage")
    timed = _server(run, usage)
    if real is not None:
        INFERENCE_METRICS.add(run, "e2el_median", real)
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
    _counts(run, 1, 1 if chunks else 0, tokens if tokens is not None else chunks,
            "server usage" if tokens is not None else "chunks")
    timed = _server(run, usage)
    run.notes.append("A streamed transcript of {} chunk(s) with text: it shows the tokens arriving, but a pasted "
                     "transcript has no client time stamps, so TTFT and ITL need labkit's client{}".format(
                         chunks, "; the server's own timings from its last chunk are recorded as server_* metrics"
                         if timed else ""))
    if not chunks:
        run.status = "failed"
    return run


def _results_run(items: List[Dict[str, Any]], name: str) -> Run:
    run = _new("results", name)
    latencies = [float(next(i[k] for k in _LATENCY_KEYS if isinstance(i.get(k), (int, float))))
                 for i in items if any(isinstance(i.get(k), (int, float)) for k in _LATENCY_KEYS)]
    tokens = [int(next(i[k] for k in _TOKEN_KEYS if isinstance(i.get(k), (int, float))))
              for i in items if any(isinstance(i.get(k), (int, float)) for k in _TOKEN_KEYS)]
    _counts(run, len(items), len(latencies), sum(tokens) if tokens else None, "server usage")
    if latencies:
        INFERENCE_METRICS.add(run, "e2el_median", percentile(latencies, 50))
    if latencies and tokens and len(tokens) == len(latencies) and sum(latencies) > 0:
        INFERENCE_METRICS.add(run, "output_throughput", sum(tokens) / sum(latencies))
        run.notes.append("Output throughput recomputed as output tokens / the sum of latencies ({} requests one after "
                         "another): prompt tokens are read, not generated, so they are not counted".format(len(items)))
    claimed = [i for i in items if isinstance(i.get("throughput"), (int, float)) and isinstance(i.get("prompt_tokens"),
                                                                                                  (int, float))]
    if claimed and any(abs(i["throughput"] * _lat(i) - i["prompt_tokens"] - _tok(i)) < 0.02 * (i["prompt_tokens"] + _tok(i))
                       for i in claimed if _lat(i) and _tok(i) is not None):
        run.notes.append("The results' 'throughput' is (prompt + completion tokens) / latency: prompt tokens are not "
                         "generated, and without streaming prefill and decoding cannot be told apart")
    run.notes.append("Latencies without streaming: each is one whole request (E2EL), median of {}; a first cold "
                     "request and unequal output lengths are in it".format(len(latencies)))
    return run


def _lat(item: Dict[str, Any]) -> Optional[float]:
    return next((float(item[k]) for k in _LATENCY_KEYS if isinstance(item.get(k), (int, float))), None)


def _tok(item: Dict[str, Any]) -> Optional[int]:
    return next((int(item[k]) for k in _TOKEN_KEYS if isinstance(item.get(k), (int, float))), None)


def _result_items(value: Any) -> Optional[List[Dict[str, Any]]]:
    if isinstance(value, dict):
        for key in ("results", "requests", "runs", "data"):
            if isinstance(value.get(key), list):
                return _result_items(value[key])
        return None
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value) and \
            any(_lat(v) is not None for v in value):
        return value
    return None


def parse_text(text: str, name: str = "<text>") -> List[Run]:
    """The runs in one pasted piece of evidence (empty when nothing was recognised)."""
    if re.search(r"^\s*data:\s*\{", text, re.MULTILINE):
        return [_sse_run(text, name)]
    real = None
    m = _REAL.search(text)
    if m:
        real = int(m.group(1) or 0) * 60 + float(m.group(2))
    elif _ZSH_TOTAL.search(text):
        real = float(_ZSH_TOTAL.search(text).group(1))  # type: ignore[union-attr]
    url = next((u for u in _URL.findall(text) if "chat/completions" in u), "")
    runs = []
    for value in _json_values(text):
        if isinstance(value, dict) and isinstance(value.get("choices"), list):
            runs.append(_completion_run(value, name, "curl" if real is not None or url else "completion", real, url))
        elif isinstance(value, dict) and "error" in value and real is None:
            run = _new("error", name)
            _counts(run, 1, 0, None, "")
            run.status = "failed"
            run.notes.append("The answer is an error: {}".format(str(value["error"])[:200]))
            runs.append(run)
        else:
            items = _result_items(value)
            if items:
                runs.append(_results_run(items, name))
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
        _counts(run, total("requests"), total("requests_completed"), total("output_tokens"), "server usage")
        models = sorted({p.params.get("model", "") for p in pieces if p.params.get("model")})
        run.notes.append("{} pieces of evidence, models: {}; each is shown in its own row: their timings are not "
                         "pooled".format(len(pieces), ", ".join(models) or "not given"))
        for piece in pieces:
            run.notes.extend("{}: {}".format(piece.environment["log"], n) for n in piece.notes)
    run.details = {"pieces": pieces}  # type: ignore[attr-defined]
    return run


def evidence_table(run: Run):
    """One row per piece of evidence: what it is, its counts, the client's time and the server's, apart."""
    import pandas as pd

    pieces = (getattr(run, "details", None) or {}).get("pieces") or [run]
    rows = []
    for p in pieces:
        m = p.metrics
        rows.append({"evidence": os.path.basename(str(p.environment.get("log"))),
                     "kind": p.params.get("response_kind"),
                     "model": p.params.get("model", ""), "requests": m.get("requests"),
                     "output tokens": m.get("output_tokens"),
                     "client: E2EL": "{:.3f} s".format(m["e2el_median"]) if "e2el_median" in m else "not measured",
                     "server: TTFT": "{:.3f} s".format(m["server_ttft_median"]) if "server_ttft_median" in m else "not given",
                     "server: total latency": "{:.3f} s".format(m["server_total_latency_median"])
                     if "server_total_latency_median" in m else "not given"})
    return pd.DataFrame(rows)

"""The honest sentences written next to the numbers (docs/sambanova.md, "The honest notes"): which
models are compared, lengths, noise, server against client times, warm-up, failures, the stand-in.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Dict, List, Sequence

from labkit.testbeds.sambanova.inference.access import explain
from labkit.testbeds.sambanova.inference.timing import overlap

__all__ = ["STAND_IN", "weights_of", "several_models", "counts_words", "comparison_notes", "failure_notes",
           "COMPARED", "reasoning_notes", "load_notes", "rated"]

#: The label every table and plot of a local run carries.
STAND_IN = "a stand-in on this machine, not Metis"
#: Figures whose difference between endpoints is judged against the noise: (row key, words).
COMPARED = (("ttft_median_s", "median TTFT"), ("tpot_median_s", "median TPOT"),
            ("output_throughput", "output throughput"))


def weights_of(model: str) -> str:
    """The weights a served model name points to: the organisation and a context-length suffix dropped
    ("openai/gpt-oss-120b" and "gpt-oss-120b-131072" are both "gpt-oss-120b")."""
    name = model.split("/")[-1].lower()
    return re.sub(r"-(\d{4,6}|\d+k)$", "", name)


def several_models(models: Sequence[str]) -> bool:
    """Whether ``models`` name different weights (:func:`weights_of`)."""
    return len({weights_of(m) for m in models}) > 1


def _models_note(endpoints: Sequence[Any]) -> str:
    if len(endpoints) < 2:
        return ""
    listed = ", ".join("{} serves {}".format(e.name, e.model) for e in endpoints)
    if several_models([e.model for e in endpoints]):
        return ("{}: these are different models, so every difference below is the model's as much as the "
                "server's; to compare servers, serve the same weights (e.g. gpt-oss-120b on Metis and on "
                "Sophia)").format(listed)
    if all(e.local for e in endpoints):
        return ("{}: the same weights on the same machine, served two ways by the stand-in ({}); the difference "
                "is how requests are scheduled, not the hardware").format(listed, ", ".join(e.what for e in endpoints))
    return ("{}: the same weights ({}) served differently ({}): hardware, serving software, batching, precision and "
            "context length may all differ, so a difference is the whole service's, not the chip's alone").format(
        listed, weights_of(endpoints[0].model),
        "; ".join("{}: {}".format(e.name, e.what or e.base_url) for e in endpoints))


def _length_note(rows: Sequence[Dict[str, Any]]) -> str:
    per = {}
    for row in rows:
        if row["completed"]:
            per.setdefault(row["endpoint"], []).append(row["tokens_per_request"])
    means = {name: sum(v) / len(v) for name, v in per.items()}
    if len(means) < 2:
        return ""
    low, high = min(means.values()), max(means.values())
    text = ", ".join("{} {:.1f}".format(n, m) for n, m in means.items())
    if high > low * 1.05:
        return ("Output tokens per request differ ({}): compare time per output token (TPOT) and output throughput, "
                "not whole-request latency (E2EL), which a longer answer makes longer").format(text)
    return "Output tokens per request are about equal ({}), so per-request latencies compare too".format(text)


def _noise_notes(rows: Sequence[Dict[str, Any]]) -> List[str]:
    by_level: Dict[Any, List[Dict[str, Any]]] = {}
    for row in rows:
        by_level.setdefault(load_label(row), []).append(row)
    notes = []
    for level, group in by_level.items():
        if len(group) < 2:
            continue
        if any(r["repeats"] < 2 for r in group):
            notes.append("{}: one repeat, so no interval and no verdict on noise; set repeats to 3 or "
                         "more to tell a difference from run-to-run noise".format(level[:1].upper() + level[1:]))
            continue
        first, rest = group[0], group[1:]
        for other in rest:
            inside = [words for key, words in COMPARED
                      if not math.isnan(first[key]) and overlap(first[key + "_ci"], other[key + "_ci"])]
            beyond = [words for key, words in COMPARED
                      if not math.isnan(first[key]) and words not in inside]
            parts = []
            if inside:
                parts.append("{} inside the noise (the 95 % intervals of the repeats overlap)".format(", ".join(inside)))
            if beyond:
                parts.append("{} differ beyond the noise".format(", ".join(beyond)))
            notes.append("{}, {} against {}: {}".format(level[:1].upper() + level[1:], first["endpoint"],
                                                         other["endpoint"], "; ".join(parts)))
    return notes


def _server_note(server: Sequence[Dict[str, Any]]) -> str:
    if not server:
        return ("No server reported its own timings (SambaNova's usage.time_to_first_token ...); every time here is "
                "the client's")
    gaps = ["{} at {}: client TTFT - server TTFT = {:.3g} ms".format(
        r["endpoint"], load_label(r), 1000 * (r["client_ttft_s"] - r["server_ttft_median"])) for r in server]
    return ("The server's own timings (from usage) are shown apart from the client's: the client's time adds the "
            "network, the gateway and its authentication, queueing before the server's clock starts, and the "
            "client's own parsing ({})").format("; ".join(gaps))


def failure_notes(traces: Sequence[Any], endpoints: Sequence[Any], timeout_s: float) -> List[str]:
    """One sentence per (endpoint, status) of the failed requests, saying what to do."""
    counts = Counter((t.endpoint, t.status) for t in traces if not t.ok)
    urls = {e.name: e.base_url for e in endpoints}
    served = {e.name: getattr(e, "served", None) for e in endpoints}
    notes = []
    for (name, status), n in counts.items():
        text = "{} request(s) failed: {}".format(n, explain(status, name, urls.get(name, "?"), timeout_s))
        if status == "404" and served.get(name):
            text += "; {} serves now: {}".format(name, ", ".join(served[name] or []))
        notes.append(text)
    return notes


def counts_words(counts: Dict[str, int], none: str = "none") -> str:
    """Counts by reason (a finish reason, a status) in words, sorted by reason: "2 x length, 6 x stop"."""
    return ", ".join("{} x {}".format(n, reason) for reason, n in sorted(counts.items())) or none


def reasoning_notes(rows: Sequence[Dict[str, Any]]) -> List[str]:
    """What reasoning, empty answers and unequal finish reasons do to the comparison."""
    notes = []
    empty = sum(r.get("empty_answers", 0) for r in rows)
    if empty:
        notes.append("{} request(s) ended with finish_reason length and no answer text: max_tokens was spent on "
                     "reasoning. They are completed requests (counted, timed to their last reasoning token), "
                     "not failures; raise max_tokens for answers".format(empty))
    if any(r.get("reasoning_tokens_per_request", 0) for r in rows):
        parts = ["{} at {}: {:.1f} reasoning + {:.1f} answer tokens".format(
            r["endpoint"], load_label(r), r["reasoning_tokens_per_request"], r["answer_tokens_per_request"])
            for r in rows]
        notes.append("Reasoning tokens are output tokens (in completion_tokens, TPOT and throughput); TTFT is the "
                     "first token of any kind, 'TTFT to answer' the first answer token ({})".format("; ".join(parts)))
    by_endpoint: Dict[str, Counter] = {}
    for row in rows:
        by_endpoint.setdefault(row["endpoint"], Counter()).update(row.get("finish_reasons") or {})
    shares = {name: frozenset(f) for name, f in by_endpoint.items() if f}
    if len(set(shares.values())) > 1:
        notes.append("The endpoints ended their answers differently ({}): a length-capped answer and a finished "
                     "one are not the same work; compare TPOT and output throughput, or fix the output length "
                     "(output_tokens, with ignore_eos where the server supports it)".format(
                         "; ".join("{}: {}".format(n, counts_words(f)) for n, f in by_endpoint.items())))
    return notes


def load_label(row: Dict[str, Any]) -> str:
    if row.get("request_rate") is not None:
        return "{:g} requests/s".format(row["request_rate"])
    return "concurrency {}".format(row["concurrency"])


def rated(rows: Sequence[Dict[str, Any]]) -> bool:
    """Whether the rows were measured under request rates (else concurrency levels)."""
    return any(r.get("request_rate") is not None for r in rows)


def load_notes(rows: Sequence[Dict[str, Any]], knees: Dict[str, Dict[str, Any]], burstiness: float) -> List[str]:
    """How the load was sent, whether the client kept to its schedule, and what the knee shows."""
    notes = []
    if rated(rows):
        late = [r["late_max_s"] for r in rows if isinstance(r.get("late_max_s"), float) and not math.isnan(
            r["late_max_s"])]
        notes.append("Requests arrived at a set rate ({} arrivals, burstiness {:g}), scheduled before the first "
                     "send; the client sent them at most {:.3g} ms behind schedule{}".format(
                         "Poisson" if burstiness == 1 else "gamma", burstiness, 1000 * max(late) if late else 0.0,
                         " (a cap on requests in flight, or a busy client, delays arrivals)" if late and max(late)
                         > 0.05 else ""))
    for name, knee in knees.items():
        if knee.get("load") is None:
            notes.append("{}: no knee found ({})".format(name, knee["stopped"]))
            continue
        unit = "requests/s" if knee["kind"] == "request_rate" else "requests in flight"
        notes.append("{}: the knee is at {:g} {} (goodput {:.3g} requests/s); the search stopped because {} after "
                     "{} requests in {:.0f} s".format(name, knee["load"], unit, knee["goodput"], knee["stopped"],
                                                       knee["requests"], knee["seconds"]))
    if len(knees) >= 2 and all(k.get("load") is not None for k in knees.values()):
        notes.append("Goodput rises with load while the server batches requests together (each decoding step "
                     "serves more of them for little more time); past the knee, requests wait in the queue, TTFT "
                     "grows and goodput flattens: a server that decodes one request at a time reaches its knee at "
                     "the lowest load")
    return notes


def comparison_notes(endpoints: Sequence[Any], rows: Sequence[Dict[str, Any]], server: Sequence[Dict[str, Any]],
                     warmup: int, token_sources: Sequence[str]) -> List[str]:
    notes = []
    if any(e.local for e in endpoints):
        notes.append("Local endpoints ({}) are {}: a small model on this CPU, to practise the method".format(
            ", ".join(e.name for e in endpoints if e.local), STAND_IN))
    notes += [n for n in (_models_note(endpoints), _length_note(rows)) if n]
    notes += reasoning_notes(rows)
    notes += _noise_notes(rows)
    notes.append(_server_note(server))
    notes.append("Client-side and server-side times are never in one column: TTFT, TPOT, ITL and E2EL are the "
                 "client's, as vllm bench serve defines them")
    if warmup:
        notes.append("{} warm-up request(s) went to each endpoint first and are left out of every figure".format(warmup))
    else:
        notes.append("No warm-up requests: the first (cold) requests are in the figures")
    sources = sorted(set(token_sources))
    if sources:
        notes.append("Output tokens counted from: {}{}".format(", ".join(sources), " (one token per streamed chunk is "
                     "an estimate)" if "chunks" in sources else ""))
    return notes

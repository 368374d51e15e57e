"""What the inference notebook shows: client-side figures with intervals, the server's own timings
apart, latency against load, and the honest notes written beside them (docs/sambanova.md, "The honest
notes"). Every time carries its unit in its cell ("What is measured"), so a golden copy masks timings
and keeps counts.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labkit.interrupts import show_step
from labkit import display
from labkit.results import Run
from labkit.testbeds.sambanova.inference.access import explain
from labkit.testbeds.sambanova.inference.evidence import evidence_table
from labkit.testbeds.sambanova.inference.spec import several_models, weights_of
from labkit.testbeds.sambanova.inference.timing import overlap

__all__ = ["latency_table", "percentile_table", "server_table", "plot_latency", "plot_knee", "show", "fmt_time",
           "fmt_interval", "STAND_IN", "counts_words", "comparison_notes", "failure_notes", "COMPARED",
           "reasoning_notes", "load_notes", "rated", "load_label"]

#: The label every table and plot of a local run carries.
STAND_IN = "a stand-in on this machine, not Metis"
#: Figures whose difference between endpoints is judged against the noise: (row key, words).
COMPARED = (("ttft_median_s", "median TTFT"), ("tpot_median_s", "median TPOT"),
            ("output_throughput", "output throughput"))


def fmt_time(value: Any) -> str:
    """Seconds with three significant digits, in ms as ``vllm bench serve`` prints them, in µs below
    a millisecond: at most seven characters from 1 µs to 10 s, so a table keeps its width."""
    if not isinstance(value, (int, float)) or math.isnan(value):
        return "n/a"
    if value == 0:
        return "0 ms"
    # The unit from the rounded value: 0.9996 ms is "1.00 ms", not "1000 µs".
    if abs(float("{:.3g}".format(value))) >= 1e-3:
        return display.three_digits(value * 1e3, "ms")
    return display.three_digits(value * 1e6, "µs")


def _fmt_rate(value: Any, unit: str) -> str:
    return "n/a" if not isinstance(value, (int, float)) or math.isnan(value) else "{:.2f} {}".format(value, unit)


def fmt_interval(ci: Tuple[float, float], unit: str = "s") -> str:
    if any(math.isnan(x) for x in ci):
        return "no interval (1 repeat)"
    if unit in ("s", "ms"):
        return "[{}, {}]".format(fmt_time(ci[0]), fmt_time(ci[1]))
    return "[{}, {}]".format(_fmt_rate(ci[0], unit), _fmt_rate(ci[1], unit))


def _details(run: Run, key: str) -> Any:
    return (getattr(run, "details", None) or {}).get(key)


def latency_table(run: Run):
    """Client-side medians (mean over repeats, 95 % interval), throughputs and counts, per configuration."""
    import pandas as pd

    served = run.environment.get("served_by") or {}
    return pd.DataFrame([{
        "endpoint": row["endpoint"], "load": load_label(row), "served by": served.get(row["endpoint"], ""),
        "requests": row["requests"], "failed": counts_words(row["failed_by_status"], "0"),
        "tokens/request": "{:.1f}".format(row["tokens_per_request"]),
        "finish reasons": counts_words(row.get("finish_reasons") or {}),
        "reasoning + answer tokens/request": "{:.1f} + {:.1f}".format(row["reasoning_tokens_per_request"],
                                                                      row["answer_tokens_per_request"]),
        "TTFT median": fmt_time(row["ttft_median_s"]), "TTFT 95% interval": fmt_interval(row["ttft_median_s_ci"]),
        "TTFT to answer median": fmt_time(row.get("ttft_answer_median_s")),
        "TPOT median": fmt_time(row["tpot_median_s"]), "TPOT 95% interval": fmt_interval(row["tpot_median_s_ci"]),
        "E2EL median": fmt_time(row["e2el_median_s"]), "E2EL 95% interval": fmt_interval(row["e2el_median_s_ci"]),
        "output throughput": _fmt_rate(row["output_throughput"], "tokens/s"),
        "output throughput 95% interval": fmt_interval(row["output_throughput_ci"], "tokens/s"),
        "request throughput": _fmt_rate(row["request_throughput"], "requests/s"),
        "goodput": _fmt_rate(row["goodput"], "requests/s")} for row in _details(run, "rows") or []])


def percentile_table(run: Run):
    """Client-side TTFT, TPOT, ITL and E2EL: mean, median, p90, p99 (each a mean over repeats)."""
    import pandas as pd

    return pd.DataFrame([{"endpoint": row["endpoint"], "load": load_label(row), "figure": name.upper(),
                          "mean": fmt_time(row[name + "_mean_s"]), "median": fmt_time(row[name + "_median_s"]),
                          "p90": fmt_time(row[name + "_p90_s"]), "p99": fmt_time(row[name + "_p99_s"])}
                         for row in _details(run, "rows") or [] for name in ("ttft", "tpot", "itl", "e2el")])


def server_table(run: Run):
    """The server's own timings (usage) beside the client's, in columns of their own; None when no server sent any."""
    import pandas as pd

    rows = _details(run, "server")
    if not rows:
        return None
    return pd.DataFrame([{"endpoint": r["endpoint"], "load": load_label(r), "requests": r["requests"],
                          "client: TTFT median": fmt_time(r["client_ttft_s"]),
                          "server: TTFT median": fmt_time(r["server_ttft_median"]),
                          "client: E2EL median": fmt_time(r["client_e2el_s"]),
                          "server: total latency median": fmt_time(r["server_total_latency_median"]),
                          "server: decode rate median": _fmt_rate(r["server_decode_rate_median"], "tokens/s")}
                         for r in rows])


def _title(run: Run, text: str) -> str:
    served = set((run.environment.get("served_by") or {}).values())
    label = " ({})".format(STAND_IN) if STAND_IN in served else ""
    return text + label + run.partial_title()


def plot_latency(run: Run):
    """Median TTFT, TPOT and E2EL against concurrency, one line per endpoint, error bars the 95 % intervals."""
    import matplotlib.pyplot as plt

    rows = _details(run, "rows") or []
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, (key, label) in zip(axes, (("ttft_median_s", "TTFT"), ("tpot_median_s", "TPOT"),
                                       ("e2el_median_s", "E2EL"))):
        for endpoint in dict.fromkeys(r["endpoint"] for r in rows):
            mine = [r for r in rows if r["endpoint"] == endpoint]
            x = [r["load"] for r in mine]
            y = [r[key] for r in mine]
            low = [0.0 if math.isnan(r[key + "_ci"][0]) else r[key] - r[key + "_ci"][0] for r in mine]
            high = [0.0 if math.isnan(r[key + "_ci"][1]) else r[key + "_ci"][1] - r[key] for r in mine]
            ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, label=endpoint)
        _load_axis(ax, rows)
        ax.set_ylabel("client-side {} median (s)".format(label))
    if rows:  # an interrupt before the first configuration ended leaves nothing to label
        axes[0].legend(fontsize="small")
    fig.suptitle(_title(run, "Latency against " + ("request rate" if rated(rows) else "concurrency")),
                 fontsize="medium")
    fig.tight_layout()
    return fig


def _load_axis(ax: Any, rows: List[dict]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xlabel("request rate (requests/s)" if rated(rows) else "concurrency (requests in flight)")
    ax.grid(alpha=0.3)


def plot_knee(run: Run):
    """A knee search on one figure: median TTFT and E2EL (left) and goodput (right) against load, a line
    per endpoint, each endpoint's knee (its highest goodput) ringed; None when no knee search ran."""
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    knees = _details(run, "knees") or {}
    rows = _details(run, "rows") or []
    if not knees or not rows:
        return None
    fig, (latency, goodput) = plt.subplots(1, 2, figsize=(11, 3.8))
    for number, endpoint in enumerate(dict.fromkeys(r["endpoint"] for r in rows)):
        mine = sorted((r for r in rows if r["endpoint"] == endpoint), key=lambda r: r["load"])
        x = [r["load"] for r in mine]
        colour = "C{}".format(number)
        latency.plot(x, [1000 * r["ttft_median_s"] for r in mine], marker="o", color=colour,
                     label="{} TTFT".format(endpoint))
        latency.plot(x, [1000 * r["e2el_median_s"] for r in mine], marker="s", linestyle="--", color=colour,
                     label="{} E2EL".format(endpoint))
        goodput.plot(x, [r["goodput"] for r in mine], marker="o", color=colour, label=endpoint)
        knee = knees.get(endpoint) or {}
        if knee.get("load") is not None:
            goodput.plot([knee["load"]], [knee["goodput"]], marker="o", markersize=14, fillstyle="none",
                         color=colour, linestyle="none", label="{} knee ({:g})".format(endpoint, knee["load"]))
            latency.axvline(knee["load"], color=colour, alpha=0.3)
    for ax in (latency, goodput):
        _load_axis(ax, rows)
        ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
        ax.legend(fontsize="small")
    latency.set_yscale("log")
    latency.set_ylabel("client-side median (ms)")
    goodput.set_ylabel("goodput (requests/s meeting the targets)")
    goodput.set_ylim(bottom=0)
    fig.suptitle(_title(run, "Knee search: latency and goodput against load"), fontsize="medium")
    fig.tight_layout()
    return fig


@show_step
def show(run: Run) -> Optional[List[Any]]:
    """The tables, the plot and the notes (:func:`labkit.display.shown`: None in a kernel)."""
    shown: List[Any] = []
    if run.source == "log":
        shown.append(display.show(evidence_table(run)))
    else:
        for name, text in run.partial_rows():
            print("{}: {}".format(name, text))
        for title, table in (("Client-side figures per configuration (mean over repeats of each repeat's median)",
                              latency_table(run)),
                             ("Percentiles per configuration (client-side)", percentile_table(run)),
                             ("The server's own timings, beside the client's", server_table(run))):
            if table is not None:
                print(_title(run, title) + ":")
                shown.append(display.show(table))
        knee = plot_knee(run)
        shown.append(display.show(knee if knee is not None else plot_latency(run)))
        print("Notes:")
    for note in run.notes:
        print("-", note)
    return display.shown(shown)


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
    by_name = {e.name: e for e in endpoints}
    notes = []
    for (name, status), n in counts.items():
        text = "{} request(s) failed: {}".format(n, explain(status, name, by_name[name].base_url, timeout_s))
        if status == "404" and by_name[name].served:
            text += "; {} serves now: {}".format(name, ", ".join(by_name[name].served))
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

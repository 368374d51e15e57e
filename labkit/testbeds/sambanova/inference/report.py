"""What the inference notebook shows: client-side figures with intervals, the server's own timings
apart, latency against load, and the notes.

Every time carries its unit in its cell, in milliseconds with three significant digits as ``vllm
bench serve`` prints them, so a TPOT difference of a millisecond shows and a golden copy masks
timings and keeps counts; every table and plot of a local run says it is a stand-in, not Metis.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

from labkit.interrupts import show_step
from labkit import display
from labkit.results import Run
from labkit.testbeds.sambanova.inference.evidence import evidence_table
from labkit.testbeds.sambanova.inference.notes import STAND_IN, counts_words, load_label, rated

__all__ = ["latency_table", "percentile_table", "server_table", "plot_latency", "plot_knee", "show", "fmt_time",
           "fmt_interval"]


def fmt_time(value: Any) -> str:
    """Seconds with three significant digits: in milliseconds as ``vllm bench serve`` prints them
    ("2.14 ms", "214 ms"; whole ms past 1 s), in microseconds below a millisecond ("7.90 µs", never
    "0.00790 ms"). Every time from 1 µs to 10 s fits in seven characters, so a table of them keeps
    its width (and pandas wraps it the same way) whether the stand-in's tokens came 1 ms or 5 µs apart."""
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


def _rows(run: Run) -> List[dict]:
    return list(_details(run, "rows") or [])


def latency_table(run: Run):
    """Client-side medians (mean over repeats, 95 % interval), throughputs and counts, per configuration."""
    import pandas as pd

    served = run.environment.get("served_by") or {}
    return pd.DataFrame([{
        "endpoint": row["endpoint"], "load": load_label(row), "served by": served.get(row["endpoint"], ""),
        "requests": row["requests"], "failed": counts_words(row["failed_by_status"], "0"),
        "tokens/request": "{:.1f}".format(row["tokens_per_request"]),
        "finish reasons": counts_words(row.get("finish_reasons") or {}),
        "reasoning + answer tokens/request": "{:.1f} + {:.1f}".format(
            row.get("reasoning_tokens_per_request", float("nan")), row.get("answer_tokens_per_request",
                                                                             float("nan"))),
        "TTFT median": fmt_time(row["ttft_median_s"]), "TTFT 95% interval": fmt_interval(row["ttft_median_s_ci"]),
        "TTFT to answer median": fmt_time(row.get("ttft_answer_median_s")),
        "TPOT median": fmt_time(row["tpot_median_s"]), "TPOT 95% interval": fmt_interval(row["tpot_median_s_ci"]),
        "E2EL median": fmt_time(row["e2el_median_s"]), "E2EL 95% interval": fmt_interval(row["e2el_median_s_ci"]),
        "output throughput": _fmt_rate(row["output_throughput"], "tokens/s"),
        "output throughput 95% interval": fmt_interval(row["output_throughput_ci"], "tokens/s"),
        "request throughput": _fmt_rate(row["request_throughput"], "requests/s"),
        "goodput": _fmt_rate(row["goodput"], "requests/s")} for row in _rows(run)])


def percentile_table(run: Run):
    """Client-side TTFT, TPOT, ITL and E2EL: mean, median, p90, p99 (each a mean over repeats)."""
    import pandas as pd

    return pd.DataFrame([{"endpoint": row["endpoint"], "load": load_label(row), "figure": name.upper(),
                          "mean": fmt_time(row[name + "_mean_s"]), "median": fmt_time(row[name + "_median_s"]),
                          "p90": fmt_time(row[name + "_p90_s"]), "p99": fmt_time(row[name + "_p99_s"])}
                         for row in _rows(run) for name in ("ttft", "tpot", "itl", "e2el")])


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

    rows = _rows(run)
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
    rows = _rows(run)
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

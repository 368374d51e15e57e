"""The 2025 inference section per endpoint: each run compares endpoints, and the homework shows each one.

    endpoint_table(runs)               # one row per run, endpoint and concurrency level
    plot_endpoints(runs, "Metis/Sophia")   # TTFT, TPOT and output throughput against concurrency

An inference run records every endpoint's figures as series named ``<figure>:<endpoint>``
(x = concurrency), so what the homework shows per endpoint is what the grader re-reads. The times
are the client's (network, gateway and queueing included); the server's own stay in the
exercise's notebook.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from labkit.results import Run
from labkit.testbeds.homework.hardware import is_portable, where_it_ran

__all__ = ["endpoint_table", "plot_endpoints"]

#: (series prefix, column, unit) of the figures shown per endpoint.
FIGURES = (("ttft_median_time", "TTFT median", "s"), ("tpot_median_time", "TPOT median", "s"),
           ("e2el_median_latency", "E2EL median", "s"), ("output_throughput", "output throughput", "tokens/s"))


def _endpoints(run: Run) -> List[str]:
    names = run.params.get("endpoint_names")
    if isinstance(names, list) and names:
        return [str(n) for n in names]
    named = (key.partition(":")[2] for key in run.series)  # "<figure>:<endpoint>"
    return list(dict.fromkeys(name for name in named if name))


def _about(run: Run, endpoint: str) -> Dict[str, str]:
    for entry in run.environment.get("endpoints") or []:
        if isinstance(entry, dict) and entry.get("name") == endpoint:
            return {"model": str(entry.get("model", "")), "served by": str(entry.get("served_by", ""))}
    models = run.params.get("models") or []
    names = _endpoints(run)
    model = models[names.index(endpoint)] if endpoint in names and names.index(endpoint) < len(models) else ""
    return {"model": str(model), "served by": ""}


def endpoint_points(run: Run, endpoint: str, prefix: str) -> List[Tuple[float, float]]:
    """``[(concurrency, value)]`` of one figure of one endpoint, from the run's series."""
    series = run.series.get("{}:{}".format(prefix, endpoint)) or {}
    return [(float(x), float(y)) for x, y in zip(series.get("x") or [], series.get("y") or [])
            if isinstance(x, (int, float)) and isinstance(y, (int, float))]


def endpoint_table(runs: Sequence[Run], testbed: str = "sambanova"):
    """A pandas DataFrame: one row per run, endpoint and concurrency level, the client's medians."""
    import pandas as pd

    rows = []
    for number, run in enumerate(runs, 1):
        for endpoint in _endpoints(run):
            by_level: Dict[float, Dict[str, Any]] = {}
            for prefix, column, _unit in FIGURES:
                for level, value in endpoint_points(run, endpoint, prefix):
                    by_level.setdefault(level, {})[column] = value
            for level, values in sorted(by_level.items()):
                row = {"run": "{}_{}".format(testbed, number), "where it ran": where_it_ran(run), "endpoint": endpoint}
                row.update(_about(run, endpoint))
                row["concurrency"] = int(level)
                row.update(values)
                rows.append(row)
    columns = ["run", "where it ran", "endpoint", "model", "served by", "concurrency"] + [c for _p, c, _u in FIGURES]
    return pd.DataFrame(rows, columns=columns)


def plot_endpoints(runs: Sequence[Run], hardware: str) -> Optional[Any]:
    """TTFT, TPOT and output throughput against concurrency, a line per run and endpoint; None without series."""
    import matplotlib.pyplot as plt

    shown = [(number, run, endpoint) for number, run in enumerate(runs, 1) for endpoint in _endpoints(run)
             if endpoint_points(run, endpoint, FIGURES[0][0])]
    if not shown:
        return None
    figures = [f for f in FIGURES if f[0] != "e2el_median_latency"]
    fig, axes = plt.subplots(1, len(figures), figsize=(4.6 * len(figures), 4.2), squeeze=False)
    for ax, (prefix, column, unit) in zip(axes[0], figures):
        for number, run, endpoint in shown:
            points = endpoint_points(run, endpoint, prefix)
            portable = is_portable(run)
            label = "sambanova_{} {} ({})".format(number, endpoint, "{}: a model, not {}".format(
                where_it_ran(run), hardware) if portable else "measured: " + where_it_ran(run))
            ax.plot([x for x, _ in points], [y for _, y in points], marker="o", linestyle="--" if portable else "-",
                    label=label)
        levels = sorted({x for _n, run, endpoint in shown for x, _ in endpoint_points(run, endpoint, prefix)})
        ax.set_xticks(levels)
        ax.set_xticklabels(["{:g}".format(v) for v in levels], fontsize=8)
        ax.set_xlabel("concurrency (requests in flight)")
        ax.set_ylabel("client-side {} ({})".format(column, unit))
        ax.set_ylim(bottom=0)
        ax.set_title("{} against concurrency".format(column), fontsize=10)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=min(2, len(labels)), frameon=False)
    fig.suptitle("sambanova/inference: each endpoint, as the client measured it", fontsize=10)
    fig.tight_layout(rect=(0, 0.06 * ((len(labels) + 1) // 2), 1, 1))
    plt.close(fig)  # the notebook shows the returned figure once
    return fig

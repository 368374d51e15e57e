"""The homework's comparison of a testbed's runs: a table and a plot, each run labelled with where it ran.

The plot is bars, one group per run; or, for a section that names a parameter (``against``), its
metrics against that parameter (:func:`plot_against`); or the section's own (2025 inference: each
endpoint's figures, :func:`endpoint_table` and :func:`plot_endpoints`). Portable runs are hatched or
dashed and named in a warning, never passed off as the testbed's speed.

An inference run records every endpoint's figures as series named ``<figure>:<endpoint>``
(x = concurrency), so what the homework shows per endpoint is what the grader re-reads. The times
are the client's (network, gateway and queueing included); the server's own stay in the
exercise's notebook.
"""

from __future__ import annotations

import os
import statistics
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from labkit.interrupts import show_step
from labkit import display
from labkit.results import Run
from labkit.testbeds.homework.exercise import runs_of
from labkit.testbeds.homework.hardware import is_portable, where_it_ran
from labkit.testbeds.homework.homeworks import Section, homework_for_runs, homework_of

__all__ = ["comparison", "plot", "plot_against", "points_against", "show", "show_testbed", "overview", "nothing_yet",
           "endpoint_table", "plot_endpoints"]


def comparison(testbed: str, runs: Sequence[Run], homework: Any = None):
    """A pandas DataFrame comparing the runs: where each ran, its file, changed parameters, key metrics, status.

    ``homework``: whose section (found from the runs' exercise when not given).
    """
    import pandas as pd

    section = homework_for_runs(testbed, runs, homework).section_for(testbed)
    rows = []
    for number, run in enumerate(runs, 1):
        source = run.params.get("log") or run.params.get("evidence") or ""
        row = {"run": "{}_{}".format(testbed, number), "where it ran": where_it_ran(run),
               "from": os.path.basename(str(source))}
        row.update({p: run.params.get(p) for p in section.params})
        row.update({m: run.metrics.get(m) for m in section.metrics})
        row["status"] = run.status
        rows.append(row)
    columns = ["run", "where it ran", "from"] + list(section.params) + list(section.metrics) + ["status"]
    table = pd.DataFrame(rows, columns=columns)
    return table.dropna(axis=1, how="all") if rows else table


def _bar_label(section: Section, number: int, run: Run) -> str:
    # One parameter a line: three side by side ran into the next bar's label.
    changed = "\n".join("{}={}".format(p, run.params[p]) for p in section.params if p in run.params)
    return "{}\n[{}]".format(changed or "run {}".format(number), where_it_ran(run))


def plot(testbed: str, runs: Sequence[Run], homework: Any = None):
    """Bars of the testbed's key metric(s), one group per run, labelled with where it ran (portable
    runs hatched); None without a run to show."""
    import matplotlib.pyplot as plt

    book = homework_for_runs(testbed, runs, homework)
    section = book.section_for(testbed)
    hardware = book.hardware.get(testbed, testbed)
    if section.detail_plot is not None:
        return section.detail_plot(runs, hardware)
    if section.against:
        return plot_against(section, runs, hardware)
    metrics = [m for m in section.plotted if any(isinstance(r.metrics.get(m), (int, float)) for r in runs)]
    shown = [r for r in runs if any(isinstance(r.metrics.get(m), (int, float)) for m in metrics)]
    if not shown:
        return None
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(shown) * len(metrics)), 4.2))
    width = 0.8 / len(metrics)
    colors = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"]
    legend = {}
    for m_index, metric in enumerate(metrics):
        for r_index, run in enumerate(shown):
            value = run.metrics.get(metric)
            if not isinstance(value, (int, float)):
                continue
            portable = is_portable(run)
            bar = ax.bar(r_index + (m_index - (len(metrics) - 1) / 2.0) * width, float(value), width,
                         color=colors[m_index % len(colors)], alpha=0.55 if portable else 1.0,
                         hatch="//" if portable else None, edgecolor="#333333")
            key = "{} ({})".format(metric, "portable: a model, not the {}".format(hardware)
                                   if portable else "measured on the {}".format(where_it_ran(run)))
            legend.setdefault(key, bar)
    ax.set_xticks(range(len(shown)))
    ax.set_xticklabels([_bar_label(section, i, r) for i, r in enumerate(shown, 1)], fontsize=8)
    unit = next((r.units.get(metrics[0]) for r in shown if r.units.get(metrics[0])), None)
    ax.set_ylabel((metrics[0] + (" ({})".format(unit) if unit else "")) if len(metrics) == 1 else "value")
    ax.set_title("{}: {} per run".format(section.exercise, ", ".join(metrics)))
    # Below the axes, never over a bar: "best" still covered the tallest bar in the browser test.
    ax.legend(list(legend.values()), list(legend), fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.35), ncol=min(2, len(legend)), frameon=False)
    fig.tight_layout()
    plt.close(fig)  # the notebook shows the returned figure once
    return fig


def points_against(section: Section, runs: Sequence[Run], metric: str) -> Dict[str, List[Tuple[float, float]]]:
    """``{where it ran: [(parameter value, metric value), ...]}`` sorted by the parameter, for runs that have both."""
    found: Dict[str, List[Tuple[float, float]]] = {}
    for run in runs:
        x, y = run.params.get(section.against), run.metrics.get(metric)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y)):
            found.setdefault(where_it_ran(run), []).append((float(x), float(y)))
    return {where: sorted(points) for where, points in found.items()}


def plot_against(section: Section, runs: Sequence[Run], hardware: str):
    """One panel per plotted metric against ``section.against`` (2025: GlobalRate and tokens/s against the
    batch size), one line per place the runs ran; None when no run has both numbers.

    Runs at the same value (repeats) are all drawn; the line joins their medians. Portable runs are
    drawn with open markers and dashed lines, and the legend says they model the exercise, not the
    hardware: a CPU's samples/s never sits on the same line as the CS-3's.
    """
    import matplotlib.pyplot as plt

    panels = [(m, points_against(section, runs, m)) for m in section.plotted]
    panels = [(m, p) for m, p in panels if p]
    if not panels:
        return None
    portable_of = {where_it_ran(r): is_portable(r) for r in runs}
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    colors = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3"]
    color_of = {where: colors[i % len(colors)] for i, where in enumerate(sorted(portable_of))}  # same in every panel
    for ax, (metric, by_where) in zip(axes[0], panels):
        for where, points in sorted(by_where.items()):
            portable = portable_of.get(where, False)
            color = color_of[where]
            label = "{}: a model, not the {}".format(where, hardware) if portable else "measured on the {}".format(where)
            ax.scatter([x for x, _ in points], [y for _, y in points], color=color, marker="o",
                       facecolors="none" if portable else color, zorder=3)
            xs = sorted({x for x, _ in points})  # the line joins the medians of the repeats at each x
            ax.plot(xs, [statistics.median(y for x, y in points if x == at) for at in xs], color=color,
                    linestyle="--" if portable else "-", label=label)
        values = sorted({x for points in by_where.values() for x, _ in points})
        if len(values) > 1 and values[0] > 0 and values[-1] / values[0] >= 8:
            ax.set_xscale("log", base=2)  # batch sizes double: equal steps for each doubling
        ax.set_xticks(values)
        ax.set_xticklabels(["{:g}".format(v) for v in values], fontsize=8)
        unit = next((r.units.get(metric) for r in runs if r.units.get(metric)), None)
        ax.set_xlabel(section.against)
        ax.set_ylabel(metric + (" ({})".format(unit) if unit else ""))
        ax.set_ylim(bottom=0)
        ax.set_title("{} against {}".format(metric, section.against), fontsize=10)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    fig.suptitle("{}: {} runs".format(section.exercise, len(runs)), fontsize=10)
    fig.tight_layout()
    plt.close(fig)  # the notebook shows the returned figure once
    return fig


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


def nothing_yet(testbed: str, homework: Any = None) -> str:
    """What to run, and where to put it, for a testbed with no runs yet (in ``homework``'s section)."""
    section = homework_of(homework).section_for(testbed)
    return ("No runs of {ex} yet, so there is nothing to compare. Either\n"
            "  - portably, on a laptop or a GPU node (about five minutes on 2 cores), from the lab book's folder:\n"
            "      {portable}\n"
            "    and put runs/{tb}/ beside this notebook; or\n"
            "  - on the testbed: run {testbed}, and copy the logs into logs/{tb}/ beside this notebook\n"
            "    (or run the lab book's notebook there with `labkit sweep ... --out runs/{tb}`).\n"
            "Then run this notebook again.").format(ex=section.exercise, portable=section.portable, tb=testbed,
                                                    testbed=section.testbed)


@show_step
def show_testbed(testbed: str, runs: Union[Run, Sequence[Run]], homework: Any = None) -> Optional[List[Any]]:
    """The comparison table and plot, with a warning about portable runs; or, without runs, what to run.

    ``runs``: a list, or the homework's Run (:func:`labkit.testbeds.homework.run_exercise`).
    """
    book = homework_for_runs(testbed, runs, homework)
    runs = runs_of(testbed, runs)
    if not runs:
        print(nothing_yet(testbed, book))
        return display.shown([])
    table = display.show(comparison(testbed, runs, book))
    section = book.section_for(testbed)
    detail = None if section.detail_table is None else display.show(section.detail_table(runs, testbed))
    portable = sorted({where_it_ran(r) for r in runs if is_portable(r)})
    hardware = book.hardware.get(testbed, testbed)
    if portable:
        print("Runs marked {} ran the exercise's portable stand-in, not the {}: they model the exercise (same model, "
              "same parameters, same metrics); their times and speeds say nothing about the {}.".format(
                  " and ".join(portable), hardware, hardware))
    # the runs' own notes (a cached compile, a run that stopped early ...), each once
    for note in dict.fromkeys(note for run in runs for note in run.notes) if book.run_notes else []:
        print("Note:", note)
    fig = plot(testbed, runs, book)
    shown = [table] + ([detail] if section.detail_table is not None else [])
    return display.shown(shown + [None if fig is None else display.show(fig)])


def overview(run: Run):
    """One row per testbed: how many runs were found, where they ran, and from which kind of source."""
    import pandas as pd

    rows = []
    for testbed in homework_of(run).testbeds:
        runs = runs_of(testbed, run)
        rows.append({"testbed": testbed, "runs": len(runs),
                     "where they ran": ", ".join(sorted({where_it_ran(r) for r in runs})) or "-",
                     "from testbed logs": sum(1 for r in runs if "log" in r.params),
                     "from lab-book notebooks": sum(1 for r in runs if "evidence" in r.params)})
    return pd.DataFrame(rows).set_index("testbed")


@show_step
def show(run: Run) -> Optional[List[Any]]:
    """The notebook's show step: :func:`overview` of the homework's Run, and its notes."""
    table = display.show(overview(run))
    for note in run.notes:
        print("Note:", note)
    return display.shown([table])

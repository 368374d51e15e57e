"""A homework section's metrics against the parameter students change (2025: GlobalRate and tokens/s
against the batch size), one line per place the runs ran.

    from labkit.testbeds.homework.against import plot_against
    fig = plot_against(exercise, runs, "CS-3")      # one panel per plotted metric; None without numbers

Runs at the same value (repeats) are all drawn; the line joins their medians. Portable runs are
drawn with open markers and dashed lines, and the legend says they model the exercise, not the
hardware: a CPU's samples/s never sits on the same line as the CS-3's.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Sequence, Tuple

from labkit.results import Run
from labkit.testbeds.homework.spec import Exercise
from labkit.testbeds.homework.where import is_portable, where_it_ran

__all__ = ["plot_against", "points_against"]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def points_against(exercise: Exercise, runs: Sequence[Run], metric: str) -> Dict[str, List[Tuple[float, float]]]:
    """``{where it ran: [(parameter value, metric value), ...]}`` sorted by the parameter, for runs that have both."""
    found: Dict[str, List[Tuple[float, float]]] = {}
    for run in runs:
        x, y = run.params.get(exercise.against), run.metrics.get(metric)
        if _number(x) and _number(y):
            found.setdefault(where_it_ran(run), []).append((float(x), float(y)))
    return {where: sorted(points) for where, points in found.items()}


def _medians(points: List[Tuple[float, float]]) -> List[Tuple[float, float]]:
    by_x: Dict[float, List[float]] = {}
    for x, y in points:
        by_x.setdefault(x, []).append(y)
    return [(x, statistics.median(ys)) for x, ys in sorted(by_x.items())]


def plot_against(exercise: Exercise, runs: Sequence[Run], hardware: str):
    """One panel per plotted metric against ``exercise.against``; None when no run has both numbers."""
    import matplotlib.pyplot as plt

    panels = [(m, points_against(exercise, runs, m)) for m in exercise.plotted]
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
            line = _medians(points)
            ax.plot([x for x, _ in line], [y for _, y in line], color=color, linestyle="--" if portable else "-",
                    label=label)
        values = sorted({x for points in by_where.values() for x, _ in points})
        if len(values) > 1 and values[0] > 0 and values[-1] / values[0] >= 8:
            ax.set_xscale("log", base=2)  # batch sizes double: equal steps for each doubling
        ax.set_xticks(values)
        ax.set_xticklabels(["{:g}".format(v) for v in values], fontsize=8)
        unit = next((r.units.get(metric) for r in runs if r.units.get(metric)), None)
        ax.set_xlabel(exercise.against)
        ax.set_ylabel(metric + (" ({})".format(unit) if unit else ""))
        ax.set_ylim(bottom=0)
        ax.set_title("{} against {}".format(metric, exercise.against), fontsize=10)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    fig.suptitle("{}: {} runs".format(exercise.exercise, len(runs)), fontsize=10)
    fig.tight_layout()
    plt.close(fig)  # the notebook shows the returned figure once
    return fig

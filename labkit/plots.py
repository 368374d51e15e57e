"""Plots that the exercises share: training curves, and a metric against a parameter.

    from labkit import plots
    plots.training_curves(result.run)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from labkit.display import show
from labkit.results import Run

__all__ = ["training_curves", "metric_against"]


def training_curves(run: Run, title: Optional[str] = None):
    """Loss and accuracy per step, with epoch boundaries marked (shown in a notebook; returned
    as a figure elsewhere)."""
    import matplotlib.pyplot as plt

    names = [n for n in ("loss", "accuracy") if n in run.series]
    if not names:
        print("This run recorded no per-step loss or accuracy, so there is nothing to plot.")
        return None
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 3.6), squeeze=False)
    per_epoch = run.metrics.get("steps_per_epoch")
    for ax, name in zip(axes[0], names):
        series = run.series[name]
        ax.plot(series["x"], series["y"], lw=1.2)
        ax.set_xlabel(series.get("x_label", "step"))
        ax.set_ylabel(name + (" (%)" if name == "accuracy" else ""))
        ax.grid(alpha=0.3)
        if per_epoch and series["x"]:
            for boundary in range(int(per_epoch), int(max(series["x"])), int(per_epoch)):
                ax.axvline(boundary + 0.5, color="grey", lw=0.5, ls=":")
    fig.suptitle((title or "{} ({}, {})".format(run.exercise, run.source, run.params.get("device", "")))
                 + run.partial_title())
    fig.tight_layout()
    return show(fig)


def metric_against(table: Any, x: str, y: str, group: Optional[str] = None, ax: Any = None,
                   xlog: bool = False, labels: Sequence[str] = ()):
    """``y`` against ``x`` from a DataFrame (one line per ``group``), with points marked."""
    import matplotlib.pyplot as plt

    if ax is None:
        _fig, ax = plt.subplots(figsize=(6, 3.8))
    groups = [(None, table)] if group is None else list(table.groupby(group))
    for key, rows in groups:
        rows = rows.sort_values(x)
        ax.plot(rows[x], rows[y], marker="o", label=None if key is None else "{} = {}".format(group, key))
    ax.set_xlabel(labels[0] if labels else x)
    ax.set_ylabel(labels[1] if len(labels) > 1 else y)
    if xlog:
        ax.set_xscale("log", base=2)
    if group is not None:
        ax.legend()
    ax.grid(alpha=0.3)
    return show(ax.figure) and ax

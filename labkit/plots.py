"""Plots that the exercises share: training curves, and the loss of a modelzoo-style run.

    from labkit import plots
    plots.training_curves(result.run)
    plots.loss_curve(run, "loss (masked LM + next sentence)", "log run, batch size 1024")
"""

from __future__ import annotations

from typing import Optional

from labkit.display import show
from labkit.results import Run

__all__ = ["training_curves", "loss_curve"]


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


def loss_curve(run: Run, ylabel: str, title: str):
    """The run's ``loss`` series against the step (every step of a portable run, every report of a
    log), titled ``title`` plus the run's partial-run note."""
    import matplotlib.pyplot as plt

    series = run.series.get("loss")
    fig, ax = plt.subplots(figsize=(6, 3.4))
    if series:
        ax.plot(series["x"], series["y"], "-", marker="o" if len(series["x"]) <= 20 else None)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title + run.partial_title())
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return show(fig)

"""What the MNIST notebook shows: a run's metrics and training curves, and the tutorial's network."""

from __future__ import annotations

from typing import Any, List, Optional

from labkit.interrupts import show_step
from labkit import display, plots
from labkit.results import Run

__all__ = ["show", "model_summary"]


@show_step
def show(run: Run) -> Optional[List[Any]]:
    """The run's metrics with their units, then its loss and accuracy curves."""
    # a log without per-step values: training_curves says so instead of drawing
    return display.shown([display.show(run.table()), plots.training_curves(run)])


def model_summary():
    """The tutorial's network, layer by layer, as a table (the total is the last row)."""
    import pandas as pd

    # PyTorch loads only here: show() of a run read from a log needs none of it
    from labkit.testbeds.graphcore.model import Network, summary

    rows = summary(Network())
    rows.append({"layer": "total", "type": "", "output shape": "", "parameters": sum(r["parameters"] for r in rows)})
    return pd.DataFrame(rows).set_index("layer")

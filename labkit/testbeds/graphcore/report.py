"""What the MNIST notebook shows: a run's metrics and training curves, and the tutorial's network."""

from __future__ import annotations

import functools
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
    import torch

    # PyTorch loads only here: show() of a run read from a log needs none of it
    from labkit.testbeds.graphcore.model import Network

    network, rows = Network().eval(), []

    def record(layer, _inputs, output, name):
        rows.append({"layer": name, "type": type(layer).__name__, "output shape": tuple(output.shape),
                     "parameters": sum(p.numel() for p in layer.parameters())})

    for name, layer in network.named_modules():
        if not list(layer.children()):  # the leaves, in the order the forward pass reaches them
            layer.register_forward_hook(functools.partial(record, name=name))
    with torch.no_grad():
        network(torch.zeros(1, 1, 28, 28))
    rows.append({"layer": "total", "type": "", "output shape": "", "parameters": sum(r["parameters"] for r in rows)})
    return pd.DataFrame(rows).set_index("layer")

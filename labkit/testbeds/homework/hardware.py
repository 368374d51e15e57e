"""Where a run ran: the hardware label every table, plot, feedback page and gradebook row uses.

A run read from a testbed log, or made through the vendor's stack (``Run.source`` "log" or
"testbed"), is a measurement of the testbed and carries its hardware ("IPU", "CS-2", ...). Any
other run is ``portable: CPU`` or ``portable: GPU``: a model of the exercise on a stand-in device.
"""

from __future__ import annotations

from typing import Any, Mapping, Union

from labkit import exercises
from labkit.results import Run

__all__ = ["where_it_ran", "is_portable", "PORTABLE_CPU", "PORTABLE_GPU"]

PORTABLE_CPU = "portable: CPU"
PORTABLE_GPU = "portable: GPU"
_GPU_DEVICES = ("cuda", "mps", "gpu", "rocm", "xpu")


def where_it_ran(run: Union[Run, Mapping[str, Any]]) -> str:
    """The label of ``run`` (a :class:`Run` or its recorded dict); see the module docstring."""
    run = run if isinstance(run, Run) else Run.from_dict(run)
    device = str(run.environment.get("device") or run.params.get("device") or "").lower()
    if run.source in ("log", "testbed"):
        return exercises.hardware(run.exercise)  # the registry's label: "CS-2", "CS-3", "Metis/Sophia", ...
    if device.startswith("ipu"):  # the scaling study's IPU path records source "portable"
        return "IPU"
    # GroqFlow's host backends name their device in the metric names (cuda_accuracy, ...)
    on_gpu = device.startswith(_GPU_DEVICES) or any(m.startswith("cuda_") for m in run.metrics)
    return PORTABLE_GPU if on_gpu else PORTABLE_CPU


def is_portable(run: Union[Run, Mapping[str, Any]]) -> bool:
    """True for a run that models the exercise on a stand-in device rather than measuring the testbed."""
    return where_it_ran(run).startswith("portable")


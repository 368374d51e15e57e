"""The plan step every exercise notebook shows: where the run will happen, and why, before it starts.

Every exercise's ``plan(config)`` returns a :class:`RunPlan` (subclassed where an exercise needs
more fields) and its ``run_exercise(config, plan)`` follows it. A plan decides, it never trains:
an impossible request (``device='ipu'`` without an IPU) fails here, before anything is loaded.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, List

__all__ = ["RunPlan", "device_why"]


@dataclass(repr=False)
class RunPlan:
    """Where a run will happen (``where``), why there (``why``), and what the run step follows.

    ``path`` is what ``run_exercise`` does: "log" (read ``log_path``), "testbed" (the vendor's
    stack), "portable" (labkit's PyTorch path) or an exercise's own word; ``device`` the torch
    device or "ipu"; ``more``: further lines to show (a request, the backends, what was found).
    Shown as text (papermill, a terminal) or HTML (JupyterLab).
    """

    path: str
    where: str
    why: str
    device: Any = None
    more: List[str] = field(default_factory=list)

    def lines(self) -> List[str]:
        return ["Where: " + self.where, "Why: " + self.why] + list(self.more)

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        rows = ["<b>Where:</b> " + html.escape(self.where), "<b>Why:</b> " + html.escape(self.why)]
        rows += [html.escape(line) for line in self.more]
        return "<div class=\"labkit-plan\">{}</div>".format("<br>".join(rows))


def device_why(parameter: str, requested: str, device: Any) -> str:
    """Why a portable run uses ``device``: asked for by name, or the best of CUDA, MPS and CPU."""
    kind = getattr(device, "type", str(device))
    if requested != "auto":
        return "{}={!r} was asked for".format(parameter, requested)
    if kind == "cuda":
        return "{}='auto' takes a CUDA GPU when torch sees one, and it does".format(parameter)
    if kind == "mps":
        return "{}='auto' takes Apple MPS when there is no CUDA GPU".format(parameter)
    return "{}='auto' takes a CUDA GPU or Apple MPS when there is one; there is none here, so the CPU".format(parameter)

"""The one rule for calling a training run *diverged*, used by every exercise, log reader and study.

A run diverged when its loss became NaN or infinite, or rose far above where it started
(more than ``EXPLODE_FACTOR`` times the first finite loss, and above ``EXPLODE_FLOOR`` so that
a loss wobbling near zero is not called an explosion). A run that merely ended near chance
accuracy did *not* diverge: it is complete, and its notes say what is known (see
``labkit.testbeds.graphcore``).
"""
import math
from typing import Iterable, Optional

__all__ = ["EXPLODE_FACTOR", "EXPLODE_FLOOR", "loss_divergence", "is_diverged"]

# Why 10: on the course's logs a healthy loss never rises above its start (cross-entropy
# starts near ln(10) = 2.30 for MNIST, about 11 for BERT's masked LM), while the exploded
# runs of the IPU-vs-GPU study reached 1e3 to 1e17.
EXPLODE_FACTOR = 10.0
EXPLODE_FLOOR = 1.0


def loss_divergence(losses: Iterable[float]) -> Optional[str]:
    """``None`` when ``losses`` show no divergence, else a short reason such as ``"loss nan"``.

    Reasons: ``"loss nan"``, ``"loss inf"`` (the first non-finite value decides) and
    ``"loss exploded"`` (max finite loss > EXPLODE_FACTOR x the first finite loss and > EXPLODE_FLOOR).
    """
    first = None
    peak = None
    for value in losses:
        value = float(value)
        if math.isnan(value):
            return "loss nan"
        if math.isinf(value):
            return "loss inf"
        if first is None:
            first = value
        peak = value if peak is None else max(peak, value)
    if first is None:
        return None
    if peak > EXPLODE_FLOOR and peak > EXPLODE_FACTOR * max(first, 0.0):
        return "loss exploded"
    return None


def is_diverged(losses: Iterable[float]) -> bool:
    """True when :func:`loss_divergence` finds a reason."""
    return loss_divergence(losses) is not None

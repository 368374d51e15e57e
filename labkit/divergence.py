"""The one rule for calling a training run *diverged*, used by every exercise, log reader and study.

    loss_divergence([2.30, 2.29, float("nan")])   # "loss nan"
    loss_divergence([2.30, 9.1, 41.0])            # "loss exploded"
    loss_divergence([2.28, 2.40, 2.38])           # None: a saturated run, not a diverged one

A run diverged when its loss became NaN or infinite, or rose above ``EXPLODE_FACTOR`` times the
first finite loss (and above ``EXPLODE_FLOOR``, so a loss wobbling near zero is no explosion).
Nothing else is: a run that ended near chance accuracy is complete, and its exercise's notes say
what is known (``labkit.testbeds.graphcore.record``).

Why 10 (tests/test_divergence.py checks it on every real log in ../shared/fixtures): no healthy
run in the course's logs logs a loss above its first by more than 1 % (MNIST starts near
ln 10 = 2.30, BERT's masked LM near 9.5 on Cerebras and 11.2 on SambaNova); the worst real run,
the student MNIST run at learning rate 3 (10.10 % test accuracy), peaks at 2.40 from 2.28, a
factor of 1.05: saturated, not diverged. No real log has a runaway loss, so the upper side is not
calibrated on one: a loss that runs away under SGD grows by orders of magnitude before it turns
inf or NaN. 10 leaves a wide margin, and a bounded loss such as the tutorial's double softmax (at
most ln(9 + e) = 2.46 from 2.30) can never reach it.
"""
import math
from typing import Iterable, Optional, Sequence

__all__ = ["EXPLODE_FACTOR", "EXPLODE_FLOOR", "loss_divergence", "divergence_note",
           "loss_trend", "TREND_FALLING", "TREND_RISING", "TREND_FLAT"]

EXPLODE_FACTOR = 10.0
EXPLODE_FLOOR = 1.0

TREND_FALLING, TREND_RISING, TREND_FLAT = "falling", "rising", "no clear trend"


def _first_bad(losses: Iterable[float]):
    """(reason, index of the value that decided, first finite loss, peak finite loss)."""
    first = None
    peak = None
    for index, value in enumerate(losses):
        value = float(value)
        if math.isnan(value):
            return "loss nan", index, first, peak
        if math.isinf(value):
            return "loss inf", index, first, peak
        if first is None:
            first = value
        peak = value if peak is None else max(peak, value)
    if first is None:
        return None, None, None, None
    if peak > EXPLODE_FLOOR and peak > EXPLODE_FACTOR * max(first, 0.0):
        return "loss exploded", None, first, peak
    return None, None, first, peak


def loss_divergence(losses: Iterable[float]) -> Optional[str]:
    """``None`` when ``losses`` show no divergence, else the reason: ``"loss nan"``, ``"loss inf"`` (the
    first non-finite value decides) or ``"loss exploded"`` (by the rule in this module's docstring)."""
    return _first_bad(losses)[0]


def divergence_note(losses: Sequence[float], where: str = "logged value", advice: str = "Lower the learning rate.") -> str:
    """The sentence every exercise and log reader prints for a diverged run ("" when it did not diverge).

    ``where`` names what one loss value is ("step", "epoch", "logged value"), so the note can
    say at which one the loss went bad.
    """
    losses = [float(v) for v in losses]
    reason, index, first, peak = _first_bad(losses)
    if reason is None:
        return ""
    if reason == "loss exploded":
        text = ("The loss rose from {:.4g} to {:.4g}, more than {:g} times where it started: the run diverged "
                "(exploding loss).".format(first, peak, EXPLODE_FACTOR))
    else:
        text = "The loss became {} at {} {} of {}: the run diverged; later numbers mean nothing.".format(
            "NaN" if reason == "loss nan" else "infinite", where, index + 1, len(losses))
    return text + (" " + advice if advice else "")


def loss_trend(losses: Sequence[float]) -> str:
    """Was the loss still moving at the end? ``"falling"``, ``"rising"`` or ``"no clear trend"``.

    A least-squares line through the last half of the values (all of them when there are fewer
    than 16); the trend is "falling"/"rising" only when the slope is at least twice its standard
    error, so step-to-step noise is not read as learning. Non-finite values are ignored.
    """
    values = [float(v) for v in losses if math.isfinite(float(v))]
    if len(values) >= 16:
        values = values[len(values) // 2:]
    n = len(values)
    if n < 3:
        if n == 2 and values[1] != values[0]:
            return TREND_FALLING if values[1] < values[0] else TREND_RISING
        return TREND_FLAT
    xs = list(range(n))
    mx, my = sum(xs) / n, sum(values) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, values)) / sxx
    residual = sum((y - (my + slope * (x - mx))) ** 2 for x, y in zip(xs, values))
    se = math.sqrt(residual / (n - 2) / sxx)
    if se == 0.0:
        return TREND_FLAT if slope == 0.0 else (TREND_FALLING if slope < 0 else TREND_RISING)
    if abs(slope) < 2.0 * se:
        return TREND_FLAT
    return TREND_FALLING if slope < 0 else TREND_RISING

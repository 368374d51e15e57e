"""What an MNIST run's numbers say about it, the same words for a run made here and one read from a
log: diverged, or complete with the notes that apply.

Only the loss decides *diverged* (:mod:`labkit.divergence`: NaN, infinite, or more than 10x its
start). A run that ends near chance accuracy without that is a **complete** run: it counts in
sweep statistics, and its note says what is known and which way the evidence points.

The evidence comes from the tutorial's loss. ``mnist_poptorch.py`` applies a softmax and then
``CrossEntropyLoss``, which applies another, so the loss is bounded: a uniform output (the
untrained start) gives ln 10 = 2.303, a confident right answer ln(e + 9) - 1 = 1.46, a
confident *wrong* one ln(e + 9) = 2.46. So a loss still at 2.30 means the outputs have barely
moved from uniform (a low rate learns slowly: more epochs or a higher rate), while a loss
stuck *above* 2.30 means the outputs saturated on wrong classes, where this double softmax has
almost no gradient (a high rate did that: lower it). The student run at learning rate 3 in
../shared/fixtures (10.10 %) hovers at 2.38; labkit's run at 0.001 for 300 updates stays at 2.303.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from labkit.divergence import TREND_FALLING, divergence_note, loss_divergence, loss_trend
from labkit.results import Run

__all__ = ["judge", "near_chance_note", "NEAR_CHANCE_ACCURACY", "UNIFORM_LOSS", "SATURATED_MARGIN",
           "TUTORIAL_LEARNING_RATE"]

#: Below this test accuracy (%) a 10-class model is "near chance" (chance is 10 %).
NEAR_CHANCE_ACCURACY = 20.0
#: ``mnist_poptorch.py``'s default learning rate: the line between "low" and "high" in the notes.
TUTORIAL_LEARNING_RATE = 0.03
#: The double-softmax loss of a uniform output: ln 10.
UNIFORM_LOSS = math.log(10.0)
#: A late loss (mean of the last half) this far above ln 10 means saturated outputs: near the
#: start the step-to-step noise is a few thousandths; saturated runs sit 0.03 (labkit, rate 3,
#: one short epoch) to 0.08 (the student log at rate 3, 20 epochs) above.
SATURATED_MARGIN = 0.02


def _finite_mean(losses: Sequence[float]) -> float:
    finite = [v for v in losses if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else float("nan")


def near_chance_note(accuracy: float, losses: Sequence[float], updates: Optional[int],
                     learning_rate: Optional[float]) -> str:
    """The note for a run that ended near chance without diverging (see the module docstring)."""
    late = _finite_mean(losses[len(losses) // 2:])  # the last half
    trend = loss_trend(losses) if losses else None
    parts = ["Test accuracy {:.2f}% is near chance (10%), but the loss never became NaN or exploded: the run "
             "did not diverge; it is complete and counts in comparisons.".format(accuracy)]
    made = "{} weight update{}".format(updates, "" if updates == 1 else "s") if updates else "its updates"
    rate = " at learning rate {:g}".format(learning_rate) if learning_rate is not None else ""
    if not losses:
        parts.append("The log shows no loss values, so whether it saturated (a high learning rate: lower it) or "
                     "learns slowly (a low one: more epochs or a higher rate) cannot be told from it.")
        return " ".join(parts)
    start = _finite_mean(losses[:max(1, len(losses) // 4)])  # the first quarter
    parts.append("After {}{} the loss went from {:.4f} to {:.4f} (means of the first quarter and the last half of "
                 "the logged values) and is {} at the end.".format(
                     made, rate, start, late,
                     "still falling" if trend == TREND_FALLING else ("rising" if trend == "rising" else "not clearly falling")))
    if late > UNIFORM_LOSS + SATURATED_MARGIN:
        parts.append("That is above ln 10 = 2.303, the loss of a uniform guess: the outputs are saturated on wrong "
                     "classes. The tutorial's softmax before CrossEntropyLoss saturates at high learning rates and "
                     "then has almost no gradient, so more epochs will not help: lower the learning rate.")
    elif trend == TREND_FALLING:
        parts.append("That is at or below ln 10 = 2.303 (a uniform guess) and still falling: the outputs have not "
                     "saturated and the network is still learning, slowly. More epochs or a higher learning rate "
                     "should help (a low rate learns slowly; one far above the tutorial's {:g} risks saturating)."
                     .format(TUTORIAL_LEARNING_RATE))
    else:
        parts.append("That is about ln 10 = 2.303, the loss of a uniform guess: the outputs have barely moved from "
                     "where they started and have not saturated (a saturated run sits above ln 10).")
        if learning_rate is None or learning_rate <= TUTORIAL_LEARNING_RATE:
            parts.append("This is how a low learning rate looks: it learns slowly. More epochs or a higher learning "
                         "rate should help.")
        else:
            parts.append("At a rate above the tutorial's {:g} this is not slow learning: the loss wobbles without "
                         "settling. More epochs will show whether it learns or saturates (a loss above ln 10: then "
                         "lower the learning rate).".format(TUTORIAL_LEARNING_RATE))
    return " ".join(parts)


def judge(run: Run, updates: Optional[int] = None, learning_rate: Optional[float] = None,
          losses: Optional[Sequence[float]] = None, where: str = "step") -> None:
    """Set ``run.status`` to "diverged" by the one rule, or add the near-chance note; never the reverse.

    ``losses`` default to the run's "loss" series. ``updates`` is the number of weight updates
    made (micro-batches), ``learning_rate`` the rate used; both go into the note when known.
    """
    if losses is None:
        losses = run.series.get("loss", {}).get("y", [])
    losses = [float(v) for v in losses]
    if loss_divergence(losses):
        run.status = "diverged"
        run.notes.append(divergence_note(losses, where=where))
        return
    accuracy = run.metrics.get("test_accuracy")
    if isinstance(accuracy, (int, float)) and not isinstance(accuracy, bool) and accuracy < NEAR_CHANCE_ACCURACY:
        run.notes.append(near_chance_note(float(accuracy), losses, updates, learning_rate))

"""The record an MNIST run makes, the same on an IPU and on plain PyTorch, so their runs sit in one table;
and what its numbers say (:func:`judge`: diverged by the loss alone, or complete with a near-chance note),
the same words for a run read from a log (docs/graphcore.md, Metrics recorded).

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
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from labkit import devices
from labkit.divergence import TREND_FALLING, divergence_note, loss_divergence, loss_trend
from labkit.params import Config
from labkit.results import Run
from labkit.testbeds.graphcore.spec import EXERCISE
from labkit.testbeds.graphcore.metrics import METRICS

__all__ = ["StepRecord", "TrainHistory", "MnistResult", "finish_run", "cut_test_pass", "finish", "judge",
           "near_chance_note", "NEAR_CHANCE_ACCURACY", "UNIFORM_LOSS", "SATURATED_MARGIN",
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


@dataclass
class StepRecord:
    epoch: int
    step: int  # 1-based, across epochs
    loss: float  # mean over the step's micro-batches
    accuracy: float  # % over the step's samples


@dataclass
class TrainHistory:
    steps: List[StepRecord] = field(default_factory=list)
    epoch_seconds: List[float] = field(default_factory=list)
    warmup_seconds: float = 0.0  # the first step: allocator and kernel selection, not training speed
    steady_seconds: float = 0.0  # every later step
    steady_samples: int = 0
    steps_per_epoch: int = 0
    samples_per_epoch: int = 0
    training: bool = False  # the loop has begun: from here an interrupt keeps the steps
    interrupted: str = ""  # "interrupted at epoch 2/10, step 40/150" when an interrupt ended it early
    launch: str = "eager"  # how each step was launched: "eager" | "cuda graph" (CapturedStep.mode)
    launch_why: str = ""
    launch_error: str = ""  # the CUDA-graph capture's error when the step runs eager instead

    @property
    def throughput(self) -> float:
        """Training samples/s after the first step."""
        return self.steady_samples / self.steady_seconds if self.steady_seconds > 0 else float("nan")


@dataclass
class MnistResult:
    """A finished run: its record, and for a local run the trained model and step history."""

    run: Run
    model: Any = None
    history: Any = None

    @property
    def test_accuracy(self) -> float:
        return float(self.run.metrics.get("test_accuracy", float("nan")))


def finish_run(config: Config, device: Any, history: Any, test_accuracy: Optional[float], test_throughput: float,
               warmup_key: str, warmup_seconds: float, source: str, extra_env: Optional[Dict[str, Any]] = None,
               precision: str = "fp32") -> Run:
    """The record both backends produce, so their runs sit in one table (``test_accuracy`` None:
    no test pass, as after an interrupt). ``precision``: what the run trained in ("auto" resolved)."""
    run = Run(exercise=EXERCISE, source=source, params=config.to_dict())
    run.params.update(precision=precision, device=str(device), requested_device=config.device)
    run.environment = devices.environment(None if device == "ipu" else device, extra_env)
    if getattr(history, "interrupted", ""):  # stopped by the student: what was measured so far
        run.mark_interrupted(history.interrupted, "its metrics cover only the steps before the interrupt, and there "
                                                  "was no test pass.")
        if not history.steps:
            return run
    last_epoch = [s for s in history.steps if s.epoch == history.steps[-1].epoch]
    steady_epoch = history.samples_per_epoch / history.throughput if history.throughput > 0 else float("nan")
    if test_accuracy is not None:
        METRICS.add(run, "test_accuracy", round(test_accuracy, 4))
    METRICS.add(run, "final_loss", round(history.steps[-1].loss, 6))
    METRICS.add(run, "train_accuracy", round(sum(s.accuracy for s in last_epoch) / len(last_epoch), 4))
    METRICS.add(run, "train_throughput", round(history.throughput, 2))
    if test_accuracy is not None:
        METRICS.add(run, "test_throughput", round(test_throughput, 2))
    METRICS.add(run, warmup_key, round(warmup_seconds, 4))
    METRICS.add(run, "epoch_time", round(steady_epoch, 4))
    if history.epoch_seconds:
        METRICS.add(run, "first_epoch_time", round(history.epoch_seconds[0], 4))
        METRICS.add(run, "total_train_time", round(sum(history.epoch_seconds), 4))
    METRICS.add(run, "steps_per_epoch", history.steps_per_epoch)
    run.add_series("loss", [s.step for s in history.steps], [s.loss for s in history.steps])
    run.add_series("accuracy", [s.step for s in history.steps], [s.accuracy for s in history.steps])
    run.add_series("epoch_time", list(range(1, len(history.epoch_seconds) + 1)), history.epoch_seconds, x_label="epoch")
    return run


def cut_test_pass(run: Run, tested: list, batches: int, test_batch_size: int) -> Run:
    """A run whose test pass an interrupt cut short: no test rate, and test_accuracy said to cover only
    the samples seen (``tested``: each test batch's accuracy so far, of ``batches``)."""
    run.metrics.pop("test_throughput", None)  # a cut pass has no honest rate
    if tested and len(tested) < batches:
        seen = len(tested) * test_batch_size
        METRICS.add(run, "tested_samples", seen)
        run.notes.append("test_accuracy is over the first {} test samples only: the test pass was cut short by "
                         "the interrupt".format(seen))
    return run


def finish(result: MnistResult, notes: List[str], sizes: Dict[str, Any]) -> Run:
    """The run step's Run: the data's notes first and its sizes in the parameters, the divergence verdict,
    and the MnistResult (the trained model, its step history) as ``run.details``, for cells that look further."""
    run = result.run
    run.details = result
    run.notes[:0] = notes
    run.params.update(sizes)
    steps, per_step, epochs = (run.metrics.get("steps_per_epoch"), run.params.get("device_iterations"),
                               run.params.get("epochs"))
    updates = steps * per_step * epochs if all(isinstance(v, int) for v in (steps, per_step, epochs)) else None
    judge(run, updates=updates, learning_rate=run.params.get("learning_rate"), where="step")
    return run


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

"""The record an MNIST run makes, the same on an IPU and on plain PyTorch, so their runs sit in one table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from labkit import devices
from labkit.params import Config
from labkit.results import Run
from labkit.testbeds.graphcore.spec import EXERCISE
from labkit.testbeds.graphcore.metrics import METRICS
from labkit.testbeds.graphcore.verdict import judge

__all__ = ["StepRecord", "TrainHistory", "MnistResult", "finish_run", "cut_test_pass", "finish"]


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

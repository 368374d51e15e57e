"""The MNIST exercise on plain PyTorch (CUDA, Apple MPS or CPU), with the IPU run's semantics.

What an IPU does with ``deviceIterations(n)`` is kept exactly: plain SGD, one weight update per
micro-batch of ``batch_size``, and one *step* per ``n`` micro-batches, the unit the host sees
and logs (so a default epoch shows the same 150 steps as an IPU log). The loader drops the
last incomplete step, as the tutorial's ``drop_last=True`` does.

It is faster than the tutorial's loop on a CPU because the dataset is decoded once into a
tensor on the device (no PIL image per sample), inputs are channels-last (faster oneDNN
convolutions), and the host reads the loss once per step, not once per micro-batch.

On a GPU the whole data set lives on the device and a step of ``device_iterations`` micro-batches
is captured once as a CUDA graph and replayed (:class:`labkit.accelerator.CapturedStep`): the host
hands the GPU many micro-batches at once, as it hands an IPU ``deviceIterations`` of them. On a CPU
the same step runs eagerly, computing exactly what it always did.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
import torch

from labkit import interrupts
from labkit.accelerator import CapturedStep, DeviceInfo, Precision, resolve_precision
from labkit.data.mnist import MEAN, STD
from labkit.testbeds.graphcore.model import Network, TrainingModelWithLoss

__all__ = ["StepRecord", "TrainHistory", "to_tensor", "train", "step_function", "evaluate", "build_model"]


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
    interrupted: str = ""  # "interrupted at epoch 2/10, step 40/150" when an interrupt ended it early
    launch: str = "eager"  # how each step was launched: "eager" | "cuda graph" (CapturedStep.mode)
    launch_why: str = ""
    launch_error: str = ""  # the CUDA-graph capture's error when the step runs eager instead

    @property
    def throughput(self) -> float:
        """Training samples/s after the first step."""
        return self.steady_samples / self.steady_seconds if self.steady_seconds > 0 else float("nan")


def to_tensor(images: np.ndarray, device: torch.device) -> torch.Tensor:
    """uint8 images -> normalised float N x 1 x 28 x 28, as ToTensor() + Normalize() compute it."""
    x = torch.from_numpy(np.array(images, dtype=np.float32)).div_(255.0)  # a copy: the arrays are read-only
    x = x.sub_(MEAN).div_(STD).unsqueeze(1)
    if device.type == "cpu":
        x = x.contiguous(memory_format=torch.channels_last)
    return x.to(device)


def build_model(seed: int, device: torch.device) -> TrainingModelWithLoss:
    """The tutorial's network, initialised from ``seed`` (the same seed gives the same weights)."""
    torch.manual_seed(seed)
    model = TrainingModelWithLoss(Network())
    model = model.to(device)
    if device.type == "cpu":
        model = model.to(memory_format=torch.channels_last)
    return model


def train(model: TrainingModelWithLoss, images: torch.Tensor, labels: torch.Tensor, *, epochs: int,
          batch_size: int, device_iterations: int, learning_rate: float, seed: int,
          on_step: Optional[Callable[[StepRecord], None]] = None,
          on_epoch: Optional[Callable[[int, float], None]] = None, stop: Any = None,
          precision: Optional[Precision] = None, launch: str = "auto") -> TrainHistory:
    """Train in place; return per-step losses and accuracies and the timings.

    ``stop``: a :class:`labkit.interrupts.StopRequest`; when it is requested (an interrupt),
    training ends at the next step boundary and ``history.interrupted`` says where. Without it
    an interrupt propagates as ``KeyboardInterrupt``. ``precision``: the forward's arithmetic
    (None: fp32); ``launch``: :class:`labkit.accelerator.CapturedStep`'s mode ("auto": a CUDA graph
    on a GPU, eager on a CPU).
    """
    samples_per_step = batch_size * device_iterations
    steps_per_epoch = len(labels) // samples_per_step
    history = TrainHistory(steps_per_epoch=steps_per_epoch, samples_per_epoch=steps_per_epoch * samples_per_step)
    params = [p for p in model.model.parameters() if p.requires_grad]
    shuffle = torch.Generator().manual_seed(seed)
    model.train()
    precision = precision or resolve_precision("fp32", _NO_CAST)
    step = step_function(model, images, labels, params, batch_size, device_iterations, learning_rate, precision)
    launcher = _Launcher(step, images.device, launch, model, history)
    try:
        _epochs(launcher, labels, shuffle, history, epochs, samples_per_step, on_step, on_epoch, stop)
    except KeyboardInterrupt as exc:  # a second interrupt: the step in progress is dropped
        if stop is None or not stop.interrupted_by(exc):
            raise
    if stop is not None and stop.requested:
        last = history.steps[-1] if history.steps else None
        history.interrupted = interrupts.where(last.epoch, epochs, (last.step - 1) % steps_per_epoch + 1,
                                               steps_per_epoch) if last else interrupts.where()
    return history


def step_function(model: TrainingModelWithLoss, images: torch.Tensor, labels: torch.Tensor, params: List[Any],
                  batch_size: int, device_iterations: int, learning_rate: float,
                  precision: Precision) -> Callable[[torch.Tensor], Tuple[torch.Tensor, torch.Tensor]]:
    """One step: ``device_iterations`` micro-batches of ``batch_size``, each a forward, a backward and a
    plain SGD update, for the sample indices ``chosen``; returns (mean loss, correct predictions) as
    tensors on the device, so the host reads them once per step (and a CUDA graph can capture it)."""
    device = images.device

    def step(chosen: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        outputs, losses = [], []
        with precision.step():
            for micro in range(device_iterations):
                idx = chosen[micro * batch_size: (micro + 1) * batch_size]
                with precision.autocast(device):
                    output, loss = model(images[idx], labels[idx])
                for p in params:
                    p.grad = None
                loss.backward()
                # Plain SGD, as torch.optim.SGD(lr=...) with no momentum computes it (p -= lr * grad), done
                # in one fused call: for micro-batches of 8 the optimizer's per-step Python bookkeeping
                # costs more than the update itself. A test checks the weights against torch.optim.SGD.
                with torch.no_grad():
                    torch._foreach_add_(params, [p.grad for p in params], alpha=-learning_rate)
                outputs.append(output.detach())
                losses.append(loss.detach())
        correct = (torch.cat(outputs).argmax(1) == labels[chosen]).sum()
        return torch.stack(losses).float().mean(), correct

    return step


_NO_CAST = DeviceInfo("cpu", "")  # fp32 is valid everywhere: the precision when none is given


class _Launcher:
    """Runs the step eagerly, or captures it on its first call (the warm-up step's time includes the capture)."""

    def __init__(self, step: Callable[[torch.Tensor], Any], device: torch.device, mode: str,
                 model: torch.nn.Module, history: TrainHistory):
        self.step, self.device, self.mode, self.model, self.history = step, device, mode, model, history
        self.captured: Optional[CapturedStep] = None

    def __call__(self, chosen: torch.Tensor) -> Tuple[float, int]:
        if self.captured is None:
            self.captured = CapturedStep(self.step, (chosen,), self.device, self.mode, keep=(self.model,))
            self.history.launch, self.history.launch_why = self.captured.mode, self.captured.why
            self.history.launch_error = self.captured.capture_error
        loss, correct = self.captured(chosen)
        # One host read per step, as an IPU returns a step's outputs (.item() also syncs CUDA,
        # so the step's time is honest).
        return loss.item(), int(correct.item())


def _epochs(launcher, labels, shuffle, history, epochs, samples_per_step, on_step, on_epoch, stop) -> None:
    steps_per_epoch = history.steps_per_epoch
    step = 0
    for epoch in range(1, epochs + 1):
        epoch_start = time.perf_counter()
        order = torch.randperm(len(labels), generator=shuffle).to(labels.device)
        for _ in range(steps_per_epoch):
            step_start = time.perf_counter()
            base = (step % steps_per_epoch) * samples_per_step
            loss, correct = launcher(order[base: base + samples_per_step])
            record = StepRecord(epoch, step + 1, loss, 100.0 * correct / samples_per_step)
            step += 1
            elapsed = time.perf_counter() - step_start
            if step == 1:
                history.warmup_seconds = elapsed
            else:
                history.steady_seconds += elapsed
                history.steady_samples += samples_per_step
            history.steps.append(record)
            if on_step is not None:
                on_step(record)
            if stop is not None and stop.requested and len(history.steps) % steps_per_epoch:
                return  # an interrupt: end at this step boundary (an epoch's end is reported below)
        history.epoch_seconds.append(time.perf_counter() - epoch_start)
        if on_epoch is not None:
            on_epoch(epoch, history.epoch_seconds[-1])
        if stop is not None and stop.requested:
            return


def evaluate(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, batch_size: int,
             on_batch: Optional[Callable[[float], None]] = None) -> Tuple[float, float]:
    """Test accuracy as the tutorial computes it (mean of per-batch accuracies, last partial
    batch dropped), and the samples/s of the pass."""
    network = model.model if isinstance(model, TrainingModelWithLoss) else model
    network.eval()
    batches = len(labels) // batch_size
    total = 0.0
    start = time.perf_counter()
    with torch.no_grad():
        for b in range(batches):
            x = images[b * batch_size:(b + 1) * batch_size]
            y = labels[b * batch_size:(b + 1) * batch_size]
            accuracy = (network(x).argmax(1) == y).float().mean().item() * 100.0
            total += accuracy
            if on_batch is not None:
                on_batch(accuracy)
    seconds = time.perf_counter() - start
    network.train()
    return total / batches, batches * batch_size / seconds

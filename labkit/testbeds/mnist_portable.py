"""The MNIST exercise on plain PyTorch (CUDA, Apple MPS or CPU), with the IPU run's semantics.

What an IPU does with ``deviceIterations(n)`` is kept exactly: plain SGD, one weight update per
micro-batch of ``batch_size``, and one *step* per ``n`` micro-batches, the unit the host sees
and logs (so a default epoch shows the same 150 steps as an IPU log). The loader drops the
last incomplete step, as the tutorial's ``drop_last=True`` does.

It is faster than the tutorial's loop on a CPU because the dataset is decoded once into a
tensor on the device (no PIL image per sample), inputs are channels-last (faster oneDNN
convolutions), and the host reads the loss once per step, not once per micro-batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import numpy as np
import torch

from labkit.data.mnist import MEAN, STD
from labkit.models.mnist_cnn import Network, TrainingModelWithLoss

__all__ = ["StepRecord", "TrainHistory", "to_tensor", "train", "evaluate", "build_model"]


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
          on_epoch: Optional[Callable[[int, float], None]] = None) -> TrainHistory:
    """Train in place; return per-step losses and accuracies and the timings."""
    samples_per_step = batch_size * device_iterations
    steps_per_epoch = len(labels) // samples_per_step
    history = TrainHistory(steps_per_epoch=steps_per_epoch, samples_per_epoch=steps_per_epoch * samples_per_step)
    optimizer = torch.optim.SGD(model.model.parameters(), lr=learning_rate)
    shuffle = torch.Generator().manual_seed(seed)
    model.train()
    step = 0
    for epoch in range(1, epochs + 1):
        epoch_start = time.perf_counter()
        order = torch.randperm(len(labels), generator=shuffle).to(labels.device)
        for _ in range(steps_per_epoch):
            step_start = time.perf_counter()
            loss_sum = torch.zeros((), device=labels.device)
            correct = torch.zeros((), dtype=torch.long, device=labels.device)
            base = (step % steps_per_epoch) * samples_per_step
            for micro in range(device_iterations):
                idx = order[base + micro * batch_size: base + (micro + 1) * batch_size]
                x, y = images[idx], labels[idx]
                output, loss = model(x, y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                loss_sum += loss.detach()
                correct += (output.detach().argmax(1) == y).sum()
            step += 1
            record = StepRecord(epoch, step, loss_sum.item() / device_iterations,
                                100.0 * correct.item() / samples_per_step)  # .item() syncs CUDA: timing is honest
            elapsed = time.perf_counter() - step_start
            if step == 1:
                history.warmup_seconds = elapsed
            else:
                history.steady_seconds += elapsed
                history.steady_samples += samples_per_step
            history.steps.append(record)
            if on_step is not None:
                on_step(record)
        history.epoch_seconds.append(time.perf_counter() - epoch_start)
        if on_epoch is not None:
            on_epoch(epoch, history.epoch_seconds[-1])
    return history


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

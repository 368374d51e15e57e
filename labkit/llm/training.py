"""Training a causal language model and measuring it as the Cerebras modelzoo reports it.

    from labkit import llm
    optimizer = llm.make_optimizer(model, learning_rate=1e-3)
    loss = llm.train_step(model, batch, optimizer)        # a detached tensor: not read back each step
    result = llm.train(model, batches, steps=100, log_steps=10, learning_rate=1e-3)
    result.logs[-1].global_rate, result.losses[-1]

The optimizer is the one ``params_llama2_7b.yaml`` configures: AdamW with betas (0.9, 0.95),
eps 1e-5, weight decay 0.1 on the weight matrices, gradients clipped to norm 1.0. The learning
rate rises linearly over the first tenth of the steps (the course's file warms up over its first
2000 steps) and then stays. Rates are the modelzoo's (:class:`labkit.bert.RateTracker`):
``Rate`` over the last report's interval, smoothed with the previous report, and ``GlobalRate``,
every sample since the first step over the time since then.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, List, Mapping, Optional

from labkit.bert.loop import run_steps
from labkit.bert.rates import RateTracker

__all__ = ["make_optimizer", "warmup_scheduler", "train_step", "train", "Report", "TrainResult", "MAX_GRAD_NORM"]

#: The course's ``max_gradient_norm``.
MAX_GRAD_NORM = 1.0


def make_optimizer(model: Any, learning_rate: float = 1e-3, weight_decay: float = 0.1):
    """AdamW as params_llama2_7b.yaml sets it; no decay on the RMSNorm weights (1-D tensors)."""
    import torch

    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    fused = {"fused": True} if all(p.is_cuda for p in decay + no_decay) else {}  # one kernel for all tensors
    return torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.95), eps=1e-5, **fused)


def warmup_scheduler(optimizer: Any, steps: int):
    """Linear warm-up over the first tenth of ``steps`` (at least one step), then constant."""
    import torch

    warmup = max(1, steps // 10)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))


def train_step(model: Any, batch: Mapping[str, Any], optimizer: Any, device: Any = "cpu",
               scheduler: Any = None, max_grad_norm: Optional[float] = MAX_GRAD_NORM, precision: Any = None):
    """One optimizer step on ``batch`` (``input_ids`` and ``labels``); the loss as a detached tensor
    (not read back to the host, so a GPU is not made to wait every step). ``precision``: a
    :class:`labkit.accelerator.Precision` whose ``autocast`` wraps the forward and whose ``step`` the whole
    step (None: float32)."""
    import torch

    model.train()
    optimizer.zero_grad(set_to_none=True)
    non_blocking = getattr(device, "type", str(device)) == "cuda"
    ids = batch["input_ids"].to(device, non_blocking=non_blocking)
    labels = batch["labels"].to(device, non_blocking=non_blocking) if batch["labels"] is not batch["input_ids"] else ids
    with precision.step() if precision is not None else contextlib.nullcontext():
        with precision.autocast(device) if precision is not None else contextlib.nullcontext():
            loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        if max_grad_norm:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@dataclass
class Report:
    """One report line's worth (the CS-3 log's ``| Train Device=..., Step=...`` line)."""

    step: int
    loss: float
    rate: float
    global_rate: float
    elapsed: float


@dataclass
class TrainResult:
    """What :func:`train` measured. ``first_step_s`` is the first step alone (memory allocation and
    kernel choice: the portable run's warm-up); it counts in ``total_time`` and the GlobalRate, as
    the first steps do on the CS-3."""

    batch_size: int
    sequence_length: int
    steps: int
    device: str
    losses: List[float] = field(default_factory=list)
    step_times: List[float] = field(default_factory=list)
    logs: List[Report] = field(default_factory=list)
    total_samples: int = 0
    total_time: float = 0.0
    first_step_s: float = 0.0
    steady_samples: int = 0  # the samples of every step after the first, up to the last report
    steady_seconds: float = 0.0  # their time (from the end of the first step to the last report)
    interrupted: str = ""
    precision: str = "fp32"  # what the forward passes ran in
    checkpointing: bool = False  # activation checkpointing (recompute in backward) was on
    peak_memory_bytes: Optional[int] = None  # CUDA: torch.cuda.max_memory_allocated over the run

    @property
    def global_rate(self) -> float:
        return self.total_samples / self.total_time if self.total_time > 0 else 0.0

    @property
    def steady_rate(self) -> float:
        """Samples/s after the warm-up: the steps after the first over their time (NaN with one step)."""
        return self.steady_samples / self.steady_seconds if self.steady_seconds > 0 else math.nan

    @property
    def final_loss(self) -> float:
        return self.losses[-1] if self.losses else math.nan


def train(model: Any, batches: Iterator[Mapping[str, Any]], steps: int, log_steps: int = 10, device: Any = "cpu",
          learning_rate: float = 1e-3, on_log: Optional[Callable[[Report], None]] = None, progress: Any = None,
          stop: Any = None, precision: Any = None, checkpointing: bool = False) -> TrainResult:
    """Train ``model`` for ``steps`` steps and measure it; ``on_log(Report)`` every ``log_steps``
    steps and at the last. ``progress``: anything with ``update(n)`` (a :func:`labkit.progress.bar`).
    ``stop``: a :class:`labkit.interrupts.StopRequest`: an interrupt ends the run at the next step
    and ``result.interrupted`` says where. A non-finite loss ends it at the next report. ``precision``: a
    :class:`labkit.accelerator.Precision` (None: float32); ``checkpointing``: keep only each layer's
    input and recompute the rest in backward (``gradient_checkpointing_enable``: what lets LLaMA-2-7B's
    activations fit one GPU). On CUDA the result holds the run's peak memory."""
    import torch

    if steps < 1 or log_steps < 1:
        raise ValueError("steps and log_steps must be at least 1 (got {}, {})".format(steps, log_steps))
    device = torch.device(device) if isinstance(device, str) else device
    model.to(device)
    if checkpointing:
        model.gradient_checkpointing_enable()
        model.config.use_cache = False
    optimizer = make_optimizer(model, learning_rate)
    scheduler = warmup_scheduler(optimizer, steps)
    result = TrainResult(0, 0, steps, str(device))
    result.precision, result.checkpointing = getattr(precision, "name", "fp32"), checkpointing
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    run_steps(result, batches, steps, log_steps,
              lambda batch: train_step(model, batch, optimizer, device, scheduler, precision=precision), Report,
              device, RateTracker(), "first_step_s", ("batch_size", "sequence_length"), on_log=on_log,
              progress=progress, stop=stop)
    if device.type == "cuda":
        result.peak_memory_bytes = int(torch.cuda.max_memory_allocated(device))
    return result

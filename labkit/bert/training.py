"""Training BERT and measuring it: the optimizer, the pre-training loss, one step, the timed loop
(:func:`train`, measured by :class:`labkit.bert.loop.StepMeter`); usage: :mod:`labkit.bert`.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from labkit.bert.loop import RateTracker, StepMeter

__all__ = ["make_optimizer", "pretraining_loss", "train_step", "train", "LogEntry", "TrainResult"]


def make_optimizer(model: Any, learning_rate: float = 1e-4, weight_decay: float = 0.01):
    """AdamW, as the modelzoo's BERT configs use; no decay on biases and LayerNorm weights. On CUDA the
    fused kernel updates all parameters in one launch instead of several per tensor."""
    import torch

    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    on_cuda = all(p.is_cuda for p in decay + no_decay)
    return torch.optim.AdamW(groups, lr=learning_rate, **({"fused": True} if on_cuda else {}))


def _to_device(batch: Mapping[str, Any], device: Any) -> Dict[str, Any]:
    non_blocking = getattr(device, "type", str(device)) == "cuda"
    return {k: v.to(device, non_blocking=non_blocking) for k, v in batch.items()}


def _scores(model: Any, batch: Mapping[str, Any]):
    """The masked-LM scores at the masked positions only, the next-sentence scores, and their labels."""
    out = model.bert(batch["input_ids"], attention_mask=batch["attention_mask"],
                     token_type_ids=batch["token_type_ids"], return_dict=True)
    chosen = batch["labels"] != -100
    return (model.cls.predictions(out[0][chosen]), batch["labels"][chosen], model.cls.seq_relationship(out[1]),
            batch["next_sentence_label"].view(-1))


def _loss_sums(model: Any, batch: Mapping[str, Any]):
    """The masked-LM loss summed over the masked tokens and the next-sentence loss summed over the
    sequences: a micro-batch's share of a whole batch's loss, before dividing by the batch's counts."""
    import torch.nn.functional as F

    mlm, mlm_labels, nsp, nsp_labels = _scores(model, batch)
    return (F.cross_entropy(mlm.float(), mlm_labels, reduction="sum"),
            F.cross_entropy(nsp.float(), nsp_labels, reduction="sum"))


def pretraining_loss(model: Any, batch: Mapping[str, Any]):
    """Masked-LM + next-sentence loss of a ``BertForPreTraining``, as its ``forward`` defines it.

    The same value as ``model(**batch).loss``, but the vocabulary-sized output layer runs
    only at the masked positions (about 15% of them), as the modelzoo's BERT and NVIDIA's
    do: ``BertForPreTraining.forward`` scores every position of every sequence, which on
    small models costs more than the encoder itself.
    """
    import torch.nn.functional as F

    mlm, mlm_labels, nsp, nsp_labels = _scores(model, batch)
    return F.cross_entropy(mlm, mlm_labels) + F.cross_entropy(nsp, nsp_labels)


def train_step(model: Any, batch: Mapping[str, Any], optimizer: Any, device: Any = "cpu",
               micro_batch_size: Optional[int] = None, precision: Any = None):
    """One optimizer step on ``batch``; returns the loss (MLM + NSP) as a detached tensor, left on the device.

    With ``micro_batch_size`` the batch is split and gradients accumulated before the one update (as
    the CS-2 compiler does on its own), each micro-batch's loss weighed by the whole batch's masked
    tokens and sequences, so the loss and gradients are those of the whole batch. ``precision``: a
    :class:`labkit.accelerator.Precision` (None: float32).
    """
    model.train()
    optimizer.zero_grad(set_to_none=True)
    size = int(batch["input_ids"].shape[0])
    micro = size if not micro_batch_size or micro_batch_size >= size else int(micro_batch_size)

    def autocast():
        return precision.autocast(device) if precision is not None else contextlib.nullcontext()

    with precision.step() if precision is not None else contextlib.nullcontext():
        if micro == size:  # one pass: the loss of the whole batch, unsplit
            with autocast():
                loss = pretraining_loss(model, _to_device(batch, device))
            loss.backward()
            optimizer.step()
            return loss.detach()
        masked = int((batch["labels"] != -100).sum())
        total = None
        for start in range(0, size, micro):
            part = _to_device({k: v[start:start + micro] for k, v in batch.items()}, device)
            with autocast():
                mlm, nsp = _loss_sums(model, part)
            loss = mlm / masked + nsp / size
            loss.backward()
            total = loss.detach() if total is None else total + loss.detach()
        optimizer.step()
        return total


@dataclass
class LogEntry:
    """One log line's worth: the step, its loss and the two rates (samples/s)."""

    step: int
    loss: float
    rate: float
    global_rate: float
    elapsed: float


@dataclass
class TrainResult:
    """What :func:`train` measured. ``warmup_time`` is the first step alone (allocation, kernel choice,
    a compile); it is in ``total_time`` too, as the modelzoo's "Processed" line counts from the first step."""

    batch_size: int
    steps: int
    device: str
    losses: List[float] = field(default_factory=list)
    step_times: List[float] = field(default_factory=list)
    logs: List[LogEntry] = field(default_factory=list)
    total_samples: int = 0
    total_time: float = 0.0
    warmup_time: float = 0.0
    steady_samples: int = 0  # the samples of every step after the first, up to the last log step
    steady_seconds: float = 0.0  # their time (from the end of the first step to the last log step)
    setup_time: float = 0.0
    interrupted: str = ""  # "interrupted at step 40/1000" when an interrupt ended it early
    precision: str = "fp32"  # what the forward passes ran in (labkit.accelerator.Precision.name)
    micro_batch_size: int = 0  # samples per forward/backward (batch_size when nothing was split)
    launch: str = "eager"  # "compiled" when torch.compile compiled the encoder
    peak_memory_bytes: Optional[int] = None  # CUDA: torch.cuda.max_memory_allocated over the run

    @property
    def global_rate(self) -> float:
        return self.total_samples / self.total_time if self.total_time > 0 else 0.0

    @property
    def steady_rate(self) -> float:
        """Samples/s after the warm-up: the steps after the first over their time (NaN with one step)."""
        return self.steady_samples / self.steady_seconds if self.steady_seconds > 0 else math.nan

    @property
    def time_per_sample(self) -> float:
        return self.total_time / self.total_samples if self.total_samples else math.nan

    @property
    def final_loss(self) -> float:
        return self.losses[-1] if self.losses else math.nan


def train(model: Any, batches: Iterator[Mapping[str, Any]], steps: int, log_steps: int = 100,
          device: Any = "cpu", learning_rate: float = 1e-4, optimizer: Any = None,
          micro_batch_size: Optional[int] = None, seed: Optional[int] = None,
          on_log: Optional[Callable[[LogEntry], None]] = None, progress: Any = True,
          desc: str = "train", stop: Any = None, precision: Any = None, compile_model: bool = False) -> TrainResult:
    """Train ``model`` for ``steps`` steps of ``batches`` and measure it; a :class:`TrainResult`.

    ``on_log(LogEntry)`` every ``log_steps`` steps and at the last. ``seed`` fixes dropout.
    ``progress``: True for a :func:`labkit.progress.bar`, False or None for none, or a bar of your own
    (anything with ``update(n)``). A non-finite loss ends the run early. ``stop``: a
    :class:`labkit.interrupts.StopRequest`; an interrupt then ends the run at the next step and
    ``result.interrupted`` says where (without it an interrupt propagates). ``compile_model``: compile
    the encoder (fixed shapes; the masked-LM head, whose shape follows the masked tokens, stays eager).
    """
    import torch

    from labkit.progress import bar

    if steps < 1 or log_steps < 1:
        raise ValueError("steps and log_steps must be at least 1 (got {}, {})".format(steps, log_steps))
    setup_start = time.perf_counter()
    device = torch.device(device) if isinstance(device, str) else device
    model.to(device)
    if optimizer is None:
        optimizer = make_optimizer(model, learning_rate)
    if seed is not None:
        torch.manual_seed(seed)
    result = TrainResult(batch_size=0, steps=steps, device=str(device))
    result.precision = getattr(precision, "name", "fp32")
    if compile_model:
        model.bert.compile()  # in place: the state dict keeps its names
        result.launch = "compiled"
    on_cuda = device.type == "cuda"
    if on_cuda:
        torch.cuda.reset_peak_memory_stats(device)
    result.setup_time = time.perf_counter() - setup_start
    own_bar = progress is True
    pbar = bar(total=steps, desc=desc, unit="step") if own_bar else (progress or None)
    meter = StepMeter(result, steps, log_steps, device, RateTracker(), "warmup_time", LogEntry)
    try:
        for number in range(1, steps + 1):
            batch = next(batches)
            size = int(batch["input_ids"].shape[0])
            result.batch_size = result.batch_size or size
            report = meter.add(number, size, train_step(model, batch, optimizer, device, micro_batch_size, precision))
            if report is not None and on_log is not None:
                on_log(report)
            if pbar is not None:
                pbar.update(1)
            if meter.diverged or stop is not None and stop.requested and number < steps:
                break
    except KeyboardInterrupt as exc:  # a second interrupt: the step in progress is dropped
        if stop is None or not stop.interrupted_by(exc):
            raise
    finally:
        if own_bar and pbar is not None:
            pbar.close()
    meter.end(stop)
    result.micro_batch_size = min(result.batch_size, micro_batch_size or result.batch_size)
    if on_cuda:
        result.peak_memory_bytes = int(torch.cuda.max_memory_allocated(device))
    return result

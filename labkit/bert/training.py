"""Training BERT and measuring it: the optimizer, the pre-training loss, one step, the timed loop.

    from labkit import bert
    result = bert.train(model, batches, steps=20, log_steps=10, device="cpu")
    result.global_rate, result.losses[-1]

Or one step at a time (the SambaNova data-parallel path drives its own loop):

    optimizer = bert.make_optimizer(model, learning_rate=1e-4)
    loss = bert.train_step(model, next(batches), optimizer, device)   # a detached tensor
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from labkit.bert.loop import run_steps
from labkit.bert.rates import RateTracker

__all__ = ["make_optimizer", "pretraining_loss", "train_step", "train", "LogEntry", "TrainResult"]


def make_optimizer(model: Any, learning_rate: float = 1e-4, weight_decay: float = 0.01):
    """AdamW, as the modelzoo's BERT configs use; no decay on biases and LayerNorm weights."""
    import torch

    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=learning_rate)


def _to_device(batch: Mapping[str, Any], device: Any) -> Dict[str, Any]:
    non_blocking = getattr(device, "type", str(device)) == "cuda"
    return {k: v.to(device, non_blocking=non_blocking) for k, v in batch.items()}


def pretraining_loss(model: Any, batch: Mapping[str, Any]):
    """Masked-LM + next-sentence loss of a ``BertForPreTraining``, as its ``forward`` defines it.

    The same value as ``model(**batch).loss``, but the vocabulary-sized output layer runs
    only at the masked positions (about 15% of them), as the modelzoo's BERT and NVIDIA's
    do: ``BertForPreTraining.forward`` scores every position of every sequence, which on
    small models costs more than the encoder itself.
    """
    import torch.nn.functional as F

    out = model.bert(batch["input_ids"], attention_mask=batch["attention_mask"],
                     token_type_ids=batch["token_type_ids"], return_dict=True)
    sequence_output, pooled_output = out[0], out[1]
    labels = batch["labels"]
    chosen = labels != -100
    scores = model.cls.predictions(sequence_output[chosen])
    mlm = F.cross_entropy(scores, labels[chosen])
    nsp = F.cross_entropy(model.cls.seq_relationship(pooled_output), batch["next_sentence_label"].view(-1))
    return mlm + nsp


def train_step(model: Any, batch: Mapping[str, Any], optimizer: Any, device: Any = "cpu",
               micro_batch_size: Optional[int] = None):
    """One optimizer step on ``batch``; returns the loss (MLM + NSP) as a detached tensor.

    With ``micro_batch_size`` the batch is split and gradients are accumulated before the
    single update (what the CS-2 compiler chooses on its own: "Gradient accumulation trying
    sub-batch size ..."), so a large batch fits a small device. The loss is not read back
    to the host here, so a GPU is not forced to wait every step.
    """
    model.train()
    optimizer.zero_grad(set_to_none=True)
    size = int(batch["input_ids"].shape[0])
    micro = size if not micro_batch_size or micro_batch_size >= size else int(micro_batch_size)
    total = None
    for start in range(0, size, micro):
        part = {k: v[start:start + micro] for k, v in batch.items()}
        part = _to_device(part, device)
        share = part["input_ids"].shape[0] / size
        loss = pretraining_loss(model, part)
        loss = loss * share if share != 1 else loss
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
    """What :func:`train` measured.

    ``warmup_time`` is the first step alone (graph building, allocator and kernel warm-up,
    the portable analogue of the CS-2's compile); it is part of ``total_time`` too, as the
    modelzoo's "Processed N sample(s) in T seconds" counts from the first step.
    """

    batch_size: int
    steps: int
    device: str
    losses: List[float] = field(default_factory=list)
    step_times: List[float] = field(default_factory=list)
    logs: List[LogEntry] = field(default_factory=list)
    total_samples: int = 0
    total_time: float = 0.0
    warmup_time: float = 0.0
    setup_time: float = 0.0
    interrupted: str = ""  # "interrupted at step 40/1000" when an interrupt ended it early

    @property
    def global_rate(self) -> float:
        return self.total_samples / self.total_time if self.total_time > 0 else 0.0

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
          desc: str = "train", stop: Any = None) -> TrainResult:
    """Train ``model`` for ``steps`` steps of ``batches`` and measure it.

    Every ``log_steps`` steps (and at the last step) ``on_log(LogEntry)`` is called with the
    modelzoo's Rate and GlobalRate. ``seed`` fixes dropout. ``progress``: True for a
    :func:`labkit.progress.bar`, False for none, or a bar of your own (anything with
    ``update(n)``), e.g. to print log lines above it with its ``write``. Returns a :class:`TrainResult`
    with every step's loss and time. A non-finite loss stops the run early (the result
    then has fewer steps than asked; check ``len(result.losses)``). ``stop``: a
    :class:`labkit.interrupts.StopRequest`; an interrupt then ends the run at the next step and
    ``result.interrupted`` says where (without it an interrupt propagates).
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
    result.setup_time = time.perf_counter() - setup_start
    tracker = RateTracker()
    own_bar = progress is True
    pbar = bar(total=steps, desc=desc, unit="step") if own_bar else (progress or None)
    return run_steps(result, batches, steps, log_steps,
                     lambda batch: train_step(model, batch, optimizer, device, micro_batch_size), LogEntry, device,
                     tracker, "warmup_time", on_log=on_log, progress=pbar, close_progress=own_bar, stop=stop)

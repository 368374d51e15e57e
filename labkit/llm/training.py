"""One training step of a causal language model, with the optimizer the course configures.

    from labkit import llm
    optimizer = llm.make_optimizer(model, learning_rate=1e-3)
    scheduler = llm.warmup_scheduler(optimizer, steps=100)
    loss = llm.train_step(model, batch, optimizer, scheduler=scheduler)   # a detached tensor: not read back

The optimizer and warm-up follow ``params_llama2_7b.yaml`` (docs/cerebras.md, "Training"); the loop
that runs and measures the steps is :func:`labkit.testbeds.cerebras.llama2_7b.train.train`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Mapping, Optional

__all__ = ["make_optimizer", "warmup_scheduler", "train_step", "MAX_GRAD_NORM"]

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

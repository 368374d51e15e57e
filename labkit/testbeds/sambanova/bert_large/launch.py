"""The portable run's data-parallel ranks: N processes of BERT training, gradients all-reduced.

    from labkit.testbeds.sambanova.bert_large.launch import launch_bert_ranks
    outcome = launch_bert_ranks(2, {"model_size": "micro", "max_seq_length": 32, "seed": 0,
                                    "batch_size": 4, "steps": 4, "learning_rate": 1e-4}, "cpu", threads=1)
    outcome.result["e2e_train_time"], outcome.losses      # rank 0's figures

The ranks are started and followed by labkit.rank_launcher (the launcher the scaling study's replicas
use too: the rendezvous store, interrupts, failures, no process left); this module is what is
SambaNova's own: the ranks' training (:func:`train_rank`), the gradient all-reduce, and rank 0's
steps shown as a progress bar. An interrupt stops the ranks and returns the steps so far.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from labkit import rank_launcher

__all__ = ["RanksOutcome", "launch_bert_ranks", "AllReduceOptimizer", "train_rank", "PRELOAD"]


@dataclass
class RanksOutcome:
    """What rank 0 reported: its ``done`` payload (None when the run was interrupted) and the
    steps and losses it reported on the way."""

    result: Optional[Dict[str, Any]]
    steps: List[int] = field(default_factory=list)
    losses: List[float] = field(default_factory=list)


#: Modules the rank processes need, imported once by the fork server rather than by every rank
#: of every run (importing transformers takes seconds).
PRELOAD = ["labkit.testbeds.sambanova.bert_large.launch", "labkit.bert", "transformers.models.bert.modeling_bert"]


class _RankZeroProgress:
    """Rank 0's messages: a bar that starts when the ranks have met (not at spawn), its steps and losses."""

    def __init__(self, ranks: int, steps: int, show: bool, outcome: RanksOutcome, stop: Any):
        self.ranks, self.steps, self.show, self.outcome, self.stop = ranks, steps, show, outcome, stop
        self.bar: Any = None

    def __call__(self, rank: int, kind: str, payload: Tuple[Any, ...]) -> None:
        if kind == "ready" and self.show:
            from labkit.progress import bar

            self.bar = bar(total=self.steps, unit="step",
                           desc="{} rank{} x {} steps".format(self.ranks, "s" if self.ranks > 1 else "", self.steps))
        elif kind == "step":
            self.outcome.steps.append(payload[0])
            self.outcome.losses.append(payload[1])
            if len(self.outcome.steps) == self.steps and self.stop is not None:  # the end-to-end time is to come
                self.stop.phase("summary", check=False)
            if self.bar is not None:
                self.bar.update(1)
                self.bar.set_postfix(loss="{:.3f}".format(payload[1]), refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def launch_bert_ranks(ranks: int, settings: Dict[str, Any], device_kind: str, threads: int, timeout: float = 3600,
                      show: bool = True, stop: Any = None) -> RanksOutcome:
    """Start ``ranks`` processes of :func:`train_rank` and follow them to the end.

    ``settings``: model_size, max_seq_length, seed, batch_size, steps, learning_rate.
    ``device_kind``: 'cuda' (NCCL, one GPU per rank) or 'cpu' (gloo). Raises RuntimeError
    when a rank fails or nothing comes back within ``timeout`` seconds; an interrupt stops the
    ranks and returns the steps reported so far with ``result`` None. ``stop``: the run's stop flag
    (``interrupts.keep``'s); rank 0's last step enters the phase "summary" on it.
    """
    outcome = RanksOutcome(None)
    progress = _RankZeroProgress(ranks, settings["steps"], show, outcome, stop)
    try:
        gathered = rank_launcher.launch(train_rank, ranks, args=(settings, device_kind, threads), start="forkserver",
                                        preload=PRELOAD, on_message=progress, timeout=timeout,
                                        stop_on_interrupt=True, what="The portable data-parallel run",
                                        finishing=lambda: len(outcome.steps) == settings["steps"])
    finally:
        progress.close()
    if not gathered.interrupted:
        outcome.result = gathered.results[0]
    return outcome


class AllReduceOptimizer:
    """An optimizer whose ``step`` first averages the gradients over all ranks (one flat
    all-reduce), which is what data-parallel training (DDP, SambaFlow's ``--data-parallel``)
    does between backward and update. labkit.bert.train_step calls the model's submodules
    directly, so DDP's forward hooks cannot be used; this keeps the same semantics."""

    def __init__(self, optimizer: Any, world_size: int):
        self.optimizer = optimizer
        self.world_size = world_size

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        import torch
        import torch.distributed as dist

        grads = [p.grad for group in self.optimizer.param_groups for p in group["params"] if p.grad is not None]
        if grads and self.world_size > 1:
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            flat.div_(self.world_size)
            offset = 0
            for g in grads:
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
        self.optimizer.step()


def train_rank(rank: rank_launcher.Rank, settings: Dict[str, Any], device_kind: str,
               threads: int) -> Optional[Dict[str, Any]]:
    """One rank of the portable run (a process started by labkit.rank_launcher); rank 0 returns the
    end-to-end time, the backend and whether the replicas stayed identical."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(threads)
    if device_kind == "cuda":
        torch.cuda.set_device(rank.rank)
        device = torch.device("cuda", rank.rank)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    rank.join_group(backend)
    from labkit import bert

    # precision and micro-batch from labkit.accelerator (on CUDA its probe trains a model of its own,
    # so this rank's replica is untouched)
    steps = bert.plan_steps(settings["model_size"], settings["max_seq_length"], settings["batch_size"], device,
                            settings.get("precision", "auto"), settings.get("micro_batch_size"), measure=False)
    micro = steps.micro_batch
    model = bert.build_model(settings["model_size"], settings["max_seq_length"], settings["seed"]).to(device)
    torch.manual_seed(settings["seed"] * 100003 + rank.rank)  # dropout: reproducible, different per rank
    optimizer = AllReduceOptimizer(bert.make_optimizer(model, learning_rate=settings["learning_rate"]), rank.world_size)
    batches = bert.synthetic_batches(settings["batch_size"], settings["max_seq_length"], model.config.vocab_size,
                                     seed=settings["seed"] * 100003 + rank.rank)
    dist.barrier()
    if rank.rank == 0:
        rank.report("ready")
    start = time.perf_counter()
    for step in range(1, settings["steps"] + 1):
        loss = bert.train_step(model, next(batches), optimizer, device,
                               micro.size if micro.accumulation > 1 else None, steps.precision)
        if rank.rank == 0:
            rank.report("step", step, float(loss))
    if device_kind == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier()
    e2e = time.perf_counter() - start
    # Data parallelism keeps every replica identical: compare the ranks' weights.
    checksum = float(sum(p.detach().double().sum().item() for p in model.parameters()))
    sums: List[Any] = [None] * rank.world_size
    dist.all_gather_object(sums, checksum)
    in_sync = max(sums) - min(sums) <= 1e-9 * max(1.0, abs(checksum))
    dist.destroy_process_group()
    if rank.rank == 0:
        done = {"e2e_train_time": e2e, "backend": backend, "replicas_in_sync": in_sync,
                "precision": steps.precision.name, "micro_batch": micro.size, "accumulation": micro.accumulation,
                "launch": "eager"}
        if device_kind == "cuda":
            done["peak_memory_bytes"] = int(torch.cuda.max_memory_allocated(device))
        return done
    return None

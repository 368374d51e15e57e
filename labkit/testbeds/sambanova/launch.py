"""The portable run's data-parallel ranks: N processes of BERT training, gradients all-reduced.

    from labkit.testbeds.sambanova.launch import launch_bert_ranks
    outcome = launch_bert_ranks(2, {"model_size": "micro", "max_seq_length": 32, "seed": 0,
                                    "batch_size": 4, "steps": 4, "learning_rate": 1e-4}, "cpu", threads=1)
    outcome.result["e2e_train_time"], outcome.losses      # rank 0's figures

The parent holds the rendezvous store and follows the ranks through a queue (a progress bar of
rank 0's steps); the ranks ignore interrupts and the parent stops them. The scaling study
(labkit.testbeds.comparison.replicas) has a launcher of its own: the two are meant to become one.
"""

from __future__ import annotations

import datetime
import queue as queue_module
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from labkit import interrupts

__all__ = ["RanksOutcome", "launch_bert_ranks", "process_context", "AllReduceOptimizer", "train_rank", "PRELOAD"]


@dataclass
class RanksOutcome:
    """What rank 0 reported: its ``done`` payload (None when the run was interrupted) and the
    steps and losses it reported on the way."""

    result: Optional[Dict[str, Any]]
    steps: List[int] = field(default_factory=list)
    losses: List[float] = field(default_factory=list)


def launch_bert_ranks(ranks: int, settings: Dict[str, Any], device_kind: str, threads: int, timeout: float = 3600,
                      show: bool = True) -> RanksOutcome:
    """Spawn ``ranks`` processes of :func:`train_rank` and follow them to the end.

    ``settings``: model_size, max_seq_length, seed, batch_size, steps, learning_rate.
    ``device_kind``: 'cuda' (NCCL, one GPU per rank) or 'cpu' (gloo). Raises RuntimeError
    when a rank fails or nothing comes back within ``timeout`` seconds; an interrupt stops the
    ranks and returns the steps reported so far with ``result`` None.
    """
    import torch.distributed as dist
    import torch.multiprocessing as mp

    from labkit.progress import bar

    # The parent holds the rendezvous store: port 0 lets the OS pick a free port, and holding
    # the listening socket means no other process can take it before the ranks connect.
    store = dist.TCPStore("127.0.0.1", 0, world_size=None, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=300))
    context = process_context(mp)
    messages = context.Queue()
    procs = [context.Process(target=train_rank, args=(rank, ranks, store.port, settings, device_kind, threads, messages),
                             daemon=True) for rank in range(ranks)]
    for proc in procs:
        proc.start()
    progress = None
    outcome = RanksOutcome(None)
    failure: Optional[str] = None
    deadline = time.monotonic() + timeout
    stop = interrupts.graceful()  # the ranks ignore interrupts: this process stops them
    try:
        stop.__enter__()
        while outcome.result is None and failure is None and not stop.requested:
            try:
                kind, *payload = messages.get(timeout=0.5)
            except queue_module.Empty:
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    failure = "rank process exited with status {}".format(dead[0].exitcode)
                elif time.monotonic() > deadline:
                    failure = "no result after {:.0f}s".format(timeout)
                continue
            if kind == "ready" and show:  # the bar starts when the ranks have met, not at spawn
                progress = bar(total=settings["steps"], unit="step",
                               desc="{} rank{} x {} steps".format(ranks, "s" if ranks > 1 else "", settings["steps"]))
            elif kind == "step":
                outcome.steps.append(payload[0])
                outcome.losses.append(payload[1])
                if progress is not None:
                    progress.update(1)
                    progress.set_postfix(loss="{:.3f}".format(payload[1]), refresh=False)
            elif kind == "done":
                outcome.result = payload[0]
            elif kind == "error":
                failure = "rank {} failed:\n{}".format(payload[0], payload[1])
    except KeyboardInterrupt as exc:
        if not stop.interrupted_by(exc):
            raise
    finally:
        stop.__exit__()
        if progress is not None:
            progress.close()
        for proc in procs:
            proc.join(timeout=0 if stop.requested else 30 if failure is None else 2)
            if proc.is_alive():
                proc.terminate()
                proc.join(5)
        messages.close()
        del store
    if failure is not None:
        raise RuntimeError("The portable data-parallel run failed: " + failure)
    return outcome


#: Modules the rank processes need, imported once by the fork server rather than by every rank
#: of every run (importing transformers takes seconds).
PRELOAD = ["labkit.testbeds.sambanova.launch", "labkit.bert", "transformers.models.bert.modeling_bert"]


def process_context(mp: Any) -> Any:
    """A fork server where there is one (Linux, macOS): it starts clean (no threads, no CUDA),
    imports torch and transformers once, and forks each rank from there, so a sweep of runs pays
    the imports once. Elsewhere (Windows) plain spawn."""
    if "forkserver" in mp.get_all_start_methods():
        context = mp.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        return context
    return mp.get_context("spawn")


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


def train_rank(rank: int, world: int, port: int, settings: Dict[str, Any], device_kind: str, threads: int,
                messages: Any) -> None:
    """One rank of the portable run (a spawned process)."""
    import signal

    import torch
    import torch.distributed as dist

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Kernel -> Interrupt reaches the ranks too; the parent decides
    try:
        torch.set_num_threads(threads)
        if device_kind == "cuda":
            torch.cuda.set_device(rank)
            device = torch.device("cuda", rank)
            backend = "nccl"
        else:
            device = torch.device("cpu")
            backend = "gloo"
        store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=300))
        dist.init_process_group(backend, store=store, rank=rank, world_size=world)
        from labkit import bert

        model = bert.build_model(settings["model_size"], settings["max_seq_length"], settings["seed"]).to(device)
        torch.manual_seed(settings["seed"] * 100003 + rank)  # dropout: reproducible, different per rank
        optimizer = AllReduceOptimizer(bert.make_optimizer(model, learning_rate=settings["learning_rate"]), world)
        batches = bert.synthetic_batches(settings["batch_size"], settings["max_seq_length"], model.config.vocab_size,
                                         seed=settings["seed"] * 100003 + rank)
        dist.barrier()
        if rank == 0:
            messages.put(("ready",))
        start = time.perf_counter()
        for step in range(1, settings["steps"] + 1):
            loss = bert.train_step(model, next(batches), optimizer, device)
            if rank == 0:
                messages.put(("step", step, float(loss)))
        if device_kind == "cuda":
            torch.cuda.synchronize(device)
        dist.barrier()
        e2e = time.perf_counter() - start
        # Data parallelism keeps every replica identical: compare the ranks' weights.
        checksum = float(sum(p.detach().double().sum().item() for p in model.parameters()))
        sums: List[Any] = [None] * world
        dist.all_gather_object(sums, checksum)
        in_sync = max(sums) - min(sums) <= 1e-9 * max(1.0, abs(checksum))
        if rank == 0:
            messages.put(("done", {"e2e_train_time": e2e, "backend": backend, "replicas_in_sync": in_sync}))
        dist.destroy_process_group()
    except BaseException:  # report, then let the process fail
        messages.put(("error", rank, traceback.format_exc()))
        raise

"""The portable run: SambaNova's data-parallel BERT training as ``ntasks`` torch.distributed
ranks on this machine (gloo on CPU, NCCL with one GPU per rank), measured as SambaNova does.

Two halves, top to bottom: :func:`run_portable`, the host's side (where the ranks run, starting them
through :mod:`labkit.rank_launcher`, rank 0's steps as a bar, the record), and :func:`train_rank`, what
each rank runs: its training loop, gradients all-reduced each step (:class:`AllReduceOptimizer`).
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Optional, Tuple

from labkit import devices, interrupts, rank_launcher
from labkit.accelerator import TESTBED_PRECISION
from labkit.devices import DeviceError, mps_available
from labkit.divergence import divergence_note, loss_divergence
from labkit.params import Config, ParameterError
from labkit.results import Run
from labkit.testbeds.sambanova.bert_large.metrics import METRICS
from labkit.testbeds.sambanova.bert_large.spec import EXERCISE

__all__ = ["run_portable", "ranks_device", "TooBigForMemory", "train_rank", "AllReduceOptimizer", "PRELOAD"]

TOKENS_NOTE = ("training_sequences_per_second is SambaNova's name, but it is ntasks x batch_size x steps x "
               "max_seq_length / e2e_train_time: it counts tokens per second. Sequences per second: "
               "sequences_per_second = {:.1f} sequences/s.")


#: Modules the rank processes need, imported once by the fork server rather than by every rank
#: of every run (importing transformers takes seconds).
PRELOAD = ["labkit.testbeds.sambanova.bert_large.portable", "labkit.bert", "transformers.models.bert.modeling_bert"]


def run_portable(config: Config, ntasks: Optional[int] = None, timeout: float = 3600, show: bool = True) -> Run:
    """Data-parallel BERT on this machine: ``ntasks`` processes of :func:`train_rank`, gradients all-reduced
    each step. Nothing is spawned when the run cannot fit in memory (:func:`ranks_device`). Raises
    RuntimeError when a rank fails or nothing comes back within ``timeout`` seconds."""
    import torch

    ranks = int(ntasks if ntasks is not None else config.ntasks)
    device_kind, notes = ranks_device(config, ranks)
    # Every rank gets the same threads whatever ntasks is (as every rank on the testbed gets its
    # own tiles): the cores shared among the node's task slots, so a sweep over ntasks measures
    # scaling, not thread counts.
    slots = config.nodes * config.ntasks_per_node
    threads = max(1, min(config.cpus_per_task, (os.cpu_count() or 1) // max(slots, ranks)))
    settings = {k: config[k] for k in ("model_size", "max_seq_length", "seed", "batch_size", "steps", "learning_rate",
                                       "precision", "micro_batch_size")}
    # Phases: setup, training (the ranks), summary (entered when rank 0 reports its last step: the
    # end-to-end time is to come). An interrupt stops the ranks and keeps the steps rank 0 reported;
    # one before the first step keeps nothing.
    stop = interrupts.keep(lambda: None)
    stop.phase("training", check=False)
    rank_zero = _RankZeroProgress(ranks, config.steps, show, stop)
    try:
        gathered = rank_launcher.launch(train_rank, ranks, args=(settings, device_kind, threads), start="forkserver",
                                        preload=PRELOAD, on_message=rank_zero, timeout=timeout,
                                        stop_on_interrupt=True, what="The portable data-parallel run",
                                        finishing=lambda: len(rank_zero.steps) == config.steps)
    finally:
        rank_zero.close()
    steps_done, losses = rank_zero.steps, rank_zero.losses
    stop.phase("summary", check=not steps_done)  # no step: the one line that nothing was measured
    if gathered.interrupted:  # the steps rank 0 reported, without the end-to-end time
        return _interrupted_run(config, ranks, steps_done, losses, show, stop)
    result = gathered.results[0]
    e2e = result["e2e_train_time"]
    run_ = _new_run(config, ranks)
    sequences = ranks * config.batch_size * config.steps / e2e
    # SambaNova's training_sequences_per_second, which counts tokens (TOKENS_NOTE)
    tokens = ranks * config.batch_size * config.steps * config.max_seq_length / e2e
    METRICS.add(run_, "e2e_train_time", e2e)
    METRICS.add(run_, "training_sequences_per_second", tokens)
    METRICS.add(run_, "sequences_per_second", sequences)
    METRICS.add(run_, "throughput_per_task", tokens / ranks)
    METRICS.add(run_, "final_loss", losses[-1] if losses else float("nan"))
    METRICS.add(run_, "replicas_in_sync", bool(result["replicas_in_sync"]))
    run_.params["precision"] = result.get("precision", "fp32")
    if not result["replicas_in_sync"]:
        run_.status = "failed"
        run_.notes.append("The ranks' weights differ after training: the gradient all-reduce did not keep the "
                          "replicas identical.")
    if loss_divergence(losses):
        run_.status = "diverged"
        run_.notes.append(divergence_note(losses, where="step"))
    run_.add_series("loss", steps_done, losses)
    run_.notes.append(TOKENS_NOTE.format(sequences))
    run_.notes.append("Portable run: {} {} process{} ({} backend) on this machine stand in for the testbed's "
                      "ranks on RDUs; {} thread{} per rank.".format(
                          ranks, device_kind.upper(), "es" if ranks > 1 else "", "nccl" if device_kind == "cuda" else "gloo",
                          threads, "s" if threads > 1 else ""))
    run_.notes.extend(notes)
    if run_.params["precision"] != "fp32":  # fp32 needs no note
        run_.notes.append("Precision here: {}; the SN30 trains in {}.".format(run_.params["precision"],
                                                                               TESTBED_PRECISION["sn30"]))
    how = {k: result[k] for k in ("micro_batch", "accumulation", "launch", "peak_memory_bytes") if k in result}
    run_.environment = devices.environment(torch.device(device_kind), dict(how, backend=result["backend"],
                                                                           ranks=ranks))
    return run_


def _new_run(config: Config, ranks: int) -> Run:
    run_ = Run(EXERCISE, source="portable")
    run_.params.update(config.to_dict())
    run_.params["ntasks"] = ranks
    return run_


def _interrupted_run(config: Config, ranks: int, steps_done: List[int], losses: List[float], show: bool,
                     stop: Any) -> Run:
    line = stop.where(step=steps_done[-1], steps=config.steps) if steps_done else stop.where()
    if show:
        print(line)
    run_ = _new_run(config, ranks)
    run_.mark_interrupted(line, "the ranks were stopped, so there is no end-to-end time or throughput.")
    if losses:
        METRICS.add(run_, "final_loss", losses[-1])
    METRICS.add(run_, "steps", len(steps_done))
    run_.add_series("loss", steps_done, losses)
    return run_


class TooBigForMemory(ParameterError, MemoryError):
    """The portable run would not fit in this machine's memory: the parameters must shrink.

    A ParameterError, so Jupyter shows its one message and no traceback (a student's Run All
    with the testbed's defaults ends here), and a MemoryError for code that catches that.
    """


def ranks_device(config: Config, ranks: int) -> Tuple[str, List[str]]:
    """Where ``ranks`` portable ranks run ('cuda': NCCL, one GPU per rank; or 'cpu': gloo) and notes on the
    choice; raises :class:`TooBigForMemory` before anything is spawned when they cannot fit, saying which
    smaller size to use."""
    import torch

    from labkit import bert

    requested = config.device
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested == "cuda" and gpus < ranks:
        raise DeviceError("device='cuda' with ntasks={}: NCCL needs one GPU per rank and torch sees {} here. "
                          "Use ntasks <= {} or device='cpu' (gloo).".format(ranks, gpus, gpus))
    device_kind = "cuda" if requested == "cuda" or (requested == "auto" and gpus >= ranks) else "cpu"
    notes = []
    if device_kind == "cpu" and requested == "auto" and not gpus and mps_available():
        notes.append("Apple MPS has no torch.distributed backend, so the ranks ran on the CPU with gloo.")
    if device_kind == "cpu" and requested == "auto" and gpus:
        notes.append("{} ranks but {} GPU(s): NCCL needs one GPU per rank, so the ranks ran on the CPU "
                     "with gloo.".format(ranks, gpus))

    # A rough upper estimate, to refuse runs that cannot fit before spawning anything: fp32
    # weights+gradients+2 Adam moments+the all-reduce buffer (20 bytes a parameter) and the
    # activations kept for backward (Korthikanti et al. 2022, doubled for fp32).
    preset = dict(bert.MODEL_SIZES[config.model_size])
    vocab = preset.pop("vocab_size", bert.BERT_VOCAB_SIZE)
    h, layers, heads = preset["hidden_size"], preset["num_hidden_layers"], preset["num_attention_heads"]
    ffn = preset["intermediate_size"]
    weights = 20.0 * (vocab * h + 512 * h + layers * (4 * h * h + 2 * h * ffn) + h * h)
    s, b = config.max_seq_length, config.batch_size
    activations = layers * s * b * h * (34 + 5 * heads * s / float(h)) * 2
    # On CUDA the micro-batch probe backs off to what fits: the weights and optimizer state must fit
    if device_kind == "cuda":
        needed, available = weights, float(torch.cuda.get_device_properties(0).total_memory)
    else:
        needed = (weights + activations + 4.0 * b * s * h * 4) * ranks
        try:
            with open("/proc/meminfo") as f:
                info = dict(line.split(":", 1) for line in f)
            available = float(info["MemAvailable"].split()[0]) * 1024
        except (OSError, KeyError, ValueError):
            available = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    if needed > 0.9 * available:
        raise TooBigForMemory([
            "model_size={!r} with ntasks={}, batch_size={}, max_seq_length={}: the portable run needs about "
            "{:.0f} GB{} but {:.1f} GB is available here, so nothing was run. Allowed here: something smaller, e.g. "
            "model_size='micro', ntasks=2, ntasks_per_node=2, batch_size=4, steps=4, max_seq_length=32 "
            "('tiny' or 'micro' with a small batch_size and fewer ntasks); the full-size run is for the testbed "
            "(target='testbed') or for reading its log (log_path=...).".format(
                config.model_size, ranks, config.batch_size, config.max_seq_length, needed / 1e9,
                " per GPU" if device_kind == "cuda" else " for all ranks", available / 1e9)], EXERCISE)
    return device_kind, notes


class _RankZeroProgress:
    """Rank 0's messages: a bar that starts when the ranks have met (not at spawn), its steps and losses."""

    def __init__(self, ranks: int, steps: int, show: bool, stop: Any):
        self.ranks, self.total, self.show, self.stop = ranks, steps, show, stop
        self.steps: List[int] = []
        self.losses: List[float] = []
        self.bar: Any = None

    def __call__(self, rank: int, kind: str, payload: Tuple[Any, ...]) -> None:
        if kind == "ready" and self.show:
            from labkit.progress import bar

            self.bar = bar(total=self.total, unit="step",
                           desc="{} rank{} x {} steps".format(self.ranks, "s" if self.ranks > 1 else "", self.total))
        elif kind == "step":
            self.steps.append(payload[0])
            self.losses.append(payload[1])
            if len(self.steps) == self.total:  # the end-to-end time is to come
                self.stop.phase("summary", check=False)
            if self.bar is not None:
                self.bar.update(1)
                self.bar.set_postfix(loss="{:.3f}".format(payload[1]), refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


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
    device = torch.device("cuda", rank.rank) if device_kind == "cuda" else torch.device("cpu")
    if device_kind == "cuda":
        torch.cuda.set_device(device)
    backend = "nccl" if device_kind == "cuda" else "gloo"
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

"""SambaNova BERT-Large: compile with SambaFlow, train under Slurm with ``--ntasks`` ranks.

    from labkit.testbeds import sambanova
    config = sambanova.BERT_SPEC.validate({"ntasks": 2, "model_size": "micro", "steps": 5})
    run = sambanova.run(config)          # testbed job, portable torch.distributed run, or a log
    sambanova.throughput_table([run, ...]);  sambanova.plot_throughput(table)

    papermill notebooks/sambanova/bert_large.ipynb out.ipynb -p ntasks 2 -p model_size micro

Three ways to get a run (``target``):

- ``"testbed"`` on a SambaNova node (``sbatch`` and SambaFlow under ``/opt/sambaflow``):
  labkit writes the compile script and the batch script the course's ``BertLarge.sh`` and
  ``BertLarge_run.sh`` are, from the parameters; runs the compile; submits the training job
  with the validated ``sbatch`` request; follows it; finds the training log through the
  ``Using DIR/BertLarge.out for output`` line of ``slurm-<id>.out``; reads it with
  :func:`labkit.logs.read`. Verified only against a real Slurm with SambaFlow replaced by a
  script that writes SambaFlow's log lines (tests/slurm/test_sambanova_job.py): no SambaFlow
  could be installed here.
- ``"portable"`` anywhere else: ``ntasks`` ranks of data-parallel training through
  ``torch.distributed`` (gloo on CPU, NCCL with one GPU per rank), each rank running
  ``steps`` steps of :mod:`labkit.bert` at ``batch_size``.
- ``"log"``: read ``log_path``, a training log (or ``slurm-<id>.out`` pointer) from a testbed.

Metrics use SambaNova's definitions: ``e2e_train_time`` is the wall time of the ``steps``
steps, and ``training_sequences_per_second = ntasks x batch_size x steps x max_seq_length /
e2e_train_time``, which counts TOKENS per second despite its name; ``sequences_per_second``
is the true figure (the same without ``max_seq_length``).
"""

from __future__ import annotations

import datetime
import os
import queue as queue_module
import re
import shlex
import shutil
import socket
import subprocess
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from labkit import interrupts, jobs
from labkit.divergence import divergence_note, loss_divergence
from labkit.interrupts import run_step
from labkit.params import PATH, Config, Param, ParameterError, Spec
from labkit.results import Run

__all__ = ["BERT_SPEC", "run", "run_portable", "run_testbed", "read_log", "slurm_request", "SambaFlow",
           "compile_script", "run_script", "sambanova_host", "resolve_target", "throughput_table",
           "plot_throughput", "sequences_per_second", "tokens_per_second", "MODEL_SIZES", "TooBigForMemory"]

EXERCISE = "sambanova/bert_large"
#: labkit.bert's presets (tests/sambanova checks they stay equal).
MODEL_SIZES = ("large", "base", "mini", "tiny", "micro")
TARGETS = ("auto", "testbed", "portable", "log")
#: Learning rate of the course's BertLarge_run.sh.
COURSE_LEARNING_RATE = 0.000175

TOKENS_NOTE = ("training_sequences_per_second is SambaNova's name, but it is ntasks x batch_size x steps x "
               "max_seq_length / e2e_train_time: it counts tokens per second. Sequences per second: "
               "sequences_per_second = {:.1f} sequences/s.")
DURATION_NOTE = ("The compile log's 'Duration: {} s' is the compile (and, in the course's BertLarge.sh, the "
                 "submission): it is not training time. Training time is e2e_train_time in the job's own log.")


def _log_path_exists(value: Optional[str]) -> Optional[str]:
    if value is not None and not os.path.exists(value):
        return "no such file"
    return None


BERT_SPEC = Spec(
    EXERCISE,
    Param("ntasks", int, 16, min=1, max=4096, help="sbatch --ntasks: data-parallel ranks (SambaFlow processes)"),
    Param("ntasks_per_node", int, 16, min=1, max=1024, help="sbatch --ntasks-per-node"),
    Param("nodes", int, 1, min=1, max=64, help="sbatch --nodes"),
    Param("cpus_per_task", int, 8, min=1, max=1024, help="sbatch --cpus-per-task"),
    Param("rdus_per_node", int, 8, min=1, max=64, help="sbatch --gres=rdu:N (RDUs per node)"),
    Param("num_tiles", int, 4, choices=(1, 2, 4, 8), help="SambaFlow compile --num-tiles: RDU tiles per rank"),
    Param("batch_size", int, 256, min=1, max=65536, help="per-rank batch (-b)"),
    Param("steps", int, 505, min=1, max=250000, help="--steps_this_run: steps every rank runs"),
    Param("max_seq_length", int, 128, min=8, max=512, help="--max_seq_length"),
    Param("model_size", str, "large", choices=MODEL_SIZES,
          help="BERT preset; the testbed compiles 'large' only, the portable run takes any"),
    Param("learning_rate", float, COURSE_LEARNING_RATE, min=0, min_exclusive=True, max=1.0),
    Param("target", str, "auto", choices=TARGETS,
          help="auto: log if log_path is given, the testbed on a SambaNova node, else portable"),
    Param("device", str, "auto", choices=("auto", "cuda", "cpu"), help="portable run: GPUs (NCCL) or CPU (gloo)"),
    Param("seed", int, 0, min=0, max=2 ** 31 - 1),
    Param("log_path", PATH, None, optional=True, check=_log_path_exists,
          help="a SambaNova training log (or slurm-<id>.out) to read instead of running"),
    Param("work_dir", str, "~/BertLarge", help="testbed: where the PEF, scripts and logs go (the course's ~/BertLarge)"),
    Param("sweep_ntasks", list, [], item_type=int, help="extra ntasks values to run for the homework plot"),
    Param("compare_logs", list, [], item_type=str, help="testbed training logs to add to the homework plot"),
    checks=[],
)


def slurm_request(config: Config, output: Optional[str] = None) -> jobs.SlurmRequest:
    """The ``sbatch`` request of the course's BertLarge.sh, from the parameters."""
    return jobs.SlurmRequest(ntasks=config.ntasks, ntasks_per_node=config.ntasks_per_node, nodes=config.nodes,
                             cpus_per_task=config.cpus_per_task, gres="rdu:{}".format(config.rdus_per_node),
                             tiles_per_task=config.num_tiles, output=output, job_name="BertLarge_run.sh")


def _check_slurm_request(config: Config) -> Optional[Tuple[str, str]]:
    """The job must fit ALCF's SN30 nodes (8 RDUs of 8 tiles, 128 CPUs), on any target: the
    portable run keeps the exercise's meaning, so a request the testbed refuses is refused here."""
    problems = slurm_request(config).problems(jobs.SN30)
    if not problems:
        return None
    first = problems[0]
    name = ("rdus_per_node" if "--gres=rdu" in first else "num_tiles" if "tiles" in first else
            "cpus_per_task" if "CPUs" in first else "nodes" if first.startswith("--nodes") else "ntasks")
    return name, "this sbatch request cannot run on an SN30 node: " + " ".join(problems)


def _check_compare_logs(config: Config) -> Optional[Tuple[str, str]]:
    missing = [p for p in config.compare_logs if not os.path.exists(os.path.expanduser(p))]
    if missing:
        return "compare_logs", "no such file: " + ", ".join(missing)
    return None


def _check_sweep(config: Config) -> Optional[Tuple[str, str]]:
    bad = [n for n in config.sweep_ntasks if n < 1 or n > config.nodes * config.ntasks_per_node]
    if bad:
        return "sweep_ntasks", "{} outside 1..{} (nodes x ntasks_per_node)".format(bad, config.nodes * config.ntasks_per_node)
    return None


BERT_SPEC.checks.extend([_check_slurm_request, _check_compare_logs, _check_sweep])


# --- where to run ------------------------------------------------------------------------
@dataclass(frozen=True)
class SambaFlow:
    """Where SambaFlow lives on a SambaNova node (the course's paths under /opt/sambaflow)."""

    root: str = "/opt/sambaflow"
    python: str = "python"
    data_dir: str = "/data/ANL/wikicorpus_en"
    srun_flags: Tuple[str, ...] = ("--mpi=pmi2",)

    @property
    def app(self) -> str:
        return os.path.join(self.root, "apps", "nlp", "transformers_on_rdu")

    @property
    def hook(self) -> str:
        return os.path.join(self.app, "transformers_hook.py")

    @property
    def activate(self) -> str:
        return os.path.join(self.app, "venv", "bin", "activate")

    @property
    def snfadm(self) -> str:
        return os.path.join(self.root, "bin", "snfadm")


def sambanova_host(setup: SambaFlow = SambaFlow()) -> bool:
    """True on a SambaNova node: Slurm's sbatch and SambaFlow (its BERT app or snrdtoolkit) are here."""
    sambaflow = os.path.isfile(setup.hook) or shutil.which("snrdtoolkit") is not None
    return jobs.slurm_available() and sambaflow


def resolve_target(config: Config, setup: SambaFlow = SambaFlow()) -> str:
    """'testbed', 'portable' or 'log', saying why when the asked-for target is impossible."""
    target = config.target
    if target == "auto":
        if config.log_path is not None:
            return "log"
        return "testbed" if sambanova_host(setup) else "portable"
    if target == "log" and config.log_path is None:
        raise ParameterError(["target = 'log': give log_path, the training log (BertLarge.out) to read"], EXERCISE)
    if target == "testbed":
        if not sambanova_host(setup):
            from labkit.devices import DeviceError

            raise DeviceError("target='testbed' needs a SambaNova node (sbatch on PATH and SambaFlow at {}); "
                              "none is here. Use target='portable' (or 'auto') to run torch.distributed ranks on "
                              "this machine, or target='log' with a BertLarge.out from the testbed.".format(setup.root))
        if config.model_size != "large":
            raise ParameterError(["model_size = {!r}: SambaFlow's compile configs in the course are for BERT-Large "
                                  "only; use model_size='large' on the testbed".format(config.model_size)], EXERCISE)
    return target


@run_step
def run(config: Config, setup: SambaFlow = SambaFlow(), **options: Any) -> Run:
    """Run the exercise where ``config.target`` says (see the module docstring)."""
    target = resolve_target(config, setup)
    if target == "log":
        return read_log(config.log_path, config)
    if target == "testbed":
        return run_testbed(config, setup=setup, **options)
    return run_portable(config, **options)


# --- reading a testbed log ---------------------------------------------------------------
def read_log(path: Union[str, os.PathLike], config: Optional[Config] = None) -> Run:
    """The training run recorded in a SambaNova log (``BertLarge.out``, or a ``slurm-<id>.out``
    whose ``Using ... for output`` file sits next to it)."""
    import labkit.logs

    report = labkit.logs.read(path, format="sambanova")
    if not report.runs:
        raise labkit.logs.NoRunError("{}: no training run in it. {}".format(os.fspath(path), " ".join(report.notes)))
    runs = [r for r in report.runs if "e2e_train_time" in r.metrics] or report.runs
    found = runs[-1]
    found.notes.extend(n for n in report.notes if n not in found.notes)
    found.params.setdefault("steps", found.params.get("steps_this_run"))
    found.params["log_path"] = os.fspath(path)
    return found


# --- the portable run --------------------------------------------------------------------
def tokens_per_second(ntasks: int, batch_size: int, steps: int, max_seq_length: int, seconds: float) -> float:
    """SambaNova's ``training_sequences_per_second`` (which counts tokens)."""
    return ntasks * batch_size * steps * max_seq_length / seconds


def sequences_per_second(ntasks: int, batch_size: int, steps: int, seconds: float) -> float:
    return ntasks * batch_size * steps / seconds


class TooBigForMemory(ParameterError, MemoryError):
    """The portable run would not fit in this machine's memory: the parameters must shrink.

    A ParameterError, so Jupyter shows its one message and no traceback (a student's Run All
    with the testbed's defaults ends here), and a MemoryError for code that catches that.
    """


def _memory_estimate(config: Config, ranks: int) -> Tuple[float, float]:
    """Bytes one rank needs (weights, gradients, AdamW state, activations) and for all ranks.

    A rough upper estimate, to refuse runs that cannot fit before spawning anything: fp32
    weights+gradients+2 Adam moments+the all-reduce buffer (20 bytes a parameter) and the
    activations kept for backward (Korthikanti et al. 2022, doubled for fp32).
    """
    from labkit import bert

    preset = dict(bert.MODEL_SIZES[config.model_size])
    vocab = preset.pop("vocab_size", bert.BERT_VOCAB_SIZE)
    h, layers, heads = preset["hidden_size"], preset["num_hidden_layers"], preset["num_attention_heads"]
    ffn = preset["intermediate_size"]
    params = vocab * h + 512 * h + layers * (4 * h * h + 2 * h * ffn) + h * h
    s, b = config.max_seq_length, config.batch_size
    activations = layers * s * b * h * (34 + 5 * heads * s / float(h)) * 2
    per_rank = 20.0 * params + activations + 4.0 * b * s * h * 4
    return per_rank, per_rank * ranks


def _available_memory(device_kind: str) -> float:
    if device_kind == "cuda":
        import torch

        return float(torch.cuda.get_device_properties(0).total_memory)
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return float(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _choose_device(requested: str, ranks: int) -> Tuple[str, List[str]]:
    """'cuda' (NCCL, one GPU per rank) or 'cpu' (gloo), and notes on the choice."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested == "cuda":
        if gpus < ranks:
            from labkit.devices import DeviceError

            raise DeviceError("device='cuda' with ntasks={}: NCCL needs one GPU per rank and torch sees {} here. "
                              "Use ntasks <= {} or device='cpu' (gloo).".format(ranks, gpus, gpus))
        return "cuda", []
    if requested == "auto" and gpus >= ranks:
        return "cuda", []
    notes = []
    from labkit.devices import mps_available

    if requested == "auto" and not gpus and mps_available():
        notes.append("Apple MPS has no torch.distributed backend, so the ranks ran on the CPU with gloo.")
    if requested == "auto" and gpus:
        notes.append("{} ranks but {} GPU(s): NCCL needs one GPU per rank, so the ranks ran on the CPU "
                     "with gloo.".format(ranks, gpus))
    return "cpu", notes


def run_portable(config: Config, ntasks: Optional[int] = None, timeout: float = 3600, show: bool = True) -> Run:
    """Data-parallel BERT on this machine: ``ntasks`` processes, gradients all-reduced each step.

    Each rank builds the same model (same ``seed``), draws its own synthetic batches
    (``seed`` + rank), and runs ``steps`` steps at ``batch_size``; rank 0 reports losses as
    it goes. Nothing is spawned when the run cannot fit in memory (an estimate, see
    :func:`_memory_estimate`): the error says which smaller size to use.
    """
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp

    from labkit import devices
    from labkit.progress import bar

    ranks = int(ntasks if ntasks is not None else config.ntasks)
    device_kind, notes = _choose_device(config.device, ranks)
    per_rank, total = _memory_estimate(config, ranks)
    available = _available_memory(device_kind)
    needed = per_rank if device_kind == "cuda" else total
    if needed > 0.9 * available:
        raise TooBigForMemory([
            "model_size={!r} with ntasks={}, batch_size={}, max_seq_length={}: the portable run needs about "
            "{:.0f} GB{} but {:.1f} GB is available here, so nothing was run. Allowed here: something smaller, e.g. "
            "model_size='micro', ntasks=2, ntasks_per_node=2, batch_size=4, steps=4, max_seq_length=32 "
            "('tiny' or 'micro' with a small batch_size and fewer ntasks); the full-size run is for the testbed "
            "(target='testbed') or for reading its log (log_path=...).".format(
                config.model_size, ranks, config.batch_size, config.max_seq_length, needed / 1e9,
                " per GPU" if device_kind == "cuda" else " for all ranks", available / 1e9)], EXERCISE)
    # Every rank gets the same threads whatever ntasks is (as every rank on the testbed gets its
    # own tiles): the cores shared among the node's task slots, so a sweep over ntasks measures
    # scaling, not thread counts.
    slots = config.nodes * config.ntasks_per_node
    threads = max(1, min(config.cpus_per_task, (os.cpu_count() or 1) // max(slots, ranks)))
    # The parent holds the rendezvous store: port 0 lets the OS pick a free port, and holding
    # the listening socket means no other process can take it before the ranks connect.
    store = dist.TCPStore("127.0.0.1", 0, world_size=None, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=300))
    context = _process_context(mp)
    messages = context.Queue()
    settings = {k: config[k] for k in ("model_size", "max_seq_length", "seed", "batch_size", "steps", "learning_rate")}
    procs = [context.Process(target=_rank_main, args=(rank, ranks, store.port, settings, device_kind, threads, messages),
                             daemon=True) for rank in range(ranks)]
    for proc in procs:
        proc.start()
    progress = None
    steps_done: List[int] = []
    losses: List[float] = []
    result: Optional[Dict[str, Any]] = None
    failure: Optional[str] = None
    deadline = time.monotonic() + timeout
    stop = interrupts.graceful()  # the ranks ignore interrupts: this process stops them
    try:
        stop.__enter__()
        while result is None and failure is None and not stop.requested:
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
                progress = bar(total=config.steps, unit="step",
                               desc="{} rank{} x {} steps".format(ranks, "s" if ranks > 1 else "", config.steps))
            elif kind == "step":
                steps_done.append(payload[0])
                losses.append(payload[1])
                if progress is not None:
                    progress.update(1)
                    progress.set_postfix(loss="{:.3f}".format(payload[1]), refresh=False)
            elif kind == "done":
                result = payload[0]
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
    if result is None:  # interrupted: the steps rank 0 reported, without the end-to-end time
        return _interrupted_run(config, ranks, steps_done, losses, show)
    e2e = result["e2e_train_time"]
    run_ = Run(EXERCISE, source="portable", status="complete")
    run_.params.update(config.to_dict())
    run_.params["ntasks"] = ranks
    tokens = tokens_per_second(ranks, config.batch_size, config.steps, config.max_seq_length, e2e)
    sequences = sequences_per_second(ranks, config.batch_size, config.steps, e2e)
    run_.add_metric("e2e_train_time", e2e, "s")
    run_.add_metric("training_sequences_per_second", tokens, "tokens/s")  # SambaNova's name; see TOKENS_NOTE
    run_.add_metric("sequences_per_second", sequences, "sequences/s")
    run_.add_metric("throughput_per_task", tokens / ranks, "tokens/s")
    run_.add_metric("final_loss", losses[-1] if losses else float("nan"))
    run_.add_metric("replicas_in_sync", bool(result["replicas_in_sync"]))
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
    run_.environment = devices.environment(torch.device(device_kind), {"backend": result["backend"], "ranks": ranks})
    return run_


def _interrupted_run(config: Config, ranks: int, steps_done: List[int], losses: List[float], show: bool) -> Run:
    line = interrupts.where(step=steps_done[-1], steps=config.steps) if steps_done else interrupts.where()
    if show:
        print(line)
    run_ = Run(EXERCISE, source="portable")
    run_.params.update(config.to_dict())
    run_.params["ntasks"] = ranks
    run_.mark_interrupted(line, "the ranks were stopped, so there is no end-to-end time or throughput.")
    if losses:
        run_.add_metric("final_loss", losses[-1])
    run_.add_metric("steps", len(steps_done))
    run_.add_series("loss", steps_done, losses)
    return run_


#: Modules the rank processes need, imported once by the fork server rather than by every rank
#: of every run (importing transformers takes seconds).
_PRELOAD = ["labkit.testbeds.sambanova", "labkit.bert", "transformers.models.bert.modeling_bert"]


def _process_context(mp: Any) -> Any:
    """A fork server where there is one (Linux, macOS): it starts clean (no threads, no CUDA),
    imports torch and transformers once, and forks each rank from there, so a sweep of runs pays
    the imports once. Elsewhere (Windows) plain spawn."""
    if "forkserver" in mp.get_all_start_methods():
        context = mp.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        return context
    return mp.get_context("spawn")


class _AllReduceOptimizer:
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


def _rank_main(rank: int, world: int, port: int, settings: Dict[str, Any], device_kind: str, threads: int,
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
        optimizer = _AllReduceOptimizer(bert.make_optimizer(model, learning_rate=settings["learning_rate"]), world)
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


# --- the testbed path --------------------------------------------------------------------
def _pef_name(config: Config) -> str:
    # The course reuses ~/BertLarge/bertlrg/bertlrg.pef whatever the parameters were; naming
    # the PEF by them recompiles when batch, length or tiles change and reuses it otherwise.
    return "bertlrg_b{}_s{}_t{}".format(config.batch_size, config.max_seq_length, config.num_tiles)


def _q(text: str) -> str:
    return shlex.quote(text)


def compile_script(config: Config, setup: SambaFlow, work_dir: str, log_dir: str) -> str:
    """What the course's BertLarge.sh does before ``sbatch``: compile BERT-Large to a PEF."""
    pef = _pef_name(config)
    output = os.path.join(log_dir, "BertLarge_compile.out")
    compile_cmd = " ".join([
        setup.python, _q(setup.hook), "compile", "--model_name_or_path bert-large-uncased",
        "--tokenizer_name bert-large-uncased --module_name mlm_ns --task_name mlm_ns",
        "--max_seq_length {}".format(config.max_seq_length),
        "--per_device_train_batch_size {} -b {}".format(config.batch_size, config.batch_size),
        "--output_dir=${OUTDIR}/hf_output --overwrite_output_dir --cache_dir ${OUTDIR}/cache",
        "--compiler-configs-file " + _q(os.path.join(
            setup.app, "human_decisions", "compiler_configs",
            "compiler_configs_bertlarge_sc_mlm_ml_perf_fullfeature_macv2_gm.json")),
        "--mac-human-decision " + _q(os.path.join(
            setup.app, "human_decisions", "mac_overrides", "bertlarge_sc_training_mlm_ml_perf_fullfeature_macv2.json")),
        "--mac-v2 --non_split_head --dense_adam --data-parallel -ws 2 --weight_decay 0.01 --max_grad_norm_clip 1.0",
        "--adam_beta2 0.98 --num-tiles {}".format(config.num_tiles),
        "--pef-name={} --output-folder=${{OUTDIR}} --log-level error --disable-strict-conversion".format(pef),
    ])
    return "\n".join([
        "#!/bin/bash",
        "# Written by labkit (labkit/testbeds/sambanova.py) from the course's BertLarge.sh: compile only;",
        "# labkit submits the training job itself, after checking the sbatch request.",
        "set -e",
        "export SOFTWARE_HOME=/opt",
        "OUTDIR=" + _q(work_dir),
        "OUTPUT_PATH=" + _q(output),
        'echo "Using ${OUTPUT_PATH} for output"',
        'mkdir -p "$(dirname "${OUTPUT_PATH}")" "${OUTDIR}"',
        "if [ -f {a} ]; then source {a}; fi".format(a=_q(setup.activate)),
        "export OMP_NUM_THREADS=18",
        "SECONDS=0",
        'cd "${OUTDIR}"',
        'echo "Model: " BertLarge > "${OUTPUT_PATH}" 2>&1',
        'echo "Date: " $(date +%m/%d/%y) >> "${OUTPUT_PATH}" 2>&1',
        'echo "Time: " $(date +%H:%M) >> "${OUTPUT_PATH}" 2>&1',
        'apt list --installed sambaflow >> "${OUTPUT_PATH}" 2>&1 || true',
        'echo "Machine State Before: " >> "${OUTPUT_PATH}" 2>&1',
        "if [ -x {s} ]; then {s} -l inventory >> \"${{OUTPUT_PATH}}\" 2>&1; fi".format(s=_q(setup.snfadm)),
        'PEF="${{OUTDIR}}/{p}/{p}.pef"'.format(p=pef),
        'if [ -e "${PEF}" ]; then',
        '  echo "${PEF} exists" | tee -a "${OUTPUT_PATH}"',
        "else",
        "  export SN_NUM_THREADS=32",
        '  echo "COMPILE START AT ${SECONDS}" >> "${OUTPUT_PATH}" 2>&1',
        '  COMMAND="{}"'.format(compile_cmd),
        '  echo "COMPILE COMMAND: $COMMAND" >> "${OUTPUT_PATH}" 2>&1',
        '  eval $COMMAND >> "${OUTPUT_PATH}" 2>&1',
        '  echo "COMPILE END AT ${SECONDS}" >> "${OUTPUT_PATH}" 2>&1',
        "fi",
        'echo "Duration: " $SECONDS >> "${OUTPUT_PATH}" 2>&1',
        "",
    ])


def run_script(config: Config, setup: SambaFlow, work_dir: str) -> str:
    """The course's BertLarge_run.sh, from the parameters: ``sbatch script LOGDIR``.

    As in the course, the job writes its training log to ``$PWD/LOGDIR/BertLarge.out`` and
    prints ``Using ... for output`` to the Slurm output file. Two changes: ``--cache_dir``
    (the course's ``--cache`` is refused by SambaFlow 1.19, as students found), and no
    ``--min_throughput 560000 --validate_stat_perf`` check, which fails every run with fewer
    than 16 tasks after it has trained.
    """
    pef = _pef_name(config)
    run_cmd = " ".join([
        "srun"] + list(setup.srun_flags) + [
        setup.python, _q(setup.hook), "run",
        "--config_name " + _q(os.path.join(setup.app, "modules", "configs", "mlm_24layer_ml_perf_config.json")),
        "--tokenizer_name bert-large-uncased --module_name mlm_ns --task_name mlm_ns",
        "--max_seq_length {} -b {}".format(config.max_seq_length, config.batch_size),
        "--output_dir=${OUTDIR}/hf_output --overwrite_output_dir --do_train",
        "--per_device_train_batch_size {}".format(config.batch_size),
        "--data_dir " + _q(setup.data_dir) + " --cache_dir ${OUTDIR}/cache/",
        "--max_predictions_per_seq 20 --warmup_steps 12500 --max_steps 250000",
        "--steps_this_run {} --logging_steps 1 --weight_decay 0.01".format(config.steps),
        "--learning_rate {!r}".format(config.learning_rate),
        "--non_split_head --dense_adam --data-parallel --reduce-on-rdu --adam_beta2 0.98 --max_grad_norm_clip 1.0",
        "--skip_checkpoint --pef=${{OUTDIR}}/{p}/{p}.pef --log-level error".format(p=pef),
    ])
    return "\n".join([
        "#!/bin/bash",
        "# Written by labkit (labkit/testbeds/sambanova.py) from the course's BertLarge_run.sh.",
        "set -e",
        "export SOFTWARE_HOME=/opt",
        'LOGDIR=$(date +%m%d%y.%H)',
        'if [ "$1" ]; then LOGDIR=$1; fi',
        "OUTPUT_PATH=${PWD}/${LOGDIR}/BertLarge.out",
        'echo "Using ${OUTPUT_PATH} for output"',
        'mkdir -p "${PWD}/${LOGDIR}"',
        "OUTDIR=" + _q(work_dir),
        "if [ -f {a} ]; then source {a}; fi".format(a=_q(setup.activate)),
        "export OMP_NUM_THREADS=18",
        "SECONDS=0",
        'echo "Model: " BertLarge >> "${OUTPUT_PATH}" 2>&1',
        'echo "Date: " $(date +%m/%d/%y) >> "${OUTPUT_PATH}" 2>&1',
        'echo "Time: " $(date +%H:%M) >> "${OUTPUT_PATH}" 2>&1',
        'if [ ! -e "${{OUTDIR}}/{p}/{p}.pef" ]; then'.format(p=pef),
        '  echo "${{OUTDIR}}/{p}/{p}.pef does not exist, exiting" >> "${{OUTPUT_PATH}}" 2>&1'.format(p=pef),
        "  exit 1",
        "fi",
        'echo "RUN" >> "${OUTPUT_PATH}" 2>&1',
        "export SAMBA_CCL_ASYNC_ALLREDUCE=0",
        "export SAMBA_CCL_HIERARCHICAL_ALLREDUCE=0",
        'env >> "${OUTPUT_PATH}" 2>&1',
        'COMMAND="{}"'.format(run_cmd),
        'echo "RUN COMMAND: $COMMAND" >> "${OUTPUT_PATH}" 2>&1',
        'eval $COMMAND >> "${OUTPUT_PATH}" 2>&1',
        'echo "Duration: " $SECONDS >> "${OUTPUT_PATH}" 2>&1',
        "",
    ])


_POINTER = re.compile(r"Using (\S+) for output")


def _training_log(slurm_out: str) -> Optional[str]:
    """The path the job's ``Using DIR/BertLarge.out for output`` line names."""
    try:
        text = Path(slurm_out).read_text(errors="replace")
    except OSError:
        return None
    found = _POINTER.findall(text)
    return found[-1] if found else None


def _steps_in(path: Optional[str]) -> int:
    if not path:
        return 0
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return 0
    steps = re.findall(r"global_step:(\d+)\|", text)
    return int(steps[-1]) if steps else 0


def run_testbed(config: Config, setup: SambaFlow = SambaFlow(), poll: float = 5.0, timeout: float = 6 * 3600,
                show: bool = True) -> Run:
    """Compile (or reuse the PEF), submit the training job, follow it, read its log."""
    import labkit.logs
    from labkit.progress import bar

    work_dir = os.path.abspath(os.path.expanduser(config.work_dir))
    stamp = datetime.datetime.now().strftime("%m%d%y.%H%M%S")
    log_dir = os.path.join(work_dir, stamp)
    os.makedirs(log_dir, exist_ok=True)
    request = slurm_request(config, output=os.path.join(work_dir, "slurm-%j.out"))
    host = socket.gethostname().split(".")[0]
    if config.nodes == 1:
        request = request.replace(nodelist=host)  # as BertLarge.sh: train on the node that compiled
    compile_path = os.path.join(log_dir, "compile.sh")
    run_path = os.path.join(log_dir, "BertLarge_run.sh")
    Path(compile_path).write_text(compile_script(config, setup, work_dir, log_dir))
    Path(run_path).write_text(run_script(config, setup, work_dir))
    os.chmod(compile_path, 0o755)
    os.chmod(run_path, 0o755)
    request.validate(jobs.SN30)

    compile_log = os.path.join(log_dir, "BertLarge_compile.out")
    if show:
        print("Compiling (or reusing the PEF): log in {}".format(compile_log))
    done = subprocess.run(["bash", compile_path], capture_output=True, text=True, cwd=work_dir)
    compiled = labkit.logs.read(compile_log, format="sambanova") if os.path.exists(compile_log) else None
    if done.returncode != 0:
        raise RuntimeError("The SambaFlow compile failed (exit {}); see {}:\n{}".format(
            done.returncode, compile_log, _tail(compile_log)))

    job = jobs.submit(request, run_path, args=[stamp], cwd=work_dir)
    if show:
        print("Submitted batch job {}: {}".format(job.job_id, shlex.join(job.argv)))
    expected_log = os.path.join(work_dir, stamp, "BertLarge.out")
    progress = bar(total=config.steps, desc="job {}".format(job.job_id), unit="step") if show else None
    start = time.monotonic()
    status = jobs.job_status(job)
    try:
        while not status.finished:
            if time.monotonic() - start > timeout:
                raise jobs.JobError("job {} still {} after {:.0f}s".format(job.job_id, status.state, timeout))
            time.sleep(poll)
            status = jobs.job_status(job)
            if progress is not None:
                progress.set_description("job {} {}".format(job.job_id, status.state), refresh=False)
                progress.update(_steps_in(expected_log) - progress.n)
    except KeyboardInterrupt:  # a batch job outlives the notebook: say how to stop it or read it later
        raise interrupts.Interrupted(
            "interrupted: stopped following job {0}, which keeps running (`scancel {0}` stops it; its log will be "
            "{1}, readable with log_path)".format(job.job_id, expected_log)) from None
    finally:
        if progress is not None:
            progress.close()

    slurm_out = jobs.output_path(job, status)
    training_log = _training_log(slurm_out) or expected_log
    if not os.path.exists(training_log):
        raise RuntimeError("Job {} ended {} but wrote no training log at {} (Slurm output {}):\n{}".format(
            job.job_id, status.state, training_log, slurm_out, _tail(slurm_out)))
    found = read_log(training_log)
    found.source = "testbed"
    # The training log alone cannot tell whether a compile ran; the compile log can.
    found.notes = [n for n in found.notes if "compilation was skipped" not in n]
    if not status.succeeded and found.status == "complete":
        found.status = "failed"
        found.notes.append("Slurm reports job {} as {} (exit code {}).".format(job.job_id, status.state, status.exit_code))
    found.params.update(config.to_dict())
    found.params.update({"job_id": int(job.job_id), "training_log": training_log, "slurm_output": slurm_out,
                         "compile_log": compile_log})
    if compiled is not None and compiled.runs:
        compile_run = compiled.runs[-1]
        for key in ("compile_s", "compile_skipped"):
            if key in compile_run.metrics:
                found.add_metric(key, compile_run.metrics[key], compile_run.units.get(key, ""))
        found.notes.extend(n for n in compile_run.notes if "compilation was skipped" in n or "PEF" in n)
        if "duration_s" in compile_run.metrics:
            found.notes.append(DURATION_NOTE.format(compile_run.metrics["duration_s"]))
    return found


def _tail(path: str, lines: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no file)"


# --- the homework: throughput against ntasks ----------------------------------------------
def throughput_table(runs: Sequence[Run]):
    """One row per run: ntasks, e2e time, SambaNova's throughput (tokens/s), true sequences/s."""
    import pandas as pd

    rows = []
    for r in runs:
        m = r.metrics
        if "e2e_train_time" not in m:
            continue
        rows.append({
            "source": r.source,
            "ntasks": r.params.get("ntasks"),
            "ntasks_per_node": r.params.get("ntasks_per_node"),
            "model_size": r.params.get("model_size", "large" if r.source != "portable" else None),
            "batch_size": r.params.get("batch_size"),
            "steps": r.params.get("steps", r.params.get("steps_this_run")),
            "e2e_train_time (s)": m["e2e_train_time"],
            "training_sequences_per_second (tokens/s)": m.get("training_sequences_per_second"),
            "sequences/s": m.get("sequences_per_second"),
            "tokens/s per task": m.get("throughput_per_task"),
        })
    table = pd.DataFrame(rows)
    if len(table):
        table = table.sort_values(["source", "ntasks"]).reset_index(drop=True)
    return table


def plot_throughput(table, ax=None):
    """The homework plot: throughput (tokens/s, SambaNova's figure) against ntasks, one line per
    source, with the ideal linear scaling from each source's smallest run dashed."""
    import matplotlib.pyplot as plt

    if ax is None:
        _fig, ax = plt.subplots(figsize=(6, 4))
    column = "training_sequences_per_second (tokens/s)"
    for (source, size), group in table.groupby(["source", "model_size"], dropna=False):
        group = group.sort_values("ntasks")
        label = "{} ({})".format(source, size if isinstance(size, str) else "?")
        ax.plot(group["ntasks"], group[column], marker="o", label=label)
        first = group.iloc[0]
        ideal = [first[column] * n / first["ntasks"] for n in group["ntasks"]]
        ax.plot(group["ntasks"], ideal, linestyle="--", alpha=0.5, label=label + " ideal")
    ax.set_xlabel("ntasks (ranks)")
    ax.set_ylabel("training_sequences_per_second\n(tokens/s)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title("BERT throughput against --ntasks")
    ax.legend(fontsize="small")
    return ax


# --- what the notebook shows -------------------------------------------------------------
def describe_request(config: Config) -> str:
    """The ``sbatch`` line of the course's BertLarge.sh for these parameters, and what it asks for."""
    request = slurm_request(config)
    return "\n".join([
        "sbatch --ntasks {} --gres=rdu:{} --ntasks-per-node {} --nodes {} --cpus-per-task={} BertLarge_run.sh".format(
            config.ntasks, config.rdus_per_node, config.ntasks_per_node, config.nodes, config.cpus_per_task),
        "  {} task(s) on {} node(s), at most {} per node; {} CPUs per task".format(
            config.ntasks, config.nodes, request.tasks_per_node(), config.cpus_per_task),
        "  RDU tiles on a node: {} tasks x {} tiles = {} used, of {} RDUs x {} tiles = {} requested".format(
            request.tasks_per_node(), config.num_tiles, (request.tasks_per_node() or 0) * config.num_tiles,
            config.rdus_per_node, jobs.SN30.tiles_per_rdu, config.rdus_per_node * jobs.SN30.tiles_per_rdu),
        "  fits an SN30 node: yes (labkit checked it against {} CPUs and {} RDUs per node)".format(
            jobs.SN30.cpus_per_node, jobs.SN30.rdus_per_node),
    ])


_MEANINGS = {
    "e2e_train_time": "wall time of the training steps (not the compile)",
    "training_sequences_per_second": "SambaNova's figure: ntasks x batch x steps x max_seq_length / e2e, i.e. TOKENS/s",
    "sequences_per_second": "true sequences per second: ntasks x batch x steps / e2e",
    "throughput_per_task": "tokens/s per task (flat when scaling is perfect)",
    "final_loss": "masked-LM + next-sentence loss at the last step",
    "compile_s": "compile time from the compile log (COMPILE END AT)",
    "replicas_in_sync": "every rank holds the same weights after training",
}


def _fmt(value: Any, unit: str = "") -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    # Fixed widths, so a table keeps its layout whatever the numbers (and a golden notebook
    # whose timings are masked still compares equal).
    if unit == "s":
        return "{:10.3f} s".format(value)
    if unit.startswith("tokens/s"):
        return "{:12.0f} tokens/s".format(value)
    if unit == "sequences/s":
        return "{:10.1f} sequences/s".format(value)
    return "{:.3f}".format(value) if isinstance(value, float) else str(value)


def metrics_table(run_: Run):
    """The run's metrics with units and what each means, as a DataFrame."""
    import pandas as pd

    rows = [{"metric": name, "value": _fmt(value, run_.units.get(name, "")), "meaning": _MEANINGS.get(name, "")}
            for name, value in run_.metrics.items() if name in _MEANINGS]
    rows[:0] = [{"metric": name, "value": text, "meaning": "the run was stopped by an interrupt"}
                for name, text in run_.partial_rows()]
    return pd.DataFrame(rows).set_index("metric")


def format_throughput(table):
    """:func:`throughput_table` with units in every cell, for display."""
    shown = table.copy()
    units = {"e2e_train_time (s)": "s", "training_sequences_per_second (tokens/s)": "tokens/s",
             "sequences/s": "sequences/s", "tokens/s per task": "tokens/s"}
    for column, unit in units.items():
        if column in shown:
            shown[column] = [_fmt(v, unit) for v in shown[column]]
    return shown


def plot_loss(run_: Run, ax=None):
    """Loss against step for one run (rank 0's loss, as SambaFlow logs it)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _fig, ax = plt.subplots(figsize=(6, 3.5))
    series = run_.series.get("loss")
    if series:
        ax.plot(series["x"], series["y"], marker="." if len(series["x"]) < 50 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (MLM + NSP)")
    ax.set_title("{} run, ntasks={}".format(run_.source, run_.params.get("ntasks"))
                 + run_.partial_title())
    return ax


def homework_runs(config: Config, first: Run, setup: SambaFlow = SambaFlow(), show: bool = True) -> List[Run]:
    """``first``, one more run per ``config.sweep_ntasks`` value (same target and parameters),
    and the runs in ``config.compare_logs``."""
    runs = [first]
    target = first.source
    for n in config.sweep_ntasks:
        changed = config.replace(ntasks=n, log_path=None,
                                 target="testbed" if target == "testbed" else "portable")
        runs.append(run(changed, setup=setup, show=show))
        if runs[-1].status == "interrupted":  # the student stopped it: no more runs
            break
    runs.extend(read_log(os.path.expanduser(p)) for p in config.compare_logs)
    return runs

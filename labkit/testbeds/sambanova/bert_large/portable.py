"""The portable run: SambaNova's data-parallel BERT training as ``ntasks`` torch.distributed
ranks on this machine (gloo on CPU, NCCL with one GPU per rank), measured as SambaNova does.

    from labkit.testbeds.sambanova import bert_large
    config = bert_large.SPEC.validate({"ntasks": 2, "ntasks_per_node": 2, "model_size": "micro",
                                       "batch_size": 4, "steps": 4, "max_seq_length": 32})
    run = bert_large.run_portable(config)

The ranks themselves are in :mod:`labkit.testbeds.sambanova.bert_large.launch`.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple

from labkit import interrupts
from labkit.divergence import divergence_note, loss_divergence
from labkit.params import Config, ParameterError
from labkit.results import Run
from labkit.testbeds.sambanova.bert_large.launch import launch_bert_ranks
from labkit.testbeds.sambanova.bert_large.spec import EXERCISE
from labkit.testbeds.sambanova.bert_large.metrics import METRICS

__all__ = ["run_portable", "tokens_per_second", "sequences_per_second", "TooBigForMemory", "TOKENS_NOTE"]

TOKENS_NOTE = ("training_sequences_per_second is SambaNova's name, but it is ntasks x batch_size x steps x "
               "max_seq_length / e2e_train_time: it counts tokens per second. Sequences per second: "
               "sequences_per_second = {:.1f} sequences/s.")


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


def _weights_bytes(config: Config) -> float:
    """fp32 weights, gradients, two AdamW moments and the all-reduce buffer: 20 bytes a parameter."""
    from labkit import bert

    preset = dict(bert.MODEL_SIZES[config.model_size])
    vocab = preset.pop("vocab_size", bert.BERT_VOCAB_SIZE)
    h, layers, ffn = preset["hidden_size"], preset["num_hidden_layers"], preset["intermediate_size"]
    return 20.0 * (vocab * h + 512 * h + layers * (4 * h * h + 2 * h * ffn) + h * h)


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


@interrupts.with_phases
def run_portable(config: Config, ntasks: Optional[int] = None, timeout: float = 3600, show: bool = True) -> Run:
    """Data-parallel BERT on this machine: ``ntasks`` processes, gradients all-reduced each step.

    Each rank builds the same model (same ``seed``), draws its own synthetic batches
    (``seed`` + rank), and runs ``steps`` steps at ``batch_size``; rank 0 reports losses as
    it goes. Nothing is spawned when the run cannot fit in memory (an estimate, see
    :func:`_memory_estimate`): the error says which smaller size to use.
    """
    import torch

    from labkit import devices

    ranks = int(ntasks if ntasks is not None else config.ntasks)
    device_kind, notes = _choose_device(config.device, ranks)
    per_rank, total = _memory_estimate(config, ranks)
    available = _available_memory(device_kind)
    # On CUDA the micro-batch probe backs off to what fits, so only the weights and optimizer state must
    needed = _weights_bytes(config) if device_kind == "cuda" else total
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
    settings = {k: config[k] for k in ("model_size", "max_seq_length", "seed", "batch_size", "steps", "learning_rate",
                                       "precision", "micro_batch_size")}
    # Phases: setup, training (the ranks), summary. An interrupt stops the ranks and keeps the steps rank 0
    # reported; one before the first step keeps nothing.
    stop = interrupts.keep(lambda: None)
    stop.phase("training", check=False)
    outcome = launch_bert_ranks(ranks, settings, device_kind, threads, timeout=timeout, show=show, stop=stop)
    result, steps_done, losses = outcome.result, outcome.steps, outcome.losses
    stop.phase("summary", check=not steps_done)  # no step: the one line that nothing was measured
    if result is None:  # interrupted: the steps rank 0 reported, without the end-to-end time
        return _interrupted_run(config, ranks, steps_done, losses, show, stop)
    e2e = result["e2e_train_time"]
    run_ = Run(EXERCISE, source="portable", status="complete")
    run_.params.update(config.to_dict())
    run_.params["ntasks"] = ranks
    tokens = tokens_per_second(ranks, config.batch_size, config.steps, config.max_seq_length, e2e)
    sequences = sequences_per_second(ranks, config.batch_size, config.steps, e2e)
    METRICS.add(run_, "e2e_train_time", e2e)
    METRICS.add(run_, "training_sequences_per_second", tokens)  # SambaNova's name; see TOKENS_NOTE
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
    if run_.params["precision"] != "fp32":  # a CPU's fp32 notes read as they always did
        from labkit.accelerator import TESTBED_PRECISION

        run_.notes.append("Precision here: {}; the SN30 trains in {}.".format(run_.params["precision"],
                                                                               TESTBED_PRECISION["sn30"]))
    how = {k: result[k] for k in ("micro_batch", "accumulation", "launch", "peak_memory_bytes") if k in result}
    run_.environment = devices.environment(torch.device(device_kind), dict(how, backend=result["backend"],
                                                                           ranks=ranks))
    return run_


def _interrupted_run(config: Config, ranks: int, steps_done: List[int], losses: List[float], show: bool,
                     stop: Any) -> Run:
    line = stop.where(step=steps_done[-1], steps=config.steps) if steps_done else stop.where()
    if show:
        print(line)
    run_ = Run(EXERCISE, source="portable")
    run_.params.update(config.to_dict())
    run_.params["ntasks"] = ranks
    run_.mark_interrupted(line, "the ranks were stopped, so there is no end-to-end time or throughput.")
    if losses:
        METRICS.add(run_, "final_loss", losses[-1])
    METRICS.add(run_, "steps", len(steps_done))
    run_.add_series("loss", steps_done, losses)
    return run_

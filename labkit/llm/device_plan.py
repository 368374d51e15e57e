"""Which LLaMA preset trains here, in which precision, and how long a step takes on this machine.

    chosen = llm.plan_llama(["7b", "small", "tiny"], 2048, 8, 128, 40, torch.device("cuda"))
    chosen.model_size, chosen.precision.name, chosen.checkpointing    # "7b", "bf16", True on an H200

The memory arithmetic and the order of the probes: docs/performance.md, "LLaMA's plan on an H200".
Measurements are kept for the process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labkit import accelerator
from labkit.llm.presets import MODEL_SIZES, build_model, model_config, parameter_count

__all__ = ["LlamaStepPlan", "plan_llama", "attempts", "flops_per_token", "training_memory_bytes", "NothingFitsHere",
           "PROBE_FLOPS", "MEMORY_SHARE"]

#: About the FLOPs of a CPU/MPS probe step: a second or less on two busy cores.
PROBE_FLOPS = 2e10

_MEASURED: Dict[Tuple[Any, ...], float] = {}


class NothingFitsHere(accelerator.AcceleratorError):
    """No candidate preset trains on this device; the message says what would."""


@dataclass(frozen=True)
class LlamaStepPlan:
    """The preset, precision and checkpointing chosen, and this machine's measured seconds a step."""

    model_size: str
    precision: accelerator.Precision
    checkpointing: bool
    seconds_per_step: float
    measured: str
    skipped: Tuple[str, ...] = ()  # why larger candidates (or this one without checkpointing) were passed over
    checkpointing_why: str = ""  # why checkpointing is on: the arithmetic, or a probe that ran out of memory

    def seconds(self, steps: int) -> float:
        return self.seconds_per_step * steps

    def why(self) -> str:
        parts = [self.precision.why]
        if self.checkpointing:
            parts.append("activation checkpointing ({})".format(
                self.checkpointing_why or "the activations would not fit otherwise"))
        return "; ".join(parts + list(self.skipped))


def flops_per_token(model_size: str, vocab_size: int, sequence_length: int) -> float:
    """Model FLOPs to train one token: 6 x parameters plus attention's 12 x layers x hidden x length
    (the formula ../shared/gpu/llama7b.py uses)."""
    preset = MODEL_SIZES[model_size]
    return (6.0 * parameter_count(model_size, vocab_size)
            + 12.0 * preset["num_hidden_layers"] * preset["hidden_size"] * sequence_length)


def training_memory_bytes(model_size: str, vocab_size: int, batch_size: int, sequence_length: int,
                          checkpointing: bool, precision: str = "fp32") -> float:
    """Bytes to train a preset with AdamW, a rough upper estimate to choose before allocating
    (docs/performance.md, "LLaMA's plan on an H200"); activations are about 34 x hidden + 5 x heads x
    length bytes a token and layer in bf16."""
    preset = MODEL_SIZES[model_size]
    hidden, layers, heads = preset["hidden_size"], preset["num_hidden_layers"], preset["num_attention_heads"]
    tokens = batch_size * sequence_length
    per_layer = tokens * (34 * hidden + 5 * heads * sequence_length) * 2.0
    activations = layers * tokens * hidden * 4.0 + per_layer if checkpointing else layers * per_layer
    per_parameter = 18.0 if precision == "bf16" else 16.0
    return per_parameter * parameter_count(model_size, vocab_size) + activations + tokens * vocab_size * 12.0


#: The share of a GPU's memory a plan may fill: the CUDA context, cuBLAS's workspace and the
#: allocator's fragmentation take some of the rest.
MEMORY_SHARE = 0.9


def attempts(model_size: str, vocab_size: int, batch_size: int, sequence_length: int, info: accelerator.DeviceInfo,
             precision: str) -> Tuple[Tuple[bool, str], ...]:
    """The (checkpointing, why) settings to probe ``model_size`` with on ``info``, in order
    (docs/performance.md); off a GPU the memory is not known here: without checkpointing."""
    if info.kind != "cuda" or not info.memory_bytes:
        return ((False, ""),)
    limit = MEMORY_SHARE * info.memory_bytes
    plain = training_memory_bytes(model_size, vocab_size, batch_size, sequence_length, False, precision)
    checkpointed = training_memory_bytes(model_size, vocab_size, batch_size, sequence_length, True, precision)
    if checkpointed > limit:
        return ()
    if plain > limit:
        return ((True, "without it {} needs about {:.0f} GB to train, more than {:.0%} of {}".format(
            model_size, plain / 1e9, MEMORY_SHARE, info.describe())),)
    return ((False, ""), (True, "without it {} ran out of memory in its probe step".format(model_size)))


def plan_llama(candidates: Sequence[str], vocab_size: int, batch_size: int, sequence_length: int, steps: int,
               device: Any, precision: str = "auto", budget_s: Optional[float] = None) -> LlamaStepPlan:
    """The first of ``candidates`` (largest first) that fits ``device`` and, measured, trains ``steps``
    steps within ``budget_s`` (the last one that fits is taken whatever its time, for the plan to refuse);
    raises :class:`NothingFitsHere` saying what would, when none fits."""
    import torch

    device = torch.device(device) if isinstance(device, str) else device
    info = accelerator.describe(device)
    chosen = accelerator.resolve_precision(precision, info)
    skipped: List[str] = []
    fitting: Optional[LlamaStepPlan] = None
    for size in candidates:
        tries = attempts(size, vocab_size, batch_size, sequence_length, info, chosen.name)
        if not tries:
            skipped.append("{} needs about {:.0f} GB to train, more than {}".format(
                size, training_memory_bytes(size, vocab_size, batch_size, sequence_length, True, chosen.name) / 1e9,
                info.describe()))
            continue
        for checkpointing, why in tries:
            fitted, measured = accelerator.fits(lambda: _measure(size, vocab_size, batch_size, sequence_length,
                                                                 device, info, chosen, checkpointing))
            if fitted:
                fitting = LlamaStepPlan(size, chosen, checkpointing, measured[0], measured[1], tuple(skipped), why)
                break
        else:  # no other way to train this preset is left
            skipped.append("{} ran out of memory in its probe step{}".format(
                size, ", with activation checkpointing" if checkpointing else ""))
            continue
        if budget_s is None or fitting.seconds(steps) <= budget_s:
            return fitting
        skipped.append("{} would take about {:.0f} s for {} steps".format(size, fitting.seconds(steps), steps))
    if fitting is not None:
        return fitting
    raise NothingFitsHere(
        "No LLaMA preset among {} trains on {}: {}. What would: a smaller batch_size or sequence_length, "
        "model_size='small' or 'tiny', or a GPU with more memory (LLaMA-2-7B's shapes need about 120 GB: an "
        "NVIDIA H200, 141 GB; an 80 GB H100 or A100 would need the weights sharded over several GPUs, which "
        "labkit does not do).".format(", ".join(candidates), info.describe(), "; ".join(skipped)))


def _measure(size: str, vocab: int, batch: int, seq: int, device: Any, info: accelerator.DeviceInfo,
             chosen: accelerator.Precision, checkpointing: bool) -> Tuple[float, str]:
    key = (size, vocab, batch, seq, str(device), info.name, chosen.name, checkpointing)
    if key not in _MEASURED:
        if info.kind == "cuda":
            _MEASURED[key] = _measure_model(size, vocab, batch, seq, device, chosen, checkpointing, repeats=2)
        else:
            _MEASURED[key] = _measure_small(size, vocab, batch, seq, device, chosen)
    seconds = _MEASURED[key]
    return seconds, "{} steps of the {} preset, batch {} x {} tokens on {}: {:.3g} s a step".format(
        3 if info.kind == "cuda" else 2, size, batch, seq, info.name, seconds)


def _measure_model(size: str, vocab: int, batch: int, seq: int, device: Any, chosen: accelerator.Precision,
                   checkpointing: bool, repeats: int, layers: Optional[int] = None) -> float:
    """Seconds a training step of the preset (``layers``: only that many of its decoder layers)."""
    import torch

    from labkit.llm.training import make_optimizer, train_step

    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        if layers is None:
            model = build_model(size, vocab_size=vocab, max_seq_length=seq, seed=0, memory_bytes=2 ** 62,
                                device=device)
        else:
            from transformers import LlamaForCausalLM

            config = model_config(size, vocab, seq)
            config.num_hidden_layers = layers
            model = LlamaForCausalLM(config).to(device)
        # Nothing here outlives the return (the caller, accelerator.fits, releases the memory after it):
        # the model, its optimizer's moments and the batch are locals of this frame only.
        if checkpointing:
            model.gradient_checkpointing_enable()
            model.config.use_cache = False
        optimizer = make_optimizer(model)
        ids = torch.randint(0, vocab, (batch, seq), device=device)
        batch_ = {"input_ids": ids, "labels": ids}
        return accelerator.measure_step_seconds(lambda: train_step(model, batch_, optimizer, device, precision=chosen),
                                                device, warmup=1, repeats=repeats)


def _measure_small(size: str, vocab: int, batch: int, seq: int, device: Any, chosen: accelerator.Precision) -> float:
    step_flops = flops_per_token(size, vocab, seq) * batch * seq
    if step_flops <= PROBE_FLOPS:
        return _measure_model(size, vocab, batch, seq, device, chosen, False, repeats=1)
    preset = MODEL_SIZES[size]
    hidden, layers = preset["hidden_size"], preset["num_hidden_layers"]
    per_layer = (flops_per_token(size, vocab, seq) - 6.0 * (2 * vocab * hidden + hidden)) / layers
    one_layer_per_token = per_layer + 6.0 * (2 * vocab * hidden + hidden)
    rows = int(max(1, min(batch, PROBE_FLOPS // (one_layer_per_token * seq))))
    seconds = _measure_model(size, vocab, rows, seq, device, chosen, False, repeats=1, layers=1)
    return step_flops / (one_layer_per_token * rows * seq / seconds)

"""How BERT trains on this device: precision, micro-batch, launch, and a measured time per sample.

    steps = bert.plan_steps("large", 128, 1024, torch.device("cuda"))
    steps.precision.name, steps.micro_batch.size, steps.launch     # "bf16", 256, "compiled"

The choices are :mod:`labkit.accelerator`'s; how the time is measured on a GPU and on a CPU:
docs/performance.md. Results are kept for the process, so a plan, its refusal and the run that
follows measure once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple, Union

from labkit import accelerator
from labkit.bert.batches import synthetic_batches
from labkit.bert.presets import build_model, model_config
from labkit.bert.training import make_optimizer, train_step

__all__ = ["StepPlan", "plan_steps", "flops_per_sequence", "COMPILE_PAYS_SECONDS", "PROBE_FLOPS"]

#: A CUDA run estimated (eager) to take longer than this is compiled: torch.compile costs about a
#: minute for BERT-Large and saves about 10 % a step (../shared/gpu/README.md: 1,237 -> 1,369 seq/s).
COMPILE_PAYS_SECONDS = 600.0

#: About the FLOPs of a CPU/MPS probe step (one encoder layer): a second or less on two busy cores.
PROBE_FLOPS = 1e10

_MEASURED: Dict[Tuple[Any, ...], "StepPlan"] = {}


@dataclass(frozen=True)
class StepPlan:
    """What :func:`plan_steps` chose and measured. ``seconds_per_sample`` is this machine's (eager)."""

    precision: accelerator.Precision
    micro_batch: accelerator.MicroBatch
    launch: str  # "compiled" | "eager"
    seconds_per_sample: float
    measured: str  # how the time was measured, for the plan's lines

    def seconds(self, samples: int) -> float:
        return self.seconds_per_sample * samples

    def why(self) -> str:
        """The clauses for the plan's Why line: precision, micro-batch, launch."""
        launch = ("torch.compile of the encoder (the run is long enough to pay for its compile)"
                  if self.launch == "compiled" else "eager steps")
        return "{}; {}; {}".format(self.precision.why, self.micro_batch.why(), launch)


def flops_per_sequence(model_size: str, max_seq_length: int) -> float:
    """Model FLOPs to train one sequence (forward and backward): 6 x parameters x tokens plus
    attention's 12 x layers x hidden x length^2, the formula ../shared/gpu/reference.py uses."""
    cfg = model_config(model_size, max_seq_length)
    layers, h, vocab, ffn = cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size, cfg.intermediate_size
    embeddings = (vocab + cfg.max_position_embeddings + cfg.type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * ffn + ffn) + (ffn * h + h) + 2 * h  # attention, LayerNorms, feed-forward
    heads = (h * h + h) + (h * h + h + 2 * h) + vocab + (2 * h + 2)  # pooler, MLM transform, decoder bias, NSP
    params = embeddings + layers * layer + heads  # the decoder's weight is the (tied) word embedding
    return 6.0 * params * max_seq_length + 12.0 * layers * h * max_seq_length ** 2


def plan_steps(model_size: str, max_seq_length: int, global_batch: int, device: Any, precision: str = "auto",
               micro_batch_size: Union[int, str, None] = None, samples: Optional[int] = None,
               measure: bool = True) -> StepPlan:
    """Resolve ``precision`` and ``micro_batch_size`` (None or "auto": the policy's choice) on ``device``
    and measure this machine's seconds per sample; ``samples`` (the run's) decides whether to compile.
    ``measure=False`` skips the CPU/MPS probe (the time is then NaN); CUDA always probes, as its
    micro-batch comes from the probe."""
    import torch

    device = torch.device(device) if isinstance(device, str) else device
    info = accelerator.describe(device)
    chosen = accelerator.resolve_precision(precision, info)
    requested = "auto" if micro_batch_size in (None, "auto") else int(micro_batch_size)
    key = (model_size, max_seq_length, global_batch, str(device), info.name, chosen.name, requested)
    if key not in _MEASURED:
        if info.kind == "cuda":
            _MEASURED[key] = _measure_cuda(model_size, max_seq_length, global_batch, device, info, chosen, requested)
        else:
            micro = accelerator.choose_micro_batch(requested, global_batch, lambda m: None, device=device,
                                                   key={"model": "bert-" + model_size})
            if not measure:
                return StepPlan(chosen, micro, "eager", float("nan"), "not measured")
            _MEASURED[key] = _measure_layer(model_size, max_seq_length, device, chosen, micro)
    found = _MEASURED[key]
    compiled = info.kind == "cuda" and samples is not None and found.seconds(samples) > COMPILE_PAYS_SECONDS
    return StepPlan(found.precision, found.micro_batch, "compiled" if compiled else "eager",
                    found.seconds_per_sample, found.measured)


def _measure_cuda(model_size: str, seq: int, global_batch: int, device: Any, info: accelerator.DeviceInfo,
                  chosen: accelerator.Precision, requested: Union[int, str]) -> StepPlan:
    import torch

    with torch.random.fork_rng(devices=[device]):
        model = build_model(model_size, seq, seed=0).to(device)
        optimizer = make_optimizer(model)
        vocab = model.config.vocab_size

        def step_at(size: int):
            batch = next(synthetic_batches(size, seq, vocab, seed=0))
            return lambda: train_step(model, batch, optimizer, device, precision=chosen)

        try:
            micro = accelerator.choose_micro_batch(requested, global_batch, lambda m: step_at(m)(), device=device,
                                                   key={"model": "bert-" + model_size, "seq": seq,
                                                        "precision": chosen.name, "launch": "eager"})
            seconds = accelerator.measure_step_seconds(step_at(micro.size), device, warmup=1, repeats=3)
        finally:
            del model, optimizer
            torch.cuda.empty_cache()
    how = "3 eager steps of {} sequences on {}: {:.3f} s a micro-batch".format(micro.size, info.name, seconds)
    return StepPlan(chosen, micro, "eager", seconds / micro.size, how)


def _measure_layer(model_size: str, seq: int, device: Any, chosen: accelerator.Precision,
                   micro: accelerator.MicroBatch) -> StepPlan:
    import torch
    from transformers.models.bert.modeling_bert import BertLayer

    cfg = model_config(model_size, seq)
    if hasattr(cfg, "_attn_implementation"):
        cfg._attn_implementation = "sdpa"  # as the whole model would dispatch it
    h, ffn = cfg.hidden_size, cfg.intermediate_size
    per_row = 6.0 * (4 * h * h + 2 * h * ffn) * seq + 12.0 * h * seq ** 2
    # What train_step computes a sequence: every encoder layer, and the vocabulary-sized output layer
    # at the masked positions only (15 %).
    trained = cfg.num_hidden_layers * per_row + 6.0 * 0.15 * seq * cfg.vocab_size * h
    rows = max(1, min(micro.size, int(PROBE_FLOPS // per_row)))
    with torch.random.fork_rng(devices=[]):
        layer = BertLayer(cfg).to(device)
        optimizer = torch.optim.AdamW(layer.parameters(), lr=1e-4)
        hidden = torch.randn(rows, seq, cfg.hidden_size, device=device)

        def step() -> None:
            with chosen.step():
                optimizer.zero_grad(set_to_none=True)
                with chosen.autocast(device):
                    out = layer(hidden)[0]
                out.float().pow(2).mean().backward()
                optimizer.step()

        seconds = accelerator.measure_step_seconds(step, device, warmup=1, repeats=1)
    rate = rows * per_row / seconds
    how = "one {} encoder layer, {} x {} tokens on {}: {:.2g} FLOP/s".format(model_size, rows, seq, device, rate)
    return StepPlan(chosen, micro, "eager", trained / rate, how)

"""The portable path: a small LLaMA trained with :mod:`labkit.llm`, reporting as ``cszoo fit`` does.

    from labkit.testbeds.cerebras import llama2_7b
    run = llama2_7b.run_portable(config, device)          # prints the CS-3 log's lines, returns a Run

The course's semantics are kept: ``batch_size`` samples (sequences) of ``sequence_length``
tokens per optimizer step, ``steps`` steps, a report line every ``log_steps`` steps with
``Rate`` and ``GlobalRate`` in samples/s as the modelzoo defines them, then
``Processed N training sample(s) in T seconds.`` (the lines of a Cerebras 2.6 log, so the
same reader reads both). tokens/s is GlobalRate x sequence length. The first step (memory
allocation, kernel choice) is measured apart and said; it still counts in GlobalRate, as
the CS-3's first steps do. Building the tokenizer and the model (``setup_s``) does not.
"""

from __future__ import annotations

import datetime
import time
from typing import Any, Callable, List, Optional

from labkit import accelerator, devices, interrupts, llm
from labkit.divergence import divergence_note, loss_divergence
from labkit.params import Config
from labkit.progress import bar
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.metrics import METRICS, add_tokens_per_s
from labkit.testbeds.cerebras.llama2_7b.spec import EXERCISE, effective
from labkit.testbeds.cerebras.stream import echo_above

__all__ = ["run_portable", "VOCAB_SIZE", "VALIDATION_BATCHES"]

#: The portable tokenizer's vocabulary (LLaMA-2's 32,000 would make a small model mostly output layer).
VOCAB_SIZE = 2048

#: Held-out windows the validation loss is averaged over (a fixed, seeded set).
VALIDATION_BATCHES = 4


def _stamp() -> str:
    now = datetime.datetime.now()
    return now.strftime("%Y-%m-%d %H:%M:%S") + ",{:03d}".format(now.microsecond // 1000)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return "{}:{:02d}:{:02d}".format(seconds // 3600, seconds // 60 % 60, seconds % 60)


def train_line(device: str, step: int, loss: float, rate: float, global_rate: float, remaining_s: float) -> str:
    """A Cerebras 2.6 report line: ``| Train Device=CSX, Step=50, Loss=7.67126, Rate=31.97 samples/sec, ...``."""
    return ("{} INFO:   | Train Device={}, Step={}, Loss={:.5f}, Rate={:.2f} samples/sec, GlobalRate={:.2f} "
            "samples/sec, LoopTimeRemaining={}, TimeRemaining={}").format(
                _stamp(), device, step, loss, rate, global_rate, _clock(remaining_s), _clock(remaining_s))


def processed_line(samples: int, seconds: float) -> str:
    """The 2.6 closing line: ``Processed N training sample(s) in T seconds.``"""
    return "{} INFO:   Processed {} training sample(s) in {} seconds.".format(_stamp(), samples, repr(float(seconds)))


def _validation_loss(model: Any, ids: Any, batch_size: int, length: int, seed: int, device: Any, stop: Any) -> float:
    import torch

    if len(ids) <= length:
        return float("nan")
    batches = llm.token_batches(ids, batch_size, length, seed=seed + 1)
    model.eval()
    losses = []
    with torch.no_grad():
        for _ in range(VALIDATION_BATCHES):
            stop.check()  # an interrupt ends the run here, kept without a validation loss
            batch = next(batches)["input_ids"].to(device)
            losses.append(float(model(input_ids=batch, labels=batch).loss))
    return sum(losses) / len(losses)


@interrupts.with_phases
def run_portable(config: Config, device: Any, echo: Callable[[str], None] = print, progress: bool = True,
                 steps: Optional[llm.LlamaStepPlan] = None) -> Run:
    """Train the portable LLaMA as ``config`` says (None values: :data:`~.spec.PORTABLE_DEFAULTS`).

    ``steps``: the preset, precision and checkpointing the plan chose for the device (default: the
    config's preset, ``precision`` resolved here, no checkpointing). The run records them, and on
    CUDA its peak memory, model TFLOP/s and MFU against the GPU's named bf16 peak.

    Phases (:mod:`labkit.interrupts`): setup, training, validation; an interrupt after the first step
    keeps the steps trained (and no validation loss when it came before the validation's end)."""
    import torch

    values = effective(config, "portable")
    device = torch.device(device) if isinstance(device, str) else device
    if steps is None:
        precision = accelerator.resolve_precision(config.precision, accelerator.describe(device))
        steps = llm.LlamaStepPlan(values["model_size"], precision, False, float("nan"), "not measured")
    values["model_size"] = steps.model_size
    setup_start = time.perf_counter()
    corpus = llm.load_corpus(config.corpus)
    tokenizer = llm.corpus_tokenizer(corpus, VOCAB_SIZE)
    train_ids = llm.encode_text(tokenizer, corpus.train)
    on_gpu = device.type == "cuda"
    memory = accelerator.describe(device).memory_bytes if on_gpu else None
    model = llm.build_model(values["model_size"], vocab_size=len(tokenizer), max_seq_length=values["sequence_length"],
                            seed=values["seed"], memory_bytes=memory, device=device if on_gpu else None)
    batches = llm.token_batches(train_ids, values["batch_size"], values["sequence_length"], seed=values["seed"])
    setup_s = time.perf_counter() - setup_start
    parameters = llm.count_parameters(model)
    label = getattr(device, "type", str(device)).upper()
    lines: List[str] = []
    echo("{} INFO:   labkit portable LLaMA ({} preset, {:.1f}M parameters) on {}: batch size {} samples of {} tokens, "
         "{} steps, corpus {!r} ({:,} training tokens)".format(
             _stamp(), values["model_size"], parameters / 1e6, device, values["batch_size"], values["sequence_length"],
             values["steps"], corpus.name, len(train_ids)))
    pbar = bar(total=values["steps"], desc="batch {}".format(values["batch_size"]), unit="step") if progress else None
    above = echo_above(pbar, echo) if pbar is not None else echo

    def on_log(report: llm.Report) -> None:
        per_step = report.elapsed / report.step
        lines.append(train_line(label, report.step, report.loss, report.rate, report.global_rate,
                                per_step * (values["steps"] - report.step)))
        above(lines[-1])

    trained: dict = {}
    # from here the first interrupt ends training at a step (llm.train checks stop) and is kept
    stop = interrupts.keep(lambda: _record(config, values, device, trained["result"], setup_s, float("nan"),
                                           parameters, corpus) if trained.get("result") and trained["result"].losses
                           else None)
    stop.phase("training", check=False)
    try:
        result = llm.train(model, batches, values["steps"], values["log_steps"], device,
                           learning_rate=values["learning_rate"], on_log=on_log, progress=pbar, stop=stop,
                           precision=steps.precision, checkpointing=steps.checkpointing)
    finally:
        if pbar is not None:
            pbar.close()
    trained["result"] = result
    stop.phase("validation", check=False)  # its lines below say what was trained
    if result.interrupted:
        echo(result.interrupted)
    elif len(result.losses) == values["steps"]:
        echo("{} INFO:   Training completed successfully!".format(_stamp()))
    echo(processed_line(result.total_samples, result.total_time))
    validation_ids = llm.encode_text(tokenizer, corpus.validation)
    with steps.precision.autocast(device):
        validation = _validation_loss(model, validation_ids, min(values["batch_size"], 8), values["sequence_length"],
                                      values["seed"], device, stop) if result.losses else float("nan")
    return _record(config, values, device, result, setup_s, validation, parameters, corpus)


def _record(config: Config, values: dict, device: Any, result: Any, setup_s: float, validation: float,
            parameters: int, corpus: Any) -> Run:
    run = Run(exercise=EXERCISE, source="portable", params=config.to_dict())
    run.params.update(values)
    run.params["device"] = str(device)
    run.params["precision"] = result.precision
    if result.interrupted:
        run.mark_interrupted(result.interrupted, "its metrics cover only the steps before the interrupt.")
    elif loss_divergence(result.losses):
        run.status = "diverged"
        run.notes.append(divergence_note(result.losses, where="step", advice="Lower learning_rate."))
    logs = result.logs
    if logs:
        METRICS.add(run, "global_rate", round(logs[-1].global_rate, 3))
        METRICS.add(run, "last_rate", round(logs[-1].rate, 3))
        METRICS.add(run, "min_rate", round(min(r.rate for r in logs), 3))
        METRICS.add(run, "max_rate", round(max(r.rate for r in logs), 3))
        METRICS.add(run, "final_loss", round(logs[-1].loss, 5))
        METRICS.add(run, "steps", logs[-1].step)
        add_tokens_per_s(run, values["sequence_length"])
    elif result.losses:  # interrupted before the first report: the steps it made still count
        METRICS.add(run, "final_loss", round(result.losses[-1], 5))
        METRICS.add(run, "steps", len(result.losses))
    METRICS.add(run, "samples", result.total_samples)
    METRICS.add(run, "train_seconds", round(result.total_time, 4))
    if result.total_time > 0:
        METRICS.add(run, "samples_per_s", round(result.total_samples / result.total_time, 3))
    METRICS.add(run, "first_step_s", round(result.first_step_s, 4))
    if result.steady_seconds > 0:
        METRICS.add(run, "steady_rate", round(result.steady_rate, 3))
    METRICS.add(run, "build_s", round(setup_s, 4))
    if validation == validation:  # not NaN
        METRICS.add(run, "validation_loss", round(validation, 5))
    METRICS.add(run, "parameters", parameters)
    run.add_series("loss", list(range(1, len(result.losses) + 1)), result.losses)
    run.add_series("rate", [r.step for r in logs], [r.rate for r in logs])
    run.add_series("global_rate", [r.step for r in logs], [r.global_rate for r in logs])
    how = {"micro_batch": values["batch_size"], "accumulation": 1, "launch": "eager",
           "checkpointing": result.checkpointing}
    if result.peak_memory_bytes is not None:
        how["peak_memory_bytes"] = result.peak_memory_bytes
    run.environment = devices.environment(device, dict(how, parameters=parameters, corpus=corpus.name,
                                                       corpus_fingerprint=corpus.fingerprint))
    if result.peak_memory_bytes is not None:
        _add_gpu_metrics(run, result, values, device, parameters)
    shapes = ("LLaMA-2-7B's layers, its 32,000-token vocabulary cut to the tokenizer's" if values["model_size"] == "7b"
              else "LLaMA-2's architecture, not its 7 billion parameters")
    # a CPU's fp32 is what it always did: its note reads as before
    precision = "" if device.type == "cpu" and result.precision == "fp32" else ", precision " + result.precision
    run.notes.append(
        "Portable run: a {}-parameter LLaMA ({} preset, {}) on {}, trained on {!r} text with a {}-token tokenizer{}; "
        "not the CS-3. Rate and GlobalRate follow the modelzoo's definitions.".format(
            _millions(parameters), values["model_size"], shapes, device, corpus.name, VOCAB_SIZE, precision))
    if precision:
        run.notes.append("The CS-3 trains in {}.".format(accelerator.TESTBED_PRECISION["cs3"]))
    if result.losses:
        run.notes.append(
            "The first step took {:.2f} s (memory allocation, kernel choice; the portable warm-up, not a compile): it "
            "counts in GlobalRate as the CS-3's first steps do. Building the tokenizer and model ({:.1f} s) does not; "
            "nothing here stands for the CS-3's compile, appliance staging or checkpoint save.".format(
                result.first_step_s, setup_s))
    return run


def _add_gpu_metrics(run: Run, result: Any, values: dict, device: Any, parameters: int) -> None:
    """Peak memory, model TFLOP/s and MFU (against the GPU's named bf16 peak) of a CUDA run, from its
    steady rate: GlobalRate counts the first step's allocation and kernel choice."""
    METRICS.add(run, "peak_memory_gb", round(result.peak_memory_bytes / 1e9, 2))
    if "steady_rate" not in run.metrics:  # one step: nothing after the warm-up to measure
        return
    tokens = run.metrics["steady_rate"] * values["sequence_length"]
    preset = llm.MODEL_SIZES[values["model_size"]]
    flops = tokens * (6.0 * parameters + 12.0 * preset["num_hidden_layers"] * preset["hidden_size"]
                      * values["sequence_length"])
    figures, note = accelerator.utilisation(flops, accelerator.describe(device))
    for name, value in figures.items():
        METRICS.add(run, name, value)
    if note:
        run.notes.append(note)


def _millions(count: int) -> str:
    return "{:.1f}M".format(count / 1e6) if count < 1e9 else "{:.1f}B".format(count / 1e9)
